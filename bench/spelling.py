"""What spelling costs a search: hybrid latency with and without it, on the same open index.

    python -m bench.spelling [SET ...] [--out bench/results/spelling.json]

Each judged set's cached index (bench.eval's) is opened once; every question is searched as
mdrag's default search (hybrid, top 10, threshold 0.7) twice, once with the keyword search's
corrections (mdrag/spelling.py) and once without, in alternating order so that neither way
runs on a warmer cache; the wall time of `Service.search` is the figure (no socket, no process
start: what the daemon adds is the same either way). Five searches warm the index first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench import eval as ev
from bench.judged_data import judged_set
from mdrag.log import configure_logging
from mdrag.milvus import keywords
from mdrag.params.search import SearchParams

WITH = keywords.KeywordIndex.__dict__["_corrections"]


def _none(text: str, searcher: Any) -> list[str]:
    return []


WITHOUT = staticmethod(_none)


def measure(name: str) -> dict[str, Any]:
    judged = judged_set(name)
    service, _, _ = ev.open_set(judged, ev.config_for(None))
    times: dict[str, list[float]] = {"with": [], "without": []}
    try:

        def search(query: str) -> float:
            started = time.perf_counter()
            service.search(SearchParams.parse({"query": query}, service.search_defaults()))
            return (time.perf_counter() - started) * 1000

        queries = list(judged.queries.values())
        for query in queries[:5]:
            search(query)
        for i, query in enumerate(queries):
            for way in ("with", "without") if i % 2 else ("without", "with"):
                keywords.KeywordIndex._corrections = WITH if way == "with" else WITHOUT  # type: ignore[method-assign]
                times[way].append(search(query))
    finally:
        keywords.KeywordIndex._corrections = WITH  # type: ignore[method-assign]
        service.close()
    return {
        way: {
            "p50_ms": round(statistics.median(xs), 2),
            "p90_ms": round(sorted(xs)[int(len(xs) * 0.9)], 2),
            "searches": len(xs),
        }
        for way, xs in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="*", default=["scifact", "powershell", "tldr"])
    parser.add_argument("--out", type=Path, default=Path("bench/results/spelling.json"))
    args = parser.parse_args()
    configure_logging("WARNING")
    sets = {name: measure(name) for name in args.sets}
    result = {"date": time.strftime("%Y-%m-%d"), "sets": sets}
    for name, ways in sets.items():
        for way, figure in ways.items():
            print(f"{name} {way} spelling: p50 {figure['p50_ms']} ms, p90 {figure['p90_ms']} ms")
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""What reading the candidates' description vectors adds to a search, on an eval vault's index.

    python -m bench.described [--set VAULT ...] [--queries 200] [--passes 3]

Opens the vault's cached index (bench/corpora.py: `make eval` builds it), then asks each of the
vault's questions through Service.search, the daemon's default search (hybrid, top 10, threshold
0.7), once as shipped and once with the description read switched off (its evidence then 0), in
turns so both see the same machine. Reports each way's p50 and p95 over the median pass, and the
lookup alone (Store.description_vectors for a search's candidates' notes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from bench import corpora, harness
from bench.judged_data import judged_set
from bench.metrics import percentile


def timed(service: Any, query: str) -> float:
    started = time.perf_counter()
    service.search({"query": query})
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", help="vault (repeatable; default: powershell, hugo, tldr)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    from mdrag.config import Config
    from mdrag.retrieval import relevance

    result: dict[str, Any] = {"machine": harness.machine(), "sets": []}
    for name in args.set or ("powershell", "hugo", "tldr"):
        result["sets"].append(measured(name, args.queries, args.passes, Config()))
        print(json.dumps(result["sets"][-1]), flush=True)
    result["weighed"] = relevance.weighs("description", "hybrid")
    harness.save("described", result)


def measured(name: str, count: int, passes: int, config: Any) -> dict[str, Any]:
    """One vault's figures: each way's p50 and p95 over its median pass, and the lookup alone."""
    from mdrag.retrieval import search

    judged = judged_set(name)
    service, _, facts = corpora.open_indexed(judged.corpus, config)
    queries = list(judged.queries.values())[:count]
    shipped = search.attach_descriptions
    ways: dict[str, list[list[float]]] = {"shipped": [], "without": []}
    try:
        for _ in range(passes):
            runs: dict[str, list[float]] = {way: [] for way in ways}
            for query in queries:
                for way in ways:  # in turns: both ways see the same machine
                    search.attach_descriptions = shipped if way == "shipped" else (lambda *_: None)
                    runs[way].append(timed(service, query))
            for way, times in runs.items():
                ways[way].append(times)
        search.attach_descriptions = shipped
        lookups = []
        for query in queries:
            found = service.search({"query": query, "threshold": 0.0, "top_k": 20})["results"]
            paths = sorted({hit["file_path"] for hit in found})
            started = time.perf_counter()
            service.store.description_vectors(paths)
            lookups.append((time.perf_counter() - started) * 1000)
    finally:
        search.attach_descriptions = shipped
        service.close()
    out: dict[str, Any] = {"set": name, "notes": facts.get("notes"), "queries": len(queries)}
    for way, runs_of in ways.items():
        median = sorted(runs_of, key=statistics.median)[len(runs_of) // 2]
        out[way] = {"p50_ms": round(percentile(median, 50), 2), "p95_ms": round(percentile(median, 95), 2)}
    out["lookup_p50_ms"] = round(percentile(lookups, 50), 2)
    return out


def summary(result: dict[str, Any]) -> str:
    """One line a vault: a search's p50 with the read and without it, and the lookup alone."""
    return "\n".join(
        f"{s['set']} ({s['notes']} notes, {s['queries']} questions, in-process): search p50 "
        f"{s['shipped']['p50_ms']} ms with the read, {s['without']['p50_ms']} ms without "
        f"(p95 {s['shipped']['p95_ms']} / {s['without']['p95_ms']}); "
        f"the lookup alone p50 {s['lookup_p50_ms']} ms"
        for s in result["sets"]
    )


if __name__ == "__main__":
    main()

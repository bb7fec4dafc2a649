"""Freshness: through a running `mdrag serve`, seconds from a note's write to a search returning it.

    python -m bench.freshness [--files N] [--work DIR] [--edits 20]

Each edit appends a short section (a heading and a paragraph with a unique marker word) to a
different note (spread over the corpus), then searches for that paragraph through the socket
every 20 ms (hybrid, top 10, threshold 0) until a hit's section text holds the marker. The daemon runs
with its default debounce (watch.debounce_ms, 500 ms).
"""

from __future__ import annotations

import argparse
import time
import uuid
from pathlib import Path
from typing import Any

from bench import harness
from bench.metrics import percentile
from bench.session import Daemon, poll


def edit_targets(notes: Path, edits: int) -> list[Path]:
    files = sorted(notes.rglob("*.md"))
    return [files[(i * len(files)) // edits + len(files) // (2 * edits)] for i in range(edits)]


def measure(daemon: Daemon, edits: int = 20) -> dict[str, Any]:
    seconds = []
    for i, path in enumerate(edit_targets(daemon.work.notes, edits)):
        marker = f"zq{uuid.uuid4().hex[:10]}"
        paragraph = f"Freshness probe {i}: the {marker} setting keeps remote sessions alive over slow links."

        def found(marker: str = marker, paragraph: str = paragraph) -> bool:
            hits = daemon.search(paragraph, top_k=10, threshold=0.0)["results"]
            return any(marker in hit["section_text"] for hit in hits)

        written = time.perf_counter()
        with path.open("a", encoding="utf-8") as handle:
            # Its own section, so the hit's section_text (clipped for long sections) shows it whole.
            handle.write(f"\n\n## Freshness probe {i}\n\n{paragraph}\n")
        poll(found, timeout=120)
        seconds.append(time.perf_counter() - written)
        time.sleep(0.2)  # the next edit starts from a quiet daemon
    return {
        "edits": edits,
        "debounce_ms": 500,
        "seconds": [round(s, 3) for s in seconds],
        "p50_s": round(percentile(seconds, 50), 3),
        "p95_s": round(percentile(seconds, 95), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
    }


def summary(result: dict[str, Any]) -> str:
    return (
        f"freshness: {result['edits']} edits, write to searchable p50 {result['p50_s']}s, "
        f"p95 {result['p95_s']}s (min {result['min_s']}s, max {result['max_s']}s; debounce 500 ms)"
    )


def main() -> None:
    cli = harness.parser(__doc__)
    cli.add_argument("--edits", type=int, default=20)

    def run(work: harness.Work, args: argparse.Namespace) -> dict[str, Any]:
        with Daemon(work) as daemon:
            return measure(daemon, args.edits)

    harness.figure_main("freshness", cli, run, summary)


if __name__ == "__main__":
    main()

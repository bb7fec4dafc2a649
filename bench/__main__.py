"""Every benchmark figure in one run (`make bench`): cold index, no-op rescan, freshness, queries,
memory (also after a daemon's first index), the search page in a browser (bench.ui), searches while
indexing, the quality gate, and (--peer) memsearch side by side.

    python -m bench [--files N] [--work DIR] [--ceiling-sample N] [--backend-texts N] [--queries 200]
                    [--sections 100000] [--first-serve 300] [--burst 400] [--no-quality]
                    [--peer [--peer-venv DIR]]

One work dir (the corpus extracted, its own Milvus Lite index and socket) serves every figure in
turn; each prints as it is measured. After the cold index, a sample of its texts is encoded by
each model back-end (torch, onnx, onnx-int8) for their speed ratio. Searches while indexing
(bench.busy) use a work dir of their own: 300 notes and a burst of --burst new ones; so does a
daemon's memory once it has built its first index (bench.first_serve, --first-serve notes). The quality
gate (bench.quality) runs last: nDCG@10 and answered/silent of the default back-end and mode on
SciFact and the natural questions, from `make eval`'s cached indexes. With --peer,
memsearch indexes and searches the same notes after the rescan (bench.peer: its own venv, minutes),
against mdrag's cold index and rescan of this run. Writes bench/results/bench.json, then
docs/benchmarks.md from it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench import (
    backends,
    busy,
    cold,
    first_serve,
    freshness,
    harness,
    memory,
    peer,
    quality,
    query,
    report,
    report_speed,
    rescan,
    ui,
)
from bench.session import Daemon


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    work = harness.prepare(args.work, args.files)
    result: dict[str, Any] = {"corpus": str(harness.CORPUS), "files_requested": args.files or "all"}
    try:
        result["cold"] = cold.measure(work, args.ceiling_sample)
        print(cold.summary(result["cold"]), flush=True)
        if args.backend_texts:
            result["backends"] = backends.measure(backends.sample(work, args.backend_texts))
            print(backends.summary(result["backends"]), flush=True)
        result["rescan"] = rescan.measure(work)
        print(rescan.summary(result["rescan"]), flush=True)
        if args.peer:  # before the daemon: its searches and re-indexes open the index themselves
            result["peer"] = peer.measure(work, result["cold"], result["rescan"], venv=args.peer_venv)
            print(peer.summary(result["peer"]), flush=True)
        with Daemon(work) as daemon:
            result["memory"] = memory.measure(daemon)
            print(memory.summary(result["memory"]), flush=True)
            result["freshness"] = freshness.measure(daemon)
            print(freshness.summary(result["freshness"]), flush=True)
            try:
                result["query"] = query.measure(daemon, args.queries, args.sections)
                print(query.summary(result["query"]), flush=True)
            finally:
                query.shrink(daemon)
        if args.ui_queries:
            result["ui"] = ui.measure(work, args.ui_queries)
            print(ui.summary(result["ui"]), flush=True)
        if args.first_serve:
            result["first_serve"] = first_serve.run(None, args.first_serve)
            print(first_serve.summary(result["first_serve"]), flush=True)
        if args.burst:
            result["busy"] = busy.run(None, busy.FILES, args.burst, socket=True, spinners=0)
            print(busy.summary(result["busy"]), flush=True)
        if args.quality:
            try:
                result["quality"] = quality.measure()
                print(quality.summary(result["quality"]), flush=True)
            except Exception as exc:  # noqa: BLE001 - the last stage must not lose the figures before it
                result["quality"] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"quality gate failed: {result['quality']['error']}", flush=True)
    finally:
        harness.cleanup(work, keep=args.work is not None)
    return result


def main() -> None:
    parser = harness.parser(__doc__)
    cold.add_ceiling_sample(parser)
    parser.add_argument(
        "--backend-texts",
        type=int,
        default=1500,
        help="texts for the back-end encode comparison (0: skip it)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sections", type=int, default=100_000)
    parser.add_argument(
        "--first-serve",
        type=int,
        default=first_serve.FILES,
        help="notes for bench.first_serve, a daemon's memory after its first index (0: skip it)",
    )
    parser.add_argument("--burst", type=int, default=400, help="new notes for bench.busy (0: skip it)")
    parser.add_argument(
        "--ui-queries", type=int, default=40, help="queries typed into the page, bench.ui (0: skip it)"
    )
    parser.add_argument(
        "--no-quality",
        dest="quality",
        action="store_false",
        help="skip the quality gate (nDCG@10 and answerability of the default back-end)",
    )
    peer.add_options(parser, flag=True)
    args = parser.parse_args()
    result = run_all(args)
    path = harness.save("bench", result)
    print(report_speed.speed_table(json.loads(path.read_text())))  # as saved: with the machine
    print(f"written to {path} and {report.write()}")


if __name__ == "__main__":
    main()

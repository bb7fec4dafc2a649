"""Every benchmark figure in one run (`make bench`): cold index, no-op rescan, freshness, queries, memory.

    python -m bench [--files N] [--work DIR] [--ceiling-sample N] [--backend-texts N] [--queries 200]
                    [--sections 100000]

One work dir (the corpus extracted, its own Milvus Lite index and socket) serves every figure in
turn; each prints as it is measured. After the cold index, a sample of its texts is encoded by
each model back-end (torch, onnx, onnx-int8) for their speed ratio. Writes
bench/results/bench.json and bench/results/bench.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench import backends, cold, freshness, harness, memory, query, rescan
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
    finally:
        harness.cleanup(work, keep=args.work is not None)
    return result


def targets(r: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(figure, measured, target, met) for each acceptance target of the performance issue."""
    q = r["query"]["scaled"]
    p50_rows = [
        (
            f"socket query p50 at {r['query'][name]['sections']:,} sections{state}",
            f"{r['query'][name]['p50_ms']:.1f} ms",
            "≤ 30 ms",
            r["query"][name]["p50_ms"] <= 30,
        )
        for name, state in query.STATES[1:]
    ]
    return [
        (
            "cold index efficiency (pipeline / encode ceiling)",
            f"{r['cold']['efficiency']:.2f}",
            "≥ 0.85",
            r["cold"]["efficiency"] >= 0.85,
        ),
        (
            "no-op rescan, whole process",
            f"{r['rescan']['wall_s']['median']:.2f} s",
            "≤ 3 s",
            r["rescan"]["wall_s"]["median"] <= 3,
        ),
        ("freshness p50", f"{r['freshness']['p50_s']:.2f} s", "≤ 1.5 s", r["freshness"]["p50_s"] <= 1.5),
        *p50_rows,
        (
            f"socket query p99 at {q['sections']:,} sections",
            f"{q['p99_ms']:.1f} ms",
            "≤ 100 ms",
            q["p99_ms"] <= 100,
        ),
        (
            "whole `mdrag search` process",
            f"{q['process']['wall_ms']['median']:.0f} ms",
            "≤ 300 ms",
            q["process"]["wall_ms"]["median"] <= 300,
        ),
        (
            "daemon idle RSS after indexing",
            f"{r['memory']['idle_after_indexing_and_search_mb']:.0f} MB",
            "≤ 700 MB",
            r["memory"]["idle_after_indexing_and_search_mb"] <= 700,
        ),
    ]


def markdown(r: dict[str, Any]) -> str:
    m, c, s, f = harness.machine(), r["cold"], r["rescan"], r["freshness"]
    rows = [
        (
            "cold index (`mdrag reindex`)",
            f"{c['files']} files, {c['megabytes']} MB: {c['indexing_s']} s indexing, {c['wall_s']} s wall; "
            f"{c['files_per_s']} files/s, {c['sections_per_s']} sections/s "
            f"({c['report']['sections_embedded']} embedded, {c['report']['sections_reused']} reused), "
            f"{c['mb_per_s']} MB/s",
        ),
        (
            "encode ceiling (same texts, plain loop)",
            f"{c['ceiling']['texts_per_s']} texts/s vs pipeline {c['texts_per_s']}: "
            f"efficiency {c['efficiency']}",
        ),
        ("peak RSS, cold index", f"{c['peak_rss_mb']} MB"),
        (
            "no-op rescan (whole process / indexing part)",
            f"{s['wall_s']['median']} s ({s['wall_s']['min']}–{s['wall_s']['max']}) / "
            f"{s['indexing_s']['median']} s ({s['indexing_s']['min']}–{s['indexing_s']['max']})",
        ),
        (
            "freshness, write → searchable (20 edits)",
            f"p50 {f['p50_s']} s, p95 {f['p95_s']} s ({f['min_s']}–{f['max_s']})",
        ),
    ]
    for name, state in query.STATES:
        q = r["query"][name]
        rows.append(
            (
                f"socket query, {q['sections']:,} sections{state} ({q['queries']} queries, median of "
                f"{q['rounds']} passes)",
                f"p50 {q['p50_ms']} ms ({q['p50_range_ms'][0]}–{q['p50_range_ms'][1]}), "
                f"p99 {q['p99_ms']} ms ({q['p99_range_ms'][0]}–{q['p99_range_ms'][1]})",
            )
        )
        rows.append(
            (
                f"whole `mdrag search` process, {q['sections']:,} sections{state}",
                f"{q['process']['wall_ms']['median']:.0f} ms "
                f"({q['process']['wall_ms']['min']:.0f}–{q['process']['wall_ms']['max']:.0f})",
            )
        )
    rows.append(
        (
            "daemon RSS idle (after start / after indexing + searching)",
            f"{r['memory']['idle_after_start_mb']:.0f} MB / "
            f"{r['memory']['idle_after_indexing_and_search_mb']:.0f} MB",
        )
    )
    lines = [
        f"Measured {m['date']} on {m['cores']} cores, {m['memory_gib']} GiB.",
        "",
        "| what | figure |",
        "| --- | --- |",
    ]
    lines += [f"| {a} | {b} |" for a, b in rows]
    if "backends" in r:
        for name, b in r["backends"]["backends"].items():
            lines.append(
                f"| encode speed, {name} ({r['backends']['texts']} texts) | {b['texts_per_s']} texts/s, "
                f"x{b['speedup_vs_torch']} torch; cosine to torch {b['cosine_to_torch']['mean']} |"
            )
    lines += ["", "| target | measured | goal | met |", "| --- | --- | --- | --- |"]
    lines += [f"| {a} | {b} | {g} | {'yes' if ok else 'no'} |" for a, b, g, ok in targets(r)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=0, help="only N files of the corpus (0: all)")
    parser.add_argument("--work", type=Path, help="work dir to keep (default: a temporary one)")
    parser.add_argument(
        "--ceiling-sample",
        type=int,
        default=0,
        help="encode N of the embedded texts for the ceiling (0: all of them)",
    )
    parser.add_argument(
        "--backend-texts",
        type=int,
        default=1500,
        help="texts for the back-end encode comparison (0: skip it)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sections", type=int, default=100_000)
    args = parser.parse_args()
    result = run_all(args)
    path = harness.save("bench", result)
    table = markdown(result)
    (harness.RESULTS / "bench.md").write_text(table + "\n")
    print(table)
    print(f"written to {path} and {harness.RESULTS / 'bench.md'}")


if __name__ == "__main__":
    main()

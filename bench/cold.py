"""Cold index: a real `mdrag reindex` process over the corpus, against the model's encode ceiling.

    python -m bench.cold [--files N] [--work DIR] [--ceiling-sample N]

The pipeline is measured as a separate `mdrag reindex --json` process with its own Milvus Lite
database (wall time and peak RSS from the kernel). The ceiling then encodes exactly the texts
the pipeline embedded (read back from the index: one per distinct section window) with the
same model and settings, in a plain loop in this process. Efficiency = ceiling time / the
pipeline's indexing time (both without the model load, which the wall time includes).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from bench import harness


def embedded_texts(db: Path) -> list[str]:
    """The texts the pipeline embedded: one per distinct (section_id, window) in the index.

    Identical sections (the corpus repeats across versions) are embedded once and reused, so the
    distinct windows are exactly what went through the model on a cold run. Read from the
    keyword index, which keeps each vector row's text (Milvus keeps none).
    """
    from mdrag.milvus.keywords import KeywordIndex

    texts: dict[tuple[str, int], str] = {}
    for row in KeywordIndex(db.with_suffix(".keywords")).every_row():
        display = row["display"]
        texts.setdefault((display["section_id"], int(display["window_index"])), row["embedded_text"])
    return list(texts.values())


def ceiling(texts: list[str], config_path: Path, repeat: int = 1, backend: str = "") -> dict[str, Any]:
    """Encode `texts` with the configured model and batch size: nothing but the model, in a loop."""
    from mdrag.config import load_config
    from mdrag.embedding.embedder import Embedder

    config = load_config(config_path)
    embedder = Embedder(
        config.embedding_model,
        config.embedding_device,
        config.embedding_batch_size,
        backend or config.embedding_backend,
    )
    embedder.embed(texts[:64])  # warm-up: first-call allocations are not the model's pace
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        embedder.embed(texts)
        seconds.append(time.perf_counter() - started)
    return {
        "texts": len(texts),
        "seconds": harness.spread(seconds, 2),
        "model": embedder.model_id,
        "backend": embedder.backend,
    }


def measure(work: harness.Work, ceiling_sample: int = 0, ceiling_repeat: int = 1) -> dict[str, Any]:
    files, size = harness.corpus_size(work.notes)
    report, finished = harness.reindex(work)
    indexing = report["seconds"]
    sections = report["sections_embedded"] + report["sections_reused"]
    texts = embedded_texts(work.db)
    encoded = texts
    if ceiling_sample and ceiling_sample < len(texts):
        encoded = random.Random(7).sample(texts, ceiling_sample)
    limit = ceiling(encoded, work.root / "config.yaml", ceiling_repeat, work.backend)
    # Scale a sampled ceiling to all the texts the pipeline embedded (the rate, texts/s, is what holds).
    ceiling_s = limit["seconds"]["median"] * len(texts) / max(len(encoded), 1)
    return {
        "command": "mdrag reindex --json (a separate process, its own Milvus Lite db)",
        "files": files,
        "megabytes": round(size / 1e6, 2),
        "report": report,
        "wall_s": round(finished.wall_s, 1),
        "indexing_s": round(indexing, 1),
        "startup_s": round(finished.wall_s - indexing, 1),
        "peak_rss_mb": round(finished.peak_rss_mb),
        "peak_rss_with_milvus_mb": round(finished.peak_tree_rss_mb),
        "files_per_s": round(files / indexing, 2),
        "sections_per_s": round(sections / indexing, 2),
        "sections_embedded_per_s": round(report["sections_embedded"] / indexing, 2),
        "texts_embedded": len(texts),
        "texts_per_s": round(len(texts) / indexing, 2),
        "mb_per_s": round(size / 1e6 / indexing, 3),
        "ceiling": {
            **limit,
            "sampled_from": len(texts),
            "texts_per_s": round(len(texts) / ceiling_s, 2),
            "seconds_for_all_texts": round(ceiling_s, 1),
        },
        "efficiency": round(ceiling_s / indexing, 3),
        "efficiency_wall": round(ceiling_s / finished.wall_s, 3),
    }


def summary(result: dict[str, Any]) -> str:
    r, c = result, result["ceiling"]
    return (
        f"cold index: {r['files']} files ({r['megabytes']} MB) in {r['indexing_s']}s of indexing, "
        f"{r['wall_s']}s wall; {r['files_per_s']} files/s, {r['sections_per_s']} sections/s "
        f"({r['report']['sections_embedded']} embedded, {r['report']['sections_reused']} reused), "
        f"{r['mb_per_s']} MB/s, peak RSS {r['peak_rss_mb']} MB "
        f"({r['peak_rss_with_milvus_mb']} MB with Milvus Lite)\n"
        f"encode ceiling: {c['texts']} texts in {c['seconds']['median']}s ({c['texts_per_s']} texts/s); "
        f"pipeline {r['texts_per_s']} texts/s; efficiency {r['efficiency']} "
        f"(whole process incl. start-up: {r['efficiency_wall']})"
    )


def add_ceiling_sample(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ceiling-sample",
        type=int,
        default=0,
        help="encode only N of the embedded texts for the ceiling (0: all)",
    )


def main() -> None:
    parser = harness.parser(__doc__)
    add_ceiling_sample(parser)
    parser.add_argument("--ceiling-repeat", type=int, default=1)
    parser.add_argument(
        "--backends",
        nargs="+",
        default=[""],
        help="one cold index per embedding.backend, in this run (default: as configured)",
    )
    args = parser.parse_args()
    results = {}
    for backend in args.backends:
        base = harness.prepare(args.work / (backend or "default") if args.work else None, args.files)
        work = harness.Work(base.root, backend)
        try:
            results[backend or "configured"] = result = measure(
                work, args.ceiling_sample, args.ceiling_repeat
            )
        finally:
            harness.cleanup(work, keep=args.work is not None)
        print(f"[{result['ceiling']['backend']}] {summary(result)}", flush=True)
    if len(results) > 1:
        first = next(iter(results.values()))
        for name, result in results.items():
            result["speedup_vs_first"] = round(first["indexing_s"] / result["indexing_s"], 2)
            print(f"{name}: cold index {result['indexing_s']}s, x{result['speedup_vs_first']} vs the first")
    out = results if len(results) > 1 else next(iter(results.values()))
    print(f"written to {harness.save('cold', out)}")


if __name__ == "__main__":
    main()

"""Retrieval evaluation on BEIR-format judged notes (default: SciFact test) through mdrag's real path.

    python -m bench.eval [--notes TAR_OR_DIR] [--queries JSONL] [--qrels TSV] [--out JSON]

Indexes the notes with mdrag's indexer into a fresh temporary Milvus Lite store, runs every
query through Service.search (the code `mdrag search` and the daemon run) in each mode, and
scores the ranked notes (a note ranks at its best section) by their frontmatter `doc_id`.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.metrics import best_f1_threshold, mrr_at_k, ndcg_at_k, percentile, recall_at_k

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
MODES = ("dense", "keyword", "hybrid")
DEFAULT_THRESHOLD = 0.7
PUBLISHED = {
    "all-MiniLM-L6-v2 (MTEB)": {"ndcg@10": 0.645, "recall@100": 0.925},
    "BM25 (BEIR, multifield)": {"ndcg@10": 0.665, "recall@100": 0.908},
    "BM25 (Anserini, title+text)": {"ndcg@10": 0.679, "recall@100": 0.925},
}


def load_queries(path: Path) -> dict[str, str]:
    with path.open(encoding="utf-8") as handle:
        return {str(q["_id"]): q["text"] for q in map(json.loads, handle) if q.get("text")}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[str(row["query-id"])][str(row["corpus-id"])] = int(row["score"])
    return qrels


def unpack(notes: Path, into: Path) -> Path:
    if notes.is_dir():
        return notes
    with tarfile.open(notes) as archive:
        archive.extractall(into, filter="data")
    return into


def doc_ids(root: Path) -> dict[str, str]:
    """file path -> the note's frontmatter doc_id (BEIR corpus id)."""
    from mdrag.document import split_frontmatter

    ids = {}
    for path in root.rglob("*.md"):
        frontmatter = split_frontmatter(path.read_text(encoding="utf-8"))[0]
        if "doc_id" in frontmatter:
            ids[str(path.resolve())] = str(frontmatter["doc_id"])
    return ids


def ranked_docs(response: dict[str, Any], ids: dict[str, str]) -> list[tuple[str, float]]:
    """Distinct notes in rank order, each with its best section's confidence score."""
    seen: dict[str, float] = {}
    for hit in response["results"]:
        doc = ids.get(hit["file_path"])
        if doc is not None and doc not in seen:
            seen[doc] = hit["confidence_score"]
    return list(seen.items())


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from mdrag.config import Config
    from mdrag.service import Service

    queries = load_queries(args.queries)
    qrels = load_qrels(args.qrels)
    judged = [qid for qid in queries if qid in qrels][: args.limit or None]
    with tempfile.TemporaryDirectory(prefix="mdrag-eval-") as tmp:
        root = unpack(args.notes, Path(tmp) / "notes").resolve()
        ids = doc_ids(root)
        config = Config().with_overrides(
            roots=(str(root),),
            milvus_uri=str(Path(tmp) / "index" / "eval.db"),
            embedding_backend=args.backend,
        )
        service = Service(config)
        try:
            started = time.perf_counter()
            report = service.reindex()
            index_seconds = time.perf_counter() - started
            print(
                f"indexed {report.added} notes ({report.sections_embedded} sections) in {index_seconds:.1f}s",
                file=sys.stderr,
            )
            results: dict[str, Any] = {}
            for mode in args.modes:
                results[mode] = run_mode(service, mode, queries, qrels, judged, ids)
                print(f"{mode}: {json.dumps(results[mode]['metrics'])}", file=sys.stderr)
        finally:
            service.close()
    return {
        "dataset": str(args.notes),
        "queries": len(judged),
        "notes": len(ids),
        "index_seconds": round(index_seconds, 1),
        "sections_embedded": report.sections_embedded,
        "backend": service.embedder.backend,
        "modes": results,
        "published": PUBLISHED,
        "machine": {"cores": _cores(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d"),
    }


def run_mode(
    service: Any,
    mode: str,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    judged: list[str],
    ids: dict[str, str],
) -> dict[str, Any]:
    ndcg, recall, mrr, latencies = [], [], [], []
    scored: list[tuple[float, bool]] = []
    above_default = 0
    for qid in judged:
        started = time.perf_counter()
        response = service.search({"query": queries[qid], "top_k": 100, "threshold": 0.0, "mode": mode})
        latencies.append((time.perf_counter() - started) * 1000)
        docs = ranked_docs(response, ids)
        ranking = [doc for doc, _ in docs]
        relevant = qrels[qid]
        ndcg.append(ndcg_at_k(ranking, relevant, 10))
        recall.append(recall_at_k(ranking, relevant, 100))
        mrr.append(mrr_at_k(ranking, relevant, 10))
        scored.extend((score, relevant.get(doc, 0) > 0) for doc, score in docs[:10])
        best_relevant = max((score for doc, score in docs if relevant.get(doc, 0) > 0), default=0.0)
        above_default += best_relevant >= DEFAULT_THRESHOLD
    total_relevant = sum(1 for qid in judged for gain in qrels[qid].values() if gain > 0)
    threshold, f1 = best_f1_threshold(scored, total_relevant)
    count = len(judged)
    return {
        "metrics": {
            "ndcg@10": round(sum(ndcg) / count, 4),
            "recall@100": round(sum(recall) / count, 4),
            "mrr@10": round(sum(mrr) / count, 4),
            "latency_ms_p50": round(percentile(latencies, 50), 2),
            "latency_ms_p95": round(percentile(latencies, 95), 2),
        },
        "threshold": {
            "share_of_queries_with_a_relevant_note_at_or_above_0.7": round(above_default / count, 4),
            "best_f1_threshold": threshold,
            "best_f1": round(f1, 4),
        },
    }


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def table(result: dict[str, Any]) -> str:
    lines = [
        "| mode | nDCG@10 | Recall@100 | MRR@10 | p50 latency (ms) | p95 latency (ms) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for mode, data in result["modes"].items():
        m = data["metrics"]
        lines.append(
            f"| mdrag {mode} | {m['ndcg@10']:.3f} | {m['recall@100']:.3f} | {m['mrr@10']:.3f} | "
            f"{m['latency_ms_p50']:.1f} | {m['latency_ms_p95']:.1f} |"
        )
    for name, figures in result["published"].items():
        lines.append(
            f"| {name} (published) | {figures['ndcg@10']:.3f} | {figures['recall@100']:.3f} | – | – | – |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=Path, default=DATA / "notes.tar.gz", help="tar.gz or folder of notes")
    parser.add_argument(
        "--queries", type=Path, default=DATA / "queries.test.jsonl", help="BEIR queries JSONL"
    )
    parser.add_argument("--qrels", type=Path, default=DATA / "qrels.test.tsv", help="BEIR qrels TSV")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N judged queries")
    parser.add_argument(
        "--backend", choices=("torch", "onnx", "onnx-int8"), help="embedding.backend (default: torch)"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/eval.json"))
    args = parser.parse_args()
    from mdrag.log import configure_logging

    configure_logging("WARNING")
    result = evaluate(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(table(result))
    for mode, data in result["modes"].items():
        print(f"{mode} threshold: {json.dumps(data['threshold'])}")
    print(f"index: {result['notes']} notes in {result['index_seconds']}s; written to {args.out}")


if __name__ == "__main__":
    main()

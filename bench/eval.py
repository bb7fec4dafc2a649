"""Retrieval and answerability evaluation on judged notes through mdrag's real search path.

    python -m bench.eval [--sets scifact natural] [--modes ...] [--limit N] [--out JSON]

Each set's notes are indexed once with mdrag's indexer into a cached Milvus Lite store
(bench/corpora.py); every query then runs through the code `mdrag search` and the daemon run,
in each mode. Per mode and set: nDCG@10 and Recall@100 of the ranked notes (a note ranks at its
best section), and the answered / silent rates (bench/answerability.py) at the default
threshold, with the curve over thresholds. SciFact's unanswerable queries are its own queries
asked again with their relevant notes left out; the natural set and the vaults have their own.

The vaults (bench/data/vaults/NAME: powershell, eips, otel, tldr, hugo) are real documentation
folders each indexed as a notes vault of its own, with questions written as people ask them and
judged by reading. Each question is in the `train` split (what a fit may see) or the sealed
`test` split (reported, never fitted: all of otel and hugo, and a fixed quarter of the others);
every rate is given per split with its Wilson 95% interval.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench import corpora
from bench.answerability import DEPTH, rates_at
from bench.judged_data import (
    NATURAL,
    SETS,
    JudgedSet,
    doc_ids,
    judged_set,
)
from bench.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k, wilson

MODES = ("dense", "keyword", "hybrid", "rrf")  # rrf: the plain baseline of bench/baseline.py
BASELINES = {"rrf": "both", "rrf-share": "share", "rrf-idf": "idf"}  # baseline mode -> its title score
DEFAULT_THRESHOLD = 0.7
THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]
PUBLISHED = {
    "all-MiniLM-L6-v2 (MTEB)": {"ndcg@10": 0.645, "recall@100": 0.925},
    "BM25 (BEIR, multifield)": {"ndcg@10": 0.665, "recall@100": 0.908},
    "BM25 (Anserini, title+text)": {"ndcg@10": 0.679, "recall@100": 0.925},
}


def open_set(judged: JudgedSet, config: Any) -> tuple[Any, Path, dict[str, Any]]:
    return corpora.open_indexed(judged.corpus, config)


def ranked_docs(response: dict[str, Any], ids: dict[str, str]) -> list[tuple[str, float]]:
    """Distinct notes in rank order, each with its best section's confidence score."""
    seen: dict[str, float] = {}
    for hit in response["results"]:
        doc = ids.get(hit["file_path"])
        if doc is not None and doc not in seen:
            seen[doc] = hit["confidence_score"]
    return list(seen.items())


def add_backend(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend", choices=("torch", "onnx", "onnx-int8"), help="embedding.backend (default: the config's)"
    )


def config_for(backend: str | None) -> Any:
    """The default configuration, on `backend` when one is named."""
    from mdrag.config import Config

    return Config().with_overrides(embedding_backend=backend) if backend else Config()


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    config = config_for(args.backend)
    sets: dict[str, Any] = {}
    for name in args.sets:
        judged = judged_set(name, args.limit)
        started = time.perf_counter()
        service, root, facts = open_set(judged, config)
        facts["open_seconds"] = round(time.perf_counter() - started, 1)
        ids = doc_ids(root)
        try:
            results: dict[str, Any] = {}
            for mode in args.modes:
                asker = service
                if mode in BASELINES:
                    from bench.baseline import RRFBaseline

                    asker = _Asker(service, RRFBaseline(service, root, BASELINES[mode]))
                results[mode] = run_mode(asker, mode, judged, ids)
                summary = {**results[mode]["metrics"], **results[mode]["answerability"]}
                print(f"{name} {mode}: {json.dumps(summary)}", file=sys.stderr)
            backend = service.embedder.backend
        finally:
            service.close()
        sets[name] = {
            "queries": len(judged.queries),
            "answerable": sum(1 for q in judged.queries if _relevant(judged, q)),
            "notes": len(ids),
            "index": facts,
            "backend": backend,
            "modes": results,
        }
    return {
        "sets": sets,
        "default_threshold": DEFAULT_THRESHOLD,
        "published": PUBLISHED,
        "machine": {"cores": _cores(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d"),
    }


class _Asker:
    """The service, with the rrf baseline answering its searches (bench/baseline.py)."""

    def __init__(self, service: Any, baseline: Any) -> None:
        self.service, self.baseline = service, baseline

    def search(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.baseline.search(request)

    def search_defaults(self) -> Any:
        return self.service.search_defaults()


def _relevant(judged: JudgedSet, qid: str) -> set[str]:
    return {doc for doc, gain in judged.qrels.get(qid, {}).items() if gain > 0}


def run_mode(service: Any, mode: str, judged: JudgedSet, ids: dict[str, str]) -> dict[str, Any]:
    from mdrag.params.search import SearchParams

    ndcg, recall, mrr, latencies = [], [], [], []
    # Per question: (qid, answerable, its hits as (note, relevant, score) best first).
    asked: list[tuple[str, bool, list[tuple[str, int, float]]]] = []
    rank_in_100: dict[str, int | None] = {}  # per answerable question: its first right note's rank
    for qid, text in judged.queries.items():
        relevant = _relevant(judged, qid)
        if relevant:
            started = time.perf_counter()
            response = service.search({"query": text, "top_k": 100, "threshold": 0.0, "mode": mode})
            latencies.append((time.perf_counter() - started) * 1000)
            ranking = [doc for doc, _ in ranked_docs(response, ids)]
            rank_in_100[qid] = next((i for i, d in enumerate(ranking, start=1) if d in relevant), None)
            gains = judged.qrels[qid]
            ndcg.append(ndcg_at_k(ranking, gains, 10))
            recall.append(recall_at_k(ranking, gains, 100))
            mrr.append(mrr_at_k(ranking, gains, 10))
            # What a default search keeps is the prefix of these hits scoring >= the threshold.
            shown = service.search({"query": text, "top_k": DEPTH, "threshold": 0.0, "mode": mode})
            asked.append((qid, True, _scored(shown["results"], ids, relevant)))
        if relevant and judged.twins:
            gone = lambda path, gone=relevant: ids.get(path) in gone  # noqa: E731
            if mode in BASELINES:
                left = service.baseline.search({"query": text, "top_k": DEPTH}, gone)
                asked.append((qid, False, _scored(left["results"], ids, relevant)))
            else:
                params = SearchParams.parse(
                    {"query": text, "top_k": DEPTH, "threshold": 0.0, "mode": mode}, service.search_defaults()
                )
                found = service.searcher.search(params, leave_out=gone)
                asked.append((qid, False, _scored([h.to_dict() for h in found.results], ids, relevant)))
        elif not relevant:
            shown = service.search({"query": text, "top_k": DEPTH, "threshold": 0.0, "mode": mode})
            asked.append((qid, False, _scored(shown["results"], ids, relevant)))
    count = max(len(ndcg), 1)
    answerable = [hits for _, ok, hits in asked if ok]
    unanswerable = [hits for _, ok, hits in asked if not ok]
    result: dict[str, Any] = {
        "metrics": {
            "ndcg@10": round(sum(ndcg) / count, 4),
            "recall@100": round(sum(recall) / count, 4),
            "mrr@10": round(sum(mrr) / count, 4),
            "latency_ms_p50": round(percentile(latencies, 50), 2),
            "latency_ms_p95": round(percentile(latencies, 95), 2),
        },
        "answerability": rates_at(answerable, unanswerable, DEFAULT_THRESHOLD),
        "curve": {str(t): rates_at(answerable, unanswerable, t) for t in THRESHOLDS},
    }
    if mode in BASELINES:
        result["answerability_note"] = "rrf scores are no confidence: its answer rates mean nothing"
    result["questions"] = [
        {
            "qid": qid,
            "split": "test" if qid in judged.sealed else "train",
            "first_rank": _first_rank(hits),
            "rank_in_100": rank_in_100.get(qid),
            "top": _distinct(hits)[:5],
        }
        for qid, ok, hits in asked
        if ok
    ]
    if judged.sealed:
        result["splits"] = {
            split: split_figures([a for a in asked if (a[0] in judged.sealed) == (split == "test")])
            for split in ("train", "test")
        }
    return result


def split_figures(asked: list[tuple[str, bool, list[tuple[str, int, float]]]]) -> dict[str, Any]:
    """One split's rates at the default threshold, each with its count and Wilson 95% interval:
    answered, silent, a confident answer to an unanswerable question, a right note first / in the
    first three (at threshold 0, the ranking alone)."""
    answerable = [hits for _, ok, hits in asked if ok]
    unanswerable = [hits for _, ok, hits in asked if not ok]
    from bench.answerability import answered, silent

    def share(hits_of: list[list[tuple[str, int, float]]], test: Any) -> dict[str, Any]:
        n, k = len(hits_of), sum(1 for hits in hits_of if test(hits))
        return {"rate": round(k / n, 4) if n else None, "of": n, "ci95": wilson(k, n)}

    return {
        "answered": share(answerable, lambda h: answered(h, DEFAULT_THRESHOLD)),
        "silent": share(unanswerable, lambda h: silent(h, DEFAULT_THRESHOLD)),
        "confident_on_unanswerable": share(unanswerable, lambda h: not silent(h, DEFAULT_THRESHOLD)),
        "right_first": share(answerable, lambda h: bool(h) and _first_notes(h, 1)),
        "right_in_3": share(answerable, lambda h: _first_notes(h, 3)),
    }


def _distinct(hits: list[tuple[str, int, float]]) -> list[str]:
    return list(dict.fromkeys(doc for doc, _, _ in hits))


def _first_rank(hits: list[tuple[str, int, float]]) -> int | None:
    """The rank among distinct notes of the first relevant note in these hits (None: none)."""
    labels = {doc: label for doc, label, _ in reversed(hits)}
    return next((i for i, d in enumerate(_distinct(hits), start=1) if labels[d]), None)


def _first_notes(hits: list[tuple[str, int, float]], k: int) -> bool:
    """Whether a relevant note is among the first k distinct notes."""
    seen: list[tuple[str, int]] = []
    for doc, label, _ in hits:
        if all(doc != d for d, _ in seen):
            seen.append((doc, label))
    return any(label for _, label in seen[:k])


def _scored(
    hits: list[dict[str, Any]], ids: dict[str, str], relevant: set[str]
) -> list[tuple[str, int, float]]:
    out = []
    for hit in hits:
        doc = ids.get(hit["file_path"], hit["file_path"])
        out.append((doc, int(doc in relevant), float(hit["confidence_score"])))
    return out


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def table(result: dict[str, Any]) -> str:
    lines = [
        "| set | mode | nDCG@10 | Recall@100 | answered @0.7 | silent @0.7 | p50 latency (ms) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, data in result["sets"].items():
        for mode, figures in data["modes"].items():
            m, a = figures["metrics"], figures["answerability"]
            lines.append(
                f"| {name} | mdrag {mode} | {m['ndcg@10']:.3f} | {m['recall@100']:.3f} | "
                f"{rate(a['answered'])} | {rate(a['silent'])} | {m['latency_ms_p50']:.1f} |"
            )
    for name, figures in result["published"].items():
        lines.append(
            f"| scifact | {name} (published) | {figures['ndcg@10']:.3f} | {figures['recall@100']:.3f} "
            "| – | – | – |"
        )
    return "\n".join(lines)


def curve_table(result: dict[str, Any], name: str, mode: str) -> str:
    curve = result["sets"][name]["modes"][mode]["curve"]
    lines = [f"{name} {mode}: threshold answered silent"]
    lines += [f"  {t} {rate(r['answered'])} {rate(r['silent'])}" for t, r in curve.items()]
    return "\n".join(lines)


def split_line(rates: dict[str, Any]) -> str:
    """A split's rates in one line, each with its count and 95% interval."""
    parts = []
    for key, figure in rates.items():
        ci = figure["ci95"]
        interval = f" [{ci[0]:.2f}-{ci[1]:.2f}]" if ci else ""
        parts.append(f"{key} {rate(figure['rate'])}{interval} of {figure['of']}")
    return "; ".join(parts)


def rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sets", nargs="+", default=[s for s in SETS if s != "natural" or NATURAL.exists()], choices=SETS
    )
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=[*MODES, *BASELINES])
    parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N queries of each set")
    add_backend(parser)
    parser.add_argument("--out", type=Path, default=Path("bench/results/eval.json"))
    args = parser.parse_args()
    from mdrag.log import configure_logging

    configure_logging("WARNING")
    result = evaluate(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(table(result))
    for name, data in result["sets"].items():
        for mode, figures in data["modes"].items():
            print(curve_table(result, name, mode))
            for split, rates in figures.get("splits", {}).items():
                print(f"{name} {mode} {split}: {split_line(rates)}")
        index = data["index"]
        built = "reused" if index["cached"] else f"built in {index['index_seconds']}s"
        print(
            f"{name}: {data['notes']} notes, {data['queries']} queries "
            f"({data['answerable']} answerable); index {built}"
        )
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()

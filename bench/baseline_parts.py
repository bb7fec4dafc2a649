"""What each of the RRF baseline's rankings brings (#57): every ranking alone and every fusion of them.

    python -m bench.baseline_parts --sets obsidian-dev obsidian-hub [--title-score both] [--out JSON]

Per set and split, over its answerable questions: a right note first / in the first three for
dense, BM25 and the title match alone, each pair, all three (the `rrf` mode), and two readings of
the title list: `titlefrac` (a tie shares its mean rank rather than its best) and `titlefull`
(only titles the query covers whole). Note level, from the same cached index as bench.eval.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.baseline import DEPTH, K, RRFBaseline
from bench.metrics import wilson

FUSIONS = (
    ("dense",),
    ("bm25",),
    ("title",),
    ("dense", "bm25"),
    ("dense", "title"),
    ("bm25", "title"),
    ("dense", "bm25", "title"),
    ("dense", "bm25", "titlefrac"),
    ("titlefull",),
    ("dense", "bm25", "titlefull"),
)


def _readings(base: RRFBaseline, text: str) -> dict[str, list[tuple[str, float]]]:
    lists: dict[str, list[tuple[str, float]]] = {
        k: [(p, float(r)) for p, r in v] for k, v in base.lists(text).items()
    }
    ties: dict[float, list[str]] = {}
    for path, rank in lists["title"]:
        ties.setdefault(rank, []).append(path)
    lists["titlefrac"] = [(p, rank + (len(group) - 1) / 2) for rank, group in ties.items() for p in group]
    full = [(p, score) for p, _, score in base.titles.ranking(text, DEPTH, "share") if score >= 1.0]
    ranked: list[tuple[str, float]] = []
    for i, (path, score) in enumerate(full):
        ranked.append((path, ranked[-1][1] if i and score == full[i - 1][1] else float(i + 1)))
    lists["titlefull"] = ranked
    return lists


def parts(name: str, title_score: str) -> list[dict[str, Any]]:
    """Per answerable question: the rank of its first right note under each fusion."""
    from bench import eval as ev
    from bench.judged_data import doc_ids, judged_set

    judged = judged_set(name)
    service, root, _ = ev.open_set(judged, ev.config_for(None))
    ids = doc_ids(root)
    rows = []
    try:
        base = RRFBaseline(service, root, title_score)
        for qid, text in judged.queries.items():
            relevant = {d for d, g in judged.qrels.get(qid, {}).items() if g > 0}
            if not relevant:
                continue
            lists = _readings(base, text)
            row: dict[str, Any] = {"qid": qid, "split": "test" if qid in judged.sealed else "train"}
            for fusion in FUSIONS:
                fused: dict[str, float] = {}
                for key in fusion:
                    for path, rank in lists[key]:
                        fused[path] = fused.get(path, 0.0) + 1.0 / (K + rank)
                order = [ids.get(p) for p, _ in sorted(fused.items(), key=lambda item: (-item[1], item[0]))]
                row["+".join(fusion)] = next((i for i, d in enumerate(order, 1) if d in relevant), None)
            rows.append(row)
    finally:
        service.close()
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in ("test", "train"):
        kept = [r for r in rows if r["split"] == split]
        if not kept:
            continue
        out[split] = {}
        for fusion in FUSIONS:
            key = "+".join(fusion)
            first = sum(1 for r in kept if r[key] == 1)
            in_3 = sum(1 for r in kept if r[key] is not None and r[key] <= 3)
            out[split][key] = {
                "first": round(first / len(kept), 4),
                "first_ci95": wilson(first, len(kept)),
                "in_3": round(in_3 / len(kept), 4),
                "of": len(kept),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="+", required=True)
    parser.add_argument("--title-score", choices=("both", "share", "idf"), default="both")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from mdrag.log import configure_logging

    configure_logging("WARNING")
    result = {}
    for name in args.sets:
        result[name] = summary(parts(name, args.title_score))
        for split, figures in result[name].items():
            print(f"{name} {split} (of {next(iter(figures.values()))['of']})")
            for key, f in figures.items():
                print(f"  {key:28s} first {f['first']:.2f}  top 3 {f['in_3']:.2f}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

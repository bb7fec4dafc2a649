"""A plain baseline beside mdrag's shipped order (#57): reciprocal-rank fusion of three note rankings.

    python -m bench.eval --sets obsidian-dev --modes hybrid rrf      (the `rrf` mode)
    python -m bench.baseline RESULT.json [--misses]                  (the table beside hybrid)
    python -m bench.baseline RESULT.json --parts PARTS.json --out bench/results/baseline.json

The three rankings, each over notes (a note ranks at its best section or window):
1. dense: the store's nearest windows to the query's MiniLM vector (mdrag's own index);
2. BM25: the store's keyword index, asked what mdrag's keyword search asks (the query without
   its question words);
3. a fuzzy title match (bench.titles): a note's titles (frontmatter `title`, first `#` heading or
   else file name, each alias) against the query's words, equal or one edit apart, stemmed; a
   title scores the share of its words the query covers, ties broken by the share of the query's
   words it covers; a note scores its best title. Tied notes share a rank (the best of the tie).
Each ranking is cut at its first DEPTH notes; a note's fused score is the sum over the rankings
that hold it of 1 / (K + rank). Nothing here is fitted: K = 60 is the constant of Cormack et al.
(2009) and the depths are round numbers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.titles import TitleIndex

K = 60  # RRF's constant (Cormack, Clarke and Buettcher, SIGIR 2009)
DEPTH = 100  # notes kept from each ranking
ROWS = 300  # rows (windows / sections) asked of the store per ranking, to reach ~DEPTH notes


def notes_in_order(paths: Iterable[str], depth: int = DEPTH) -> list[str]:
    """Distinct notes in first-seen order (a note ranks at its best row), the first `depth`."""
    seen: dict[str, None] = {}
    for path in paths:
        if path not in seen:
            seen[path] = None
            if len(seen) >= depth:
                break
    return list(seen)


class RRFBaseline:
    """Ranks a cached index's notes by RRF of dense, BM25 and title rankings."""

    def __init__(self, service: Any, root: Path, title_score: str = "both") -> None:
        self.searcher = service.searcher
        self.title_score = title_score
        self.titles = TitleIndex(sorted(root.rglob("*.md")))
        self._cache: dict[str, list[tuple[str, float]]] = {}

    def lists(self, text: str) -> dict[str, list[tuple[str, int]]]:
        """The three rankings: note path -> rank, best first."""
        from mdrag.retrieval.query import keyword_query

        store = self.searcher.store
        vector = self.searcher.embedder.embed_query(text)
        dense = notes_in_order(row["file_path"] for row in store.search_dense(vector, ROWS).rows)
        keyword = notes_in_order(hit.file_path for hit in store.keyword_hits(keyword_query(text), ROWS))
        return {
            "dense": [(p, r) for r, p in enumerate(dense, start=1)],
            "bm25": [(p, r) for r, p in enumerate(keyword, start=1)],
            "title": [(p, r) for p, r, _ in self.titles.ranking(text, DEPTH, self.title_score)],
        }

    def rank(self, text: str, leave_out: Callable[[str], bool] | None = None) -> list[tuple[str, float]]:
        """Notes by fused score, best first (ties: by path, for a stable order)."""
        if text not in self._cache:
            fused: dict[str, float] = {}
            for ranked in self.lists(text).values():
                for path, rank in ranked:
                    fused[path] = fused.get(path, 0.0) + 1.0 / (K + rank)
            self._cache[text] = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
        found = self._cache[text]
        return [(p, s) for p, s in found if not (leave_out and leave_out(p))]

    def search(
        self, request: dict[str, Any], leave_out: Callable[[str], bool] | None = None
    ) -> dict[str, Any]:
        """A response shaped as Service.search's, one hit per note; `confidence_score` is the fused
        score (no confidence: the answer rates of this mode mean nothing)."""
        ranked = self.rank(request["query"], leave_out)[: request.get("top_k", 10)]
        return {"results": [{"file_path": p, "confidence_score": round(s, 6)} for p, s in ranked]}


# ---- the report: hybrid beside rrf, per vault, split and form -------------------------------


def _forms(name: str) -> dict[str, str]:
    from bench.judged_data import VAULTS

    path = VAULTS / name / "queries.jsonl"
    if not path.exists():
        return {}
    with path.open(encoding="utf-8") as handle:
        return {str(q["_id"]): q.get("form", "natural") for q in map(json.loads, handle)}


def _figure(records: Sequence[dict[str, Any]], k: int) -> str:
    from bench.metrics import wilson

    n = len(records)
    hit = sum(1 for r in records if r["first_rank"] is not None and r["first_rank"] <= k)
    if not n:
        return "–"
    lo, hi = wilson(hit, n) or (0.0, 1.0)
    return f"{hit / n:.2f} [{lo:.2f}-{hi:.2f}]"


def _in_form(form: str, forms: dict[str, str]) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["split"] == "test" and forms.get(r["qid"]) == form


def report(result: dict[str, Any], modes: Sequence[str] = ("hybrid", "rrf")) -> str:
    lines = [
        "| vault | split / form | n | " + " | ".join(f"{m} first | {m} top 3" for m in modes) + " |",
        "| --- | --- | --- | " + " | ".join("--- | ---" for _ in modes) + " |",
    ]
    for name, data in result["sets"].items():
        present = [m for m in modes if m in data["modes"] and "questions" in data["modes"][m]]
        if not present:
            continue
        forms = _forms(name)
        records = {m: data["modes"][m]["questions"] for m in present}
        groups: list[tuple[str, Callable[[dict[str, Any]], bool]]] = [
            ("test", lambda r: r["split"] == "test"),
            ("train", lambda r: r["split"] == "train"),
        ]
        if len(set(forms.values())) > 1:
            for form in ("natural", "keyword", "identifier"):
                groups.append((f"test {form}", _in_form(form, forms)))
        for label, keep in groups:
            kept = {m: [r for r in records[m] if keep(r)] for m in present}
            n = len(kept[present[0]])
            if not n:
                continue
            cells = " | ".join(
                f"{_figure(kept[m], 1)} | {_figure(kept[m], 3)}" if m in kept else "– | –" for m in modes
            )
            lines.append(f"| {name} | {label} | {n} | {cells} |")
    return "\n".join(lines)


def misses(result: dict[str, Any], name: str, mode: str = "hybrid", split: str = "test") -> str:
    """The first-hit misses of a mode, one per line: query, the first notes, the right note's rank."""
    from bench.judged_data import VAULTS, load_qrels, load_queries

    folder = VAULTS / name
    queries, qrels = load_queries(folder / "queries.jsonl"), load_qrels(folder / "qrels.tsv")
    out = []
    for r in result["sets"][name]["modes"][mode]["questions"]:
        if r["split"] != split or r["first_rank"] == 1:
            continue
        right = sorted(d for d, g in qrels[r["qid"]].items() if g > 0)
        out.append(
            json.dumps(
                {
                    "qid": r["qid"],
                    "query": queries[r["qid"]],
                    "first_rank": r["first_rank"],
                    "rank_in_100": r.get("rank_in_100"),
                    "top": r["top"][:3],
                    "right": right[:3],
                },
                ensure_ascii=False,
            )
        )
    return "\n".join(out)


ABOUT = (
    "#57: mdrag's shipped hybrid order beside the RRF baseline (k=60) of dense, BM25 and a fuzzy "
    "title match (rrf), per judged vault: right_first / right_in_3 over the answerable questions at "
    "threshold 0 (the ranking alone), Wilson 95%, from bench.eval; components.both: each ranking "
    "alone and their fusions, note level (bench.baseline_parts). The shipped order was fitted on "
    "every vault's questions: bench/results/order.json holds each vault out of its own fit."
)


def collected(merged: dict[str, Any], parts: dict[str, Any]) -> dict[str, Any]:
    """What bench/results/baseline.json keeps per judged vault: hybrid and rrf (rates, metrics,
    each question's first three notes) and the parts' fusions."""
    out: dict[str, Any] = {"about": ABOUT, "sets": {}}
    for name, data in merged["sets"].items():
        if name not in parts or "rrf" not in data["modes"]:
            continue  # not a judged vault with its baseline measured
        entry: dict[str, Any] = {key: data[key] for key in ("notes", "queries", "answerable", "index")}
        entry["modes"] = {}
        for mode in ("hybrid", "rrf"):
            figures = data["modes"][mode]
            entry["modes"][mode] = {
                "splits": {
                    split: {key: rates[key] for key in ("right_first", "right_in_3")}
                    for split, rates in figures.get("splits", {}).items()
                },
                "metrics": figures["metrics"],
                "questions": [{**q, "top": q["top"][:3]} for q in figures.get("questions", [])],
            }
        entry["components"] = {"both": parts[name]}
        out["sets"][name] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", type=Path, nargs="+", help="bench.eval JSON outputs (merged)")
    parser.add_argument(
        "--misses", nargs="*", default=None, help="print the hybrid first-hit misses of these sets"
    )
    parser.add_argument("--parts", type=Path, help="a bench.baseline_parts JSON, kept beside")
    parser.add_argument("--out", type=Path, help="write the vaults' figures here (with --parts)")
    args = parser.parse_args()
    merged: dict[str, Any] = {"sets": {}}
    for path in args.results:
        merged["sets"].update(json.loads(path.read_text(encoding="utf-8"))["sets"])
    print(report(merged))
    for name in args.misses or ():
        print(f"\n## {name}: hybrid first-hit misses (test)")
        print(misses(merged, name))
    if args.out and args.parts:
        parts = json.loads(args.parts.read_text(encoding="utf-8"))
        args.out.write_text(json.dumps(collected(merged, parts), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

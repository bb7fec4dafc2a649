"""Explain: the evidence and ranks behind each hit, and what the threshold cut (`--explain`)."""

from __future__ import annotations

from mdrag.answers import search as answers
from mdrag.params.search import SearchParams
from mdrag.retrieval import relevance
from mdrag.retrieval.candidate import MODE_LISTS, Candidate, section_key
from mdrag.retrieval.hits import Hit


def explain(
    hits: list[Hit],
    chosen: list[Candidate],
    dropped: list[Candidate],
    ordered: list[Candidate],
    ranked: list[list[Candidate]],
    params: SearchParams,
) -> answers.SearchExplain:
    """Per hit: its similarity, score, the evidence behind it and its ranks (set on the hit);
    and what the threshold cut."""
    fused_rank = {section_key(c): rank for rank, c in enumerate(ordered, start=1)}
    lists = dict(zip(MODE_LISTS[params.mode], ranked, strict=False))
    ranks = {name: {section_key(c): rank for rank, c in enumerate(rows, 1)} for name, rows in lists.items()}
    by_id = {c["id"]: c for c in chosen}
    shown = {section_key(c) for c in chosen}

    def ranks_of(candidate: Candidate) -> answers.Evidence:
        key = candidate.get("stands_for") or section_key(candidate)  # whose score it shows
        return {
            "similarity": None if candidate["cosine"] is None else round(candidate["cosine"], 4),
            "score": round(candidate["score"], 4),
            "evidence": dict(
                zip(relevance.FEATURES, (round(v, 4) for v in candidate["features"]), strict=True)
            ),
            "dense_rank": ranks.get("dense", {}).get(key),
            "keyword_rank": ranks.get("keyword", {}).get(key),
            "score_rank": fused_rank.get(key),
        }

    for hit in hits:
        candidate = by_id.get(hit.metadata["row_id"])
        if candidate is not None:
            hit.explain = ranks_of(candidate)
    return {
        "mode": params.mode,
        "threshold": params.threshold,
        "candidates": len(ordered),
        "dropped_by_threshold": [
            {
                "file_path": c["file_path"],
                "section_id": c["section_id"],
                "start_line": c.get("start_line"),
                "end_line": c.get("end_line"),
                "heading_path": c.get("heading_path", ""),
                **ranks_of(c),
            }
            for c in dropped
            if section_key(c) not in shown  # a hit now, in its note's names' place (readable.py)
        ],
    }

"""Ranking: the candidates scored by relevance, best first, and the threshold's pass over them."""

from __future__ import annotations

from mdrag.params.search import SearchParams
from mdrag.retrieval import relevance
from mdrag.retrieval.candidate import Candidate, section_key


def scored(
    params: SearchParams,
    dense: list[Candidate],
    keyword: list[Candidate],
    baseline: tuple[float, float] | None,
    unheard: tuple[str, ...] = (),
) -> tuple[list[Candidate], relevance.QueryEvidence]:
    """Every distinct candidate with its relevance `score` and `features`, best first (ties keep
    the dense-then-keyword order the engine gave), and what the pool says of the query."""
    ordered = []
    candidates, pool = relevance.score_candidates(
        params.query,
        dense,
        keyword,
        section_key,
        baseline,
        keyword_searched=params.mode != "dense",
        unheard=unheard,
    )
    for (row, values), score in zip(
        candidates, relevance.scores([values for _, values in candidates], params.mode), strict=True
    ):
        row["score"] = score
        row["features"] = values
        ordered.append(row)
    ordered.sort(key=lambda row: -row["score"])
    return ordered, pool


def pass_threshold(
    ordered: list[Candidate], params: SearchParams
) -> tuple[list[Candidate], float | None, list[Candidate]]:
    """The first top_k candidates whose score passes the threshold, the best score seen,
    and the candidates looked at that the threshold dropped."""
    chosen: list[Candidate] = []
    dropped: list[Candidate] = []
    best: float | None = None
    for candidate in ordered:
        if len(chosen) >= params.top_k or len(chosen) + len(dropped) >= max(params.top_k, 10):
            break
        best = candidate["score"] if best is None else max(best, candidate["score"])
        if candidate["score"] < params.threshold:
            dropped.append(candidate)
        else:
            chosen.append(candidate)
    return chosen, best, dropped

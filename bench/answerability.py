"""Answerability: does a search keep a right note for an answerable query, and nothing otherwise?

A search *answers* an answerable query when a relevant note is among the hits it keeps (score at
or above the threshold, at most DEPTH of them); it is *silent* on an unanswerable query when it
keeps nothing. Hits are ordered by score, so the hits kept at threshold t are the prefix scoring
>= t: one search at threshold 0 gives the rates at every threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

DEPTH = 10  # the default top_k: the hits a user sees


def answered(scored: Sequence[tuple[str, int, float]], threshold: float) -> bool:
    """`scored`: (note, is_relevant, score) best first."""
    return any(label and score >= threshold for _, label, score in scored[:DEPTH])


def silent(scored: Sequence[tuple[str, int, float]], threshold: float) -> bool:
    return not any(score >= threshold for _, _, score in scored[:DEPTH])


def rates_at(
    answerable: Sequence[Sequence[tuple[str, int, float]]],
    unanswerable: Sequence[Sequence[tuple[str, int, float]]],
    threshold: float,
) -> dict[str, float | None]:
    return {
        "answered": round(sum(answered(s, threshold) for s in answerable) / len(answerable), 4)
        if answerable
        else None,
        "silent": round(sum(silent(s, threshold) for s in unanswerable) / len(unanswerable), 4)
        if unanswerable
        else None,
    }

"""Retrieval metrics as BEIR computes them (nDCG@k, Recall@k, MRR@k), and rates with their intervals."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """Normalized discounted cumulative gain with the standard log2(rank + 1) discount."""
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 100) -> float:
    wanted = {doc for doc, gain in relevant.items() if gain > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    for rank, doc in enumerate(ranked[:k], start=1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation, as numpy's default."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def best_f1_threshold(
    scored: Sequence[tuple[float, bool]], total_relevant: int, steps: int = 100
) -> tuple[float, float]:
    """(threshold, F1) that maximizes micro F1 when every hit scoring >= threshold is kept.

    `scored` holds one (score, is_relevant) pair per returned document of every query.
    """
    best = (0.0, 0.0)
    for step in range(steps + 1):
        threshold = step / steps
        kept = [relevant for score, relevant in scored if score >= threshold]
        hits = sum(kept)
        if not kept or not hits:
            continue
        precision, recall = hits / len(kept), hits / total_relevant
        f1 = 2 * precision * recall / (precision + recall)
        if f1 > best[1]:
            best = (threshold, f1)
    return best


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval (95% by default) of a rate of `successes` out of `n`; None for n = 0.

    Unlike the normal approximation it stays inside [0, 1] and is honest for the small counts of
    judged question sets (a rate of 0.9 over 40 questions is 0.77-0.96, not 0.81-0.99).
    """
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)

"""Why a decision misses, per question at the default threshold, and how well its first hit's
score tells answerable questions from unanswerable ones (bench.lovo's per-vault readings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.answerability import DEPTH
from bench.vaultfit import THRESHOLD, _scored


def misses(
    rows: Sequence[dict[str, Any]], constants: Any, queries: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Why each question of these rows is missed at 0.7 (see the module's docstring)."""
    out: dict[str, list[dict[str, Any]]] = {
        "answered_wrong": [],
        "silent_right_in_candidates": [],
        "silent_right_not_in_candidates": [],
        "unanswerable_answered": [],
    }
    for row in rows:
        scored = sorted(_scored(row, constants(row)), key=lambda t: -t[2])
        kept = scored[:DEPTH]
        top = kept[0][2] if kept else 0.0
        q = queries.get(row["q"], {})
        note = {
            "q": row["q"],
            "text": q.get("text"),
            "form": q.get("form", "natural"),
            "top": round(top, 3),
            "first": kept[0][0] if kept else None,
        }
        if row["version"] == "answerable":
            if any(label and score >= THRESHOLD for _, label, score in kept):
                continue
            distinct: list[tuple[str, int, float]] = []
            for doc, label, score in scored:
                if all(doc != d for d, _, _ in distinct):
                    distinct.append((doc, label, score))
            rank = next((i for i, (_, label, _) in enumerate(distinct, 1) if label), None)
            right = distinct[rank - 1][2] if rank else None
            note |= {"right_rank": rank, "right_score": None if right is None else round(right, 3)}
            if top >= THRESHOLD:
                out["answered_wrong"].append(note)
            elif rank is not None:
                out["silent_right_in_candidates"].append(note)
            else:
                out["silent_right_not_in_candidates"].append(note)
        elif top >= THRESHOLD:
            out["unanswerable_answered"].append(note | {"kind": q.get("kind")})
    return {key: {"count": len(items), "questions": items} for key, items in out.items()}


def separation(rows: Sequence[dict[str, Any]], constants: Any) -> float | None:
    found, unanswerable = [], []
    for row in rows:
        scored = sorted(_scored(row, constants(row)), key=lambda t: -t[2])[:DEPTH]
        top = scored[0][2] if scored else 0.0
        if row["version"] == "unanswerable":
            unanswerable.append(top)
        elif any(label for _, label, _ in scored):
            found.append(top)
    if not found or not unanswerable:
        return None
    a, u = np.asarray(found)[:, None], np.asarray(unanswerable)[None, :]
    return round(float(np.mean((a > u) + 0.5 * (a == u))), 4)

"""Ahead of the model: the best windows of notes not embedded yet, embedded for one query, as candidates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from mdrag.catalog import Catalog
from mdrag.embedding.embedder import Embedder

if TYPE_CHECKING:
    from mdrag.retrieval.search import Candidate

# Sections of waiting notes embedded for one query: each costs a few ms of the model beside the
# run (~10 per 100 ms on two cores busy indexing), and more than the few best by their words
# seldom reach the first hits.
EMBEDDED = 8


def candidates(
    found: Sequence[tuple[float, dict[str, Any]]],
    vector: np.ndarray,
    embedder: Embedder,
    catalog: Catalog,
    path_prefix: str = "",
) -> list[Candidate]:
    """The best sections of `found` (the pending keyword index's window rows with their BM25
    scores, best first) as candidates like the store's keyword rows: their display fields, BM25
    score and a real cosine to the query (`vector`), embedded now at the request's priority. A
    note indexed since it was read is left out: its own rows answer for it."""
    best: dict[tuple[str, str, int], tuple[float, dict[str, Any]]] = {}
    for bm25, row in found:
        display = row["display"]
        path = display["file_path"]
        if catalog.visible_hash(path) is not None or not path.startswith(path_prefix):
            continue
        key = (path, display["section_id"], display["start_position"])
        if key not in best:
            best[key] = (bm25, row)
            if len(best) >= EMBEDDED:
                break
    if not best:
        return []
    vectors = embedder.embed_for_request([row["embedded_text"] for _, row in best.values()])
    made: list[Candidate] = []
    for (bm25, row), window in zip(best.values(), vectors, strict=True):
        cosine = float(np.dot(vector, window))
        fields = {**row["display"], "id": row["id"], "distance": cosine, "cosine": cosine, "bm25": bm25}
        made.append(cast("Candidate", {**fields, "pending": True}))
    return made


def merged(dense: list[Candidate], keyword: list[Candidate], waiting: list[Candidate], limit: int) -> None:
    """Place the waiting notes' candidates where the engine would have ranked them had they been
    indexed: in the keyword list by BM25, and in the dense list by cosine (within its `limit`)."""
    if not waiting:
        return
    keyword.extend(waiting)
    keyword.sort(key=lambda row: -row["bm25"])
    floor = dense[-1]["cosine"] if len(dense) >= limit else -1.0
    dense.extend(dict(row) for row in waiting if row["cosine"] > floor)  # type: ignore[misc]
    dense.sort(key=lambda row: -row["cosine"])
    del dense[limit:]

"""Ahead of the model: the best windows of notes not embedded yet, embedded for one query, as candidates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdrag.catalog import Catalog
from mdrag.embedding.embedder import Embedder
from mdrag.milvus import Shown, clip_bytes
from mdrag.retrieval.candidate import Candidate, as_candidate
from mdrag.retrieval.hittext import note_text

# Sections of waiting notes embedded for one query: each costs a few ms of the model beside the
# run (~10 per 100 ms on two cores busy indexing), and more than the few best by their words
# seldom reach the first hits.
EMBEDDED = 8


def candidates(
    found: Sequence[tuple[float, dict[str, Any]]],
    vector: np.ndarray,
    embedder: Embedder,
    catalog: Catalog,
    accepts: Callable[[str], bool],
) -> list[Candidate]:
    """The best sections of `found` (the pending keyword index's window rows with their BM25
    scores, best first, within the search's scope: that index applies it) as candidates like
    the store's keyword rows: their display fields, BM25 score, text, and a real cosine to the
    query (`vector`), embedded now at the request's priority. Left out: a note indexed since it
    was read (its own rows answer for it), one no longer a note of the vault (`accepts`:
    excluded since), and one changed or gone since it was read (its text is no longer at its
    hash: found once the model reaches it)."""
    best: dict[tuple[str, str, int], tuple[float, dict[str, Any]]] = {}
    texts: dict[tuple[str, str], str | None] = {}
    for bm25, row in found:
        display = row["display"]
        path, file_hash = display["file_path"], display["file_hash"]
        if catalog.visible_hash(path) is not None:
            continue
        key = (path, display["section_id"], display["start_position"])
        if key in best:
            continue
        if (path, file_hash) not in texts:
            texts[(path, file_hash)] = note_text(path, file_hash) if accepts(path) else None
        if texts[(path, file_hash)] is None:
            continue
        best[key] = (bm25, row)
        if len(best) >= EMBEDDED:
            break
    if not best:
        return []
    vectors = embedder.embed_for_request([row["embedded_text"] for _, row in best.values()])
    made: list[Candidate] = []
    for (bm25, row), window in zip(best.values(), vectors, strict=True):
        shown: Shown = row["display"]
        text = texts[(shown["file_path"], shown["file_hash"])] or ""
        cosine = float(np.dot(vector, window))
        candidate = as_candidate({**shown, "id": row["id"], "distance": cosine})
        candidate.update(
            {
                "cosine": cosine,
                "bm25": bm25,
                "section_text": clip_bytes(text[shown["start_position"] : shown["end_position"]]),
                "pending": True,
            }
        )
        made.append(candidate)
    return made


def merged(dense: list[Candidate], keyword: list[Candidate], waiting: list[Candidate], floor: float) -> None:
    """Place the waiting notes' candidates among the indexed notes': in the keyword list by BM25
    (the pending index's own statistics: close to, not the same as, the keyword index's), and in
    the dense list by cosine, when above `floor` (the last cosine the engine's dense search
    returned, when it returned all it was asked for), as the engine would have ranked them."""
    if not waiting:
        return
    keyword.extend(waiting)
    keyword.sort(key=lambda row: -row["bm25"])
    dense.extend(row.copy() for row in waiting if row["cosine"] > floor)
    dense.sort(key=lambda row: -row["cosine"])

"""Vectors: where each window of a batch gets its vector (this run, a copied note, the store, the model)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdrag import keys
from mdrag.catalog import Catalog
from mdrag.embedding.embedder import EmbedCancelled, Embedder
from mdrag.index.rows import PreparedNote
from mdrag.milvus import CarriedVectors, Store
from mdrag.progress import ProgressMeter

RUN_VECTORS = 100_000  # vectors one run keeps for reuse (384 float32 each: ~150 MB at most)
# Texts per call to the model: a huge note (tens of thousands of windows) is embedded in slices,
# each kept in the run as it is done, so a stopped run loses at most one slice.
SLICE_TEXTS = 2048

VectorMap = dict[tuple[str, int], np.ndarray]  # (section_id, window) -> its vector


class RunVectors:
    """The vectors one indexing run has embedded or found, by (section_id, window).

    A section repeated across notes (versions of a page, a shared template) is reused from here.
    Asking the store instead costs a query per batch that returns every copy's row: 28 s of a
    100 s cold run over the PowerShell reference, with the model idle meanwhile.
    """

    def __init__(self, store_had_notes: bool, limit: int = RUN_VECTORS) -> None:
        self._vectors: VectorMap = {}
        self.limit = limit
        # The store can hold a vector this run has not seen only if it had notes when the run
        # began, or if this run let go of one it wrote.
        self.store_may_know_more = store_had_notes

    def get(self, key: tuple[str, int]) -> np.ndarray | None:
        return self._vectors.get(key)

    def add(self, vectors: VectorMap) -> None:
        self._vectors.update(vectors)
        while len(self._vectors) > self.limit:
            del self._vectors[next(iter(self._vectors))]  # the oldest first
            self.store_may_know_more = True


@dataclass(frozen=True)
class BatchVectors:
    """Every window's vector of a batch, how many of its sections the model embedded or were
    found already, and how many of its notes' descriptions the model embedded."""

    vectors: VectorMap
    sections_embedded: int
    sections_reused: int
    descriptions_embedded: int = 0


def batch_vectors(
    batch: list[PreparedNote],
    run: RunVectors,
    *,
    embedder: Embedder,
    store: Store,
    catalog: Catalog,
    carried: CarriedVectors | None,
    cancel: threading.Event | None,
    meter: ProgressMeter,
) -> BatchVectors:
    """Each window's vector: from this run, then a copied note's rows, then the store or the
    carried vectors by section, and the rest from the model. Raises EmbedCancelled on `cancel`
    (what the model did before the stop waits in `run` for the next run)."""
    wanted = {
        (sid, w): text
        for p in batch
        for sid, ws in zip(p.section_ids, p.windows, strict=True)
        for w, text in enumerate(ws)
    }
    # A note's description is one more text, kept and found by its key as a section's window is.
    wanted.update({(p.description_id, 0): p.description for p in batch if p.description})
    vectors = {key: v for key in wanted if (v := run.get(key)) is not None}
    if run.store_may_know_more and len(vectors) < len(wanted):
        vectors.update(copied_vectors(batch, vectors, store, catalog))
        vectors.update(held_descriptions(batch, vectors, store, catalog))
    # Then each place that may hold a vector already, by section id, before the model.
    sources: list[Callable[[list[str]], Mapping[tuple[str, int], Any]]] = []
    if run.store_may_know_more:
        sources.append(store.vectors_for_sections)
    if carried is not None:
        sources.append(carried.lookup)  # after a layout upgrade (see milvus/carried.py)
    for lookup in sources:
        unknown = sorted({sid for sid, w in wanted if (sid, w) not in vectors})
        if not unknown:
            break
        found = lookup(unknown).items()
        vectors.update({key: np.asarray(v, dtype=np.float32) for key, v in found if key in wanted})
    missing = [key for key in wanted if key not in vectors]
    # Progress counts every note's texts, a text repeated in the batch as often as it is there.
    meter.texts_done(sum(p.text_count for p in batch) - len(missing), kept=True)
    for start in range(0, len(missing), SLICE_TEXTS):
        part = missing[start : start + SLICE_TEXTS]
        try:
            computed = embedder.embed([wanted[k] for k in part], cancel=cancel, done=meter.texts_done)
        except EmbedCancelled as stop:  # what the model did before the stop waits for the next run
            run.add({part[i]: vector for i, vector in stop.done.items()})
            raise
        embedded = dict(zip(part, computed, strict=True))
        vectors.update(embedded)
        run.add(embedded)
    run.add(vectors)
    model_did = {sid for sid, _ in missing}  # sections' and descriptions' keys, counted apart
    sections = {sid for p in batch for sid in p.section_ids}
    described = {p.description_id for p in batch if p.description}
    return BatchVectors(
        vectors=vectors,
        sections_embedded=len(model_did & sections),
        sections_reused=len(sections - model_did),
        descriptions_embedded=len(model_did & described),
    )


def held_descriptions(
    batch: list[PreparedNote], known: Mapping[tuple[str, int], Any], store: Store, catalog: Catalog
) -> VectorMap:
    """The description vectors of notes whose exact bytes an indexed note holds (the note read
    again by --force or a repair, a copy, a move): the same bytes say the same description, and
    its vector is kept in that note's metadata row alone, packed (read back, it packs the same)."""
    asked: dict[str, list[tuple[str, int]]] = {}  # holder -> the description keys it holds
    for p in batch:
        key = (p.description_id, 0)
        if p.description and key not in known and (holder := catalog.holder_of(p.file_hash)):
            asked.setdefault(holder, []).append(key)
    if not asked:
        return {}
    found = store.description_vectors(list(asked))
    return {key: vector for holder, vector in found.items() for key in asked.get(holder, ())}


def copied_vectors(
    batch: list[PreparedNote], known: Mapping[tuple[str, int], Any], store: Store, catalog: Catalog
) -> VectorMap:
    """The vectors of notes whose exact bytes an indexed note holds (a copied or moved note,
    or the note itself read again), read from that note's rows by key: a row's id follows from
    its path, the shared content and the section's text, so the lookup never scans (see
    Store.vectors_of_rows), and a row sectioned otherwise (by an older mdrag) is not found."""
    expected: dict[str, tuple[str, int]] = {}  # holder's row id -> the (section, window) it holds
    asked: list[tuple[str, str]] = []
    for p in batch:
        holder = catalog.holder_of(p.file_hash)
        if holder is None:
            continue
        for ordinal, (sid, windows) in enumerate(zip(p.section_ids, p.windows, strict=True)):
            for w in range(len(windows)):
                if (sid, w) in known:
                    continue
                row_id = keys.row_id(holder, p.file_hash, sid, ordinal, w)
                expected[row_id] = (sid, w)
                asked.append((holder, row_id))
    if not asked:
        return {}
    found = store.vectors_of_rows(asked)
    return {expected[row_id]: np.asarray(vector, dtype=np.float32) for row_id, vector in found.items()}

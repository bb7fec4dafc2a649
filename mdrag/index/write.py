"""Write: a batch of new note versions into the store and catalog, in an order that keeps them consistent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loguru import logger

from mdrag.catalog import Catalog, record_from_row
from mdrag.errors import RowsRejectedError
from mdrag.index.rows import PreparedNote, metadata_row, vector_rows
from mdrag.index.vectors import VectorMap
from mdrag.milvus import Store


@dataclass(frozen=True)
class Written:
    """What a write stored: each note as written, in batch order (one the engine refused, as its
    failure record), and the vector rows written."""

    notes: list[PreparedNote]
    rows: list[dict[str, Any]]


def write_batch(store: Store, catalog: Catalog, batch: list[PreparedNote], vectors: VectorMap) -> Written:
    """Write the notes' new versions and delete their old ones, so that a search sees each note's
    old version, then its new one, never a mix or nothing:

    1. the new versions' vector rows, invisible to search until the catalog names their hash;
    2. the catalog names the new versions: searches show them from now on;
    3. their metadata rows, the durable record of the switch;
    4. the old versions' rows, now unreachable.

    When the engine refuses something one of the notes holds, each note goes through steps 1 to 3
    on its own, and one it refuses is recorded failed, with the reason: the others go on without it.
    """
    try:
        written, retried = _write_new_versions(store, catalog, batch, vectors, upsert=False), False
    except RowsRejectedError as exc:
        logger.warning("the index refused {} notes at once; writing them one by one: {}", len(batch), exc)
        each = [_write_alone(store, catalog, note, vectors) for note in batch]
        written = Written([n for one in each for n in one.notes], [r for one in each for r in one.rows])
        retried = True
    # 4. the old versions' rows, now unreachable (after a refused batch, new notes' too: the batch
    # may have landed in part)
    updated = [note.path for note in written.notes if not note.is_new or retried]
    if updated:
        keep: dict[str, set[str]] = {}
        for row in written.rows:
            keep.setdefault(row["file_path"], set()).add(row["id"])
        stale = [
            r for r in store.vector_keys_for_paths(updated) if r["id"] not in keep.get(r["file_path"], ())
        ]
        store.delete_vectors(stale)
    return written


def _write_new_versions(
    store: Store, catalog: Catalog, notes: list[PreparedNote], vectors: VectorMap, upsert: bool
) -> Written:
    """Steps 1 to 3 of a write (see write_batch); `upsert` for a retry, since part of a refused
    batch may have landed."""
    inserted: list[dict[str, Any]] = []
    upserted: list[dict[str, Any]] = []
    metadata: list[dict[str, Any]] = []
    for note in notes:
        rows = vector_rows(note, vectors)
        (inserted if note.rows_unseen and not upsert else upserted).extend(rows)
        metadata.append(metadata_row(note, rows, store.dimension, vectors.get((note.description_id, 0))))
    # 1. the new versions' rows (invisible to search until the catalog names their hash)
    store.insert_vectors(inserted)
    store.upsert_vectors(upserted)
    # 2. the switch in memory, once the rows are in: it need not wait for the metadata write.
    # Should that write fail, the store still names the old versions, and the rows no stored
    # version owns are removed when the store comes back (see Indexer.repair).
    for row in metadata:
        catalog.put(record_from_row(row))
    # 3. the durable record of the switch
    store.upsert_metadata(metadata)
    return Written(notes, inserted + upserted)


def _write_alone(store: Store, catalog: Catalog, note: PreparedNote, vectors: VectorMap) -> Written:
    """Steps 1 to 3 for one note of a refused batch; one the engine refuses is written as its
    failure record instead, with the reason."""
    try:
        return _write_new_versions(store, catalog, [note], vectors, upsert=True)
    except RowsRejectedError as exc:
        failed = PreparedNote(
            path=note.path,
            is_new=note.is_new,
            file_hash=note.file_hash,
            held_hash=note.held_hash,
            size=note.size,
            error=f"the index refused this note: {exc}",
        )
    try:
        return _write_new_versions(store, catalog, [failed], vectors, upsert=True)
    except RowsRejectedError as again:
        # It has no rows, so only its metadata write was refused: the catalog holds it since
        # step 2. Known failed in memory only: reported, and not retried until the file changes.
        logger.error("the index refused even the failure record of {}: {}", note.path, again)
        return Written([failed], [])

"""Layout: each shard's collections made or checked, the keyword index beside them, old vectors kept."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from loguru import logger
from pymilvus import MilvusClient

from mdrag.errors import LayoutOutdatedError, StoreError
from mdrag.milvus.calls import EngineCalls
from mdrag.milvus.carried import CarriedVectors
from mdrag.milvus.databases import Databases
from mdrag.milvus.keywords import KeywordIndex
from mdrag.milvus.schema import VECTORS, ensure_collections
from mdrag.milvus.vectorreads import displayed


def ensure_shards(db: Databases, identity: str, dimension: int, uri: str) -> bool:
    """Create the collections of every shard or check them; True when they were made now (empty)."""
    fresh = not db.first.has_collection(VECTORS)
    ensure_collections(db.first, identity, dimension, uri)
    for shard_uri, client in zip(db.uris[1:], db.clients[1:], strict=True):
        if fresh and client.has_collection(VECTORS):
            # Left from an index whose first database was deleted: its rows belong to no note.
            client.drop_collection(VECTORS)
        elif not fresh and not client.has_collection(VECTORS):
            raise LayoutOutdatedError(f"the index {uri} has lost (or never had) its shard {shard_uri}")
        ensure_collections(client, identity, dimension, shard_uri, names=(VECTORS,))
    return fresh


def open_keywords(path: Path, fresh: bool, outdated: str = "") -> tuple[KeywordIndex, bool]:
    """The keyword index at `path`, and whether it lacks rows: emptied beside new collections (it
    may hold an older index's rows); one missing, unreadable or whose repair was cut short lacks
    them (the store's `missing_keywords`)."""
    if fresh:  # what an older index left there (another layout, unreadable) is not read
        words = KeywordIndex.anew(path)
        words.mark_complete(True)
        return words, False
    if outdated:  # why, in words (keywordtext.outdated, read once by the store: Store.keywords_outdated)
        return KeywordIndex.anew(path), True
    complete = KeywordIndex.complete_at(path)
    try:
        words = KeywordIndex(path)
    except StoreError as exc:
        if path.is_symlink():
            raise
        logger.warning("{}; made anew, and the notes of the rows it lacks are read again", exc)
        complete = False
        words = KeywordIndex.anew(path)
    return words, not complete


def keyword_gaps(words: KeywordIndex, keys: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of these vector rows (every row Milvus holds), those the keyword index lacks; the rows it
    holds beyond them are deleted (a write may have stopped between Milvus and it)."""
    wanted = {key["id"]: key for key in keys}
    held = set(words.ids())
    extra = held - wanted.keys()
    missing = [key for row_id, key in wanted.items() if row_id not in held]
    words.delete("id", extra)
    if extra or (missing and held):  # one empty was lost or outdated, and said so at its open
        logger.warning(
            "the keyword index was out of step with the vector rows: {} missing, {} removed",
            len(missing),
            len(extra),
        )
    return missing


def carry(carry_to: CarriedVectors, vectors: Iterator[tuple[str, int, list[float]]]) -> None:
    """Keep an older layout's vectors in `carry_to` for its rebuild (best effort: what cannot be
    kept is embedded again)."""
    started = time.monotonic()
    try:
        kept = carry_to.save(vectors)
    except (StoreError, OSError, sqlite3.Error) as exc:
        logger.warning("could not keep the old vectors ({}); every note is embedded again", exc)
        return
    seconds = time.monotonic() - started
    logger.info("kept {} vectors for the rebuild in {} ({:.1f} s)", kept, carry_to.path, seconds)


def old_vectors(
    db: Databases, engine: EngineCalls, keywords: Path, load: Callable[[MilvusClient], None]
) -> Iterator[tuple[str, int, list[float]]]:
    """(section_id, window, vector) of every row of an older layout, from each shard that
    has the collection: layouts before 8 keep a row's section in Milvus, later ones in the
    keyword index beside it (read as this mdrag reads one)."""
    for client in db.clients:
        if not client.has_collection(VECTORS):
            continue  # an older layout may lack a shard
        load(client)
        columns = {field["name"] for field in client.describe_collection(VECTORS)["fields"]}
        if "section_id" in columns:
            fields = ["section_id", "window_index", "embedding"]
            for row in engine.iterate(VECTORS, fields, client=client):
                yield row["section_id"], int(row["window_index"]), row["embedding"]
            continue
        words = KeywordIndex(keywords)
        for batch in engine.iterate_batches(VECTORS, ["id", "embedding"], client=client):
            for row, display in displayed(words, batch):
                if display is not None:
                    yield display["section_id"], int(display["window_index"]), row["embedding"]

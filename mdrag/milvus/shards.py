"""Shards: how a vectors collection spreads over Milvus Lite files (a new index has one)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

# A new Milvus Lite index is one database and one server. Two shards (two servers, a search
# asking both at once) were meant to use both cores of a small machine, but measured with a
# hybrid search's dense and BM25 calls issued at once, one shard answers as fast or faster
# (100k rows: p50 27 ms against 31 ms) and holds less (518 MB against 584 MB, one server's base
# less), so the second server no longer pays for itself (docs/design.md, "One Lite database").
# An index built with more shards keeps them, found on disk, until it is rebuilt.
NEW_INDEX_SHARDS = 1
MAX_SHARDS = 16  # the most shard files looked for beside an index

T = TypeVar("T")


def shard_paths(db: Path, count: int) -> list[Path]:
    """The database files of an index: the named one (shard 0, which also holds the metadata
    collection), then `NAME.shard1.db`, ... beside it."""
    return [db] + [db.with_name(f"{db.stem}.shard{i}{db.suffix}") for i in range(1, count)]


def shards_on_disk(db: Path) -> list[Path]:
    """The database files an existing index holds: the named one, then each `NAME.shardN.db`
    beside it in turn, up to the first one missing."""
    found = [db]
    for path in shard_paths(db, MAX_SHARDS)[1:]:
        if not path.exists():
            break
        found.append(path)
    return found


def shard_of(doc_id: str, count: int) -> int:
    """The shard of every vector row of one note: a note's rows live together, so its deletes
    and lookups go to one database. doc_id is hex (store.doc_id)."""
    return int(doc_id[:8], 16) % count


def by_shard(items: Iterable[T], doc_id_of: Callable[[T], str], count: int) -> dict[int, list[T]]:
    """Items grouped by the shard of their note, in their order; shards with none are absent."""
    groups: dict[int, list[T]] = {}
    for item in items:
        groups.setdefault(shard_of(doc_id_of(item), count), []).append(item)
    return groups


def best_hits(per_shard: Sequence[list[dict[str, Any]]], limit: int) -> list[dict[str, Any]]:
    """The `limit` best matches of all shards, highest `distance` (cosine or BM25 score) first:
    each shard returned its own best `limit`, so the union holds the overall best."""
    if len(per_shard) == 1:
        return per_shard[0][:limit]
    return heapq.nlargest(limit, (m for matches in per_shard for m in matches), key=lambda m: m["distance"])

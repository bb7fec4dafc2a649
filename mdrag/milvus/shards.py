"""Shards: how the vectors collection spreads over Milvus Lite files, so one search scans on several cores."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from mdrag.files.indexfiles import LITE_SHARDS, shard_paths
from mdrag.milvus.rows import Match

__all__ = ["LITE_SHARDS", "best_hits", "by_shard", "shard_of", "shard_paths"]

T = TypeVar("T")


def shard_of(doc_id: str, count: int) -> int:
    """The shard of every vector row of one note: a note's rows live together, so its deletes
    and lookups go to one database. doc_id is hex (mdrag.keys.doc_id)."""
    return int(doc_id[:8], 16) % count


def by_shard(items: Iterable[T], doc_id_of: Callable[[T], str], count: int) -> dict[int, list[T]]:
    """Items grouped by the shard of their note, in their order; shards with none are absent."""
    groups: dict[int, list[T]] = {}
    for item in items:
        groups.setdefault(shard_of(doc_id_of(item), count), []).append(item)
    return groups


def best_hits(per_shard: Sequence[list[Match]], limit: int) -> list[Match]:
    """The `limit` best matches of all shards, highest `distance` (cosine or BM25 score) first:
    each shard returned its own best `limit`, so the union holds the overall best."""
    if len(per_shard) == 1:
        return per_shard[0][:limit]
    return heapq.nlargest(limit, (m for matches in per_shard for m in matches), key=lambda m: m["distance"])

"""Hits: the rows Milvus finds nearest with what each shows, and notes' vectors read by key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

# Before pymilvus reads its first search answer: it loads scipy.sparse lazily (SciPyHelper), by
# exec'ing a module object of its own, and when the shard threads of the first search do that at
# once, one of them fails on a half-made sys.modules entry ("Unexpected error <'scipy.sparse'>",
# seen as a failed first search in a fresh `mdrag search` process). Imported here, it is whole.
import scipy.sparse  # noqa: F401
from pymilvus import MilvusClient

from mdrag.keys import doc_id, row_hex, row_number
from mdrag.milvus.calls import IN_BATCH, EngineCalls, batches
from mdrag.milvus.databases import Databases
from mdrag.milvus.filters import NoteScope, in_filter, in_numbers
from mdrag.milvus.keywords import KeywordHit, KeywordIndex
from mdrag.milvus.packed import unpack_vector
from mdrag.milvus.rows import KeywordRow, Match, NoteMatch, ShownRow
from mdrag.milvus.schema import DENSE_METRIC, METADATA
from mdrag.milvus.shards import best_hits


class DenseHits(NamedTuple):
    """A dense search's hits, and the lowest cosine Milvus returned when it returned all it was
    asked for (-1.0 when fewer: no row left out scores above it). The floor is the engine's, not
    the hits': a row left out for having nothing to show still bounds what was not returned."""

    rows: list[ShownRow]
    floor: float


def matches(result: Any) -> list[Match]:
    """A search's matches as `id` (the row id, hex) and `distance`."""
    return [{"id": row_hex(match["id"]), "distance": match["distance"]} for match in result]


def search_dense(
    db: Databases,
    engine: EngineCalls,
    words: KeywordIndex,
    collection: str,
    vector: np.ndarray,
    limit: int,
    scope: NoteScope | None = None,
) -> DenseHits:
    """Nearest windows of the loaded vectors `collection`, each with what a hit shows
    (`distance`: the inner product of unit vectors, i.e. the cosine), among the rows of the notes
    in `scope` when given; a row the keyword index lacks is left out (see `shown`)."""
    data = [vector.tolist()]
    filters = {id(client): "" for client in db.clients}
    if scope is not None:
        # Each shard is sent its own notes only: a long list costs the engine its parsing.
        groups = db.by_note(scope.doc_ids, str)
        listed = {id(client): scope.expression(group) for _, client, group in groups}
        # A shard holding none of the notes left out searches all its rows.
        filters = {**filters, **listed} if scope.outside else listed
    if not filters:
        return DenseHits([], -1.0)

    def search(client: MilvusClient) -> list[Match]:
        result = engine.call(
            client.search,
            collection,
            data=data,
            anns_field="embedding",
            limit=limit,
            filter=filters[id(client)],
            output_fields=[],  # ids and distances: what a hit shows is in the keyword index
            search_params={"metric_type": DENSE_METRIC},
        )
        return matches(result[0])

    holding = [client for client in db.clients if id(client) in filters]
    found = best_hits(db.each(search, holding), limit)
    floor = float(found[-1]["distance"]) if len(found) >= limit else -1.0
    return DenseHits(shown(words, found), floor)


def keyword_rows(
    db: Databases,
    engine: EngineCalls,
    words: KeywordIndex,
    collection: str,
    hits: Sequence[KeywordHit],
    vector: np.ndarray,
) -> list[KeywordRow]:
    """These keyword hits as rows: what a hit shows, its `bm25` and its `cosine` to `vector`,
    best BM25 first; a hit Milvus no longer holds is left out.

    Each shard is asked a dense search restricted to its hits' ids: Milvus Lite answers it in
    ~4 ms at 141k rows a shard, where a query or a get of the same ids by primary key takes
    ~40 ms (it scans), and it gives the cosine without returning the vectors."""
    if not hits:
        return []
    data = [vector.tolist()]
    wanted = {
        id(client): [hit.id for hit in group]
        for _, client, group in db.by_note(hits, lambda hit: doc_id(hit.file_path))
    }

    def score(client: MilvusClient) -> list[Match]:
        ids = wanted[id(client)]
        result = engine.call(
            client.search,
            collection,
            data=data,
            anns_field="embedding",
            limit=len(ids),
            filter=in_numbers("id", map(row_number, ids)),
            output_fields=[],
            search_params={"metric_type": DENSE_METRIC},
        )
        return matches(result[0])

    holding = [client for client in db.clients if id(client) in wanted]
    found = {match["id"]: match for group in db.each(score, holding) for match in group}
    rows_by_id = {row["id"]: row for row in shown(words, list(found.values()))}
    rows: list[KeywordRow] = []
    for hit in hits:
        row = rows_by_id.get(hit.id)
        if row is not None:
            rows.append({**row, "cosine": row["distance"], "bm25": hit.bm25})
    return rows


def shown(words: KeywordIndex, found: Sequence[Match]) -> list[ShownRow]:
    """These matched vector rows as hits, in their order: what each shows (read from the
    keyword index, one lookup for all), its id and distance. A row the keyword index lacks
    is left out until the repair has read its note again: it has nothing to show."""
    kept = words.rows_of(match["id"] for match in found)
    hits: list[ShownRow] = []
    for match in found:
        row = kept.get(match["id"])
        if row is not None:
            hits.append({**row["display"], "id": match["id"], "distance": float(match["distance"])})
    return hits


def window_texts(words: KeywordIndex, rows: Sequence[ShownRow]) -> dict[str, str]:
    """The text each of these rows embedded, without the heading path that led it, by row id."""
    found = words.rows_of(row["id"] for row in rows)
    return {
        row_id: row["embedded_text"].partition("\n")[2] or row["embedded_text"]
        for row_id, row in found.items()
    }


def nearest_notes(
    engine: EngineCalls, client: MilvusClient, vector: np.ndarray, limit: int
) -> list[NoteMatch]:
    """The notes whose document vector is nearest (`distance` is the cosine)."""
    result = engine.call(
        client.search,
        METADATA,
        data=[vector.tolist()],
        anns_field="doc_vector",
        limit=min(limit, 16384),
        output_fields=["file_path", "file_hash"],
        search_params={"metric_type": "COSINE"},
    )
    return [_note_match(match) for match in result[0]]


def doc_vectors_of(engine: EngineCalls, paths: Sequence[str]) -> np.ndarray:
    """The document vectors of these indexed notes, one row each (a failed note has none)."""
    found: list[Any] = []
    for batch in batches([doc_id(p) for p in paths], IN_BATCH):
        expr = f'{in_filter("doc_id", batch)} and status == "indexed"'
        found += [row["doc_vector"] for row in engine.query(METADATA, expr, ["doc_vector"])]
    return np.asarray(found, dtype=np.float32)


def description_vectors(engine: EngineCalls, paths: Sequence[str]) -> dict[str, np.ndarray]:
    """The frontmatter description's vector of each of these notes that has one, by path: one
    lookup by key in the metadata rows (a millisecond or two for a search's candidates)."""
    found: dict[str, np.ndarray] = {}
    for batch in batches([doc_id(path) for path in paths], IN_BATCH):
        expr = f'{in_filter("doc_id", batch)} and description_vector != ""'
        for row in engine.query(METADATA, expr, ["file_path", "description_vector"]):
            if (vector := unpack_vector(row["description_vector"])) is not None:
                found[row["file_path"]] = vector
    return found


def _note_match(match: dict[str, Any]) -> NoteMatch:
    """A matched metadata row as one flat dict: its fields, id and distance."""
    entity = match["entity"]
    return {
        "id": match["id"],
        "file_path": entity["file_path"],
        "file_hash": entity["file_hash"],
        "distance": float(match["distance"]),
    }

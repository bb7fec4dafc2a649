"""Vector reads: stored embeddings and row keys read back by note, section or id, shard by shard."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from pymilvus import MilvusClient

from mdrag.keys import doc_id, row_hex, row_number
from mdrag.milvus.calls import IN_BATCH, batches
from mdrag.milvus.filters import in_filter, in_numbers
from mdrag.milvus.keywords import KeywordIndex
from mdrag.milvus.loading import VectorRowsAccess
from mdrag.milvus.rows import Shown, VectorKey


def displayed(
    words: KeywordIndex, rows: Sequence[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], Shown | None]]:
    """Each of these Milvus vector rows with what it shows in the keyword index (one lookup
    for all), or None where the keyword index lacks the row."""
    shown = words.rows_of(row_hex(row["id"]) for row in rows)
    for row in rows:
        found = shown.get(row_hex(row["id"]))
        yield row, None if found is None else found.get("display")


class VectorReads:
    """The store's reads of its vector rows (Store delegates to them), through `access`."""

    def __init__(self, access: VectorRowsAccess) -> None:
        self._db, self._engine = access.db, access.engine
        self._vectors, self._words = access.vectors, access.words

    def count(self) -> int:
        """Vector rows held, in every shard."""
        collection = self._vectors()  # here, never from a shard worker: they would wait on each other

        def count(client: MilvusClient) -> int:
            result = self._engine.call(client.query, collection, filter="", output_fields=["count(*)"])
            return int(result[0]["count(*)"]) if result else 0

        return sum(self._db.each(count))

    def keys_for_paths(self, paths: Sequence[str]) -> list[VectorKey]:
        """id, doc_id and file_path of every vector row of these files (one query per 500)."""
        path_of = {doc_id(p): p for p in paths}
        rows: list[VectorKey] = []
        for _, client, ids in self._db.by_note(list(path_of), str):
            for batch in batches(ids, IN_BATCH):
                filter = in_filter("doc_id", batch)
                for row in self._engine.query(self._vectors(), filter, ["id", "doc_id"], client):
                    rows.append(
                        {
                            "id": row_hex(row["id"]),
                            "doc_id": row["doc_id"],
                            "file_path": path_of[row["doc_id"]],
                        }
                    )
        return rows

    def for_sections(self, section_ids: Sequence[str]) -> dict[tuple[str, int], list[float]]:
        """Stored embeddings by (section_id, window), so unchanged text is never embedded twice.

        In two steps: the rows holding each section, from the keyword index (Milvus keeps no
        section ids), then the embedding of one row per (section, window) by key from the shard
        of its note. A section's text often repeats (a page kept for several versions, a
        template, a copied folder), and returning an embedding costs Milvus Lite ~20x an id, so
        each is read once."""
        one_each: dict[tuple[str, int], tuple[str, str]] = {}  # (section, window) -> (note, row id)
        for batch in batches(sorted(set(section_ids)), IN_BATCH):
            for row_id, row in self._words().rows_of_sections(batch).items():
                display = row["display"]
                key = (display["section_id"], int(display["window_index"]))
                one_each.setdefault(key, (doc_id(display["file_path"]), row_id))
        if not one_each:
            return {}
        found = self.embeddings(list(one_each.values()))
        return {key: found[row_id] for key, (_, row_id) in one_each.items() if row_id in found}

    def embeddings(self, rows: Sequence[tuple[str, str]]) -> dict[str, list[float]]:
        """The embeddings of these rows, each given as (its note's doc_id, its id), by id."""
        found: dict[str, list[float]] = {}
        for _, client, group in self._db.by_note(rows, lambda row: row[0]):
            numbers = [row_number(row_id) for _, row_id in group]
            for batch in batches(numbers, IN_BATCH):
                filter = in_numbers("id", batch)
                for row in self._engine.query(self._vectors(), filter, ["id", "embedding"], client):
                    found[row_hex(row["id"])] = row["embedding"]
        return found

    def section_vectors(self, paths: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
        """Every window vector of these files, by (file_path, file_hash), as one matrix per
        version (the version from the keyword index: a row it lacks shows nothing, and is left out)."""
        found: dict[tuple[str, str], list[Any]] = {}
        for _, client, ids in self._db.by_note([doc_id(p) for p in paths], str):
            for batch in batches(ids, IN_BATCH):
                filter = in_filter("doc_id", batch)
                rows_batches = self._engine.iterate_batches(
                    self._vectors(), ["id", "embedding"], filter, client
                )
                for rows in rows_batches:
                    for row, display in displayed(self._words(), rows):
                        if display is not None:
                            key = (display["file_path"], display["file_hash"])
                            found.setdefault(key, []).append(row["embedding"])
        return {key: np.asarray(rows, dtype=np.float32) for key, rows in found.items()}

    def every_key(self) -> Iterator[VectorKey]:
        """id and doc_id of every vector row, for the repair after a crash, with the `file_path`
        and `file_hash` of the note version it belongs to where the keyword index holds the row."""
        for client in self._db.clients:
            for rows in self._engine.iterate_batches(self._vectors(), ["id", "doc_id"], client=client):
                for row, display in displayed(self._words(), rows):
                    key: VectorKey = {"id": row_hex(row["id"]), "doc_id": row["doc_id"]}
                    if display is not None:
                        key["file_path"], key["file_hash"] = display["file_path"], display["file_hash"]
                    yield key

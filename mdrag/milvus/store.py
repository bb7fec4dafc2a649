"""Store: the two Milvus collections (pymilvus), document_vectors and document_metadata."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

# Before pymilvus reads its first search answer: it loads scipy.sparse lazily (SciPyHelper), by
# exec'ing a module object of its own, and when the shard threads of the first search do that at
# once, one of them fails on a half-made sys.modules entry ("Unexpected error <'scipy.sparse'>",
# seen as a failed first search in a fresh `mdrag search` process). Imported here, it is whole.
import scipy.sparse  # noqa: F401
from loguru import logger
from pymilvus import MilvusClient, MilvusException

from mdrag.errors import IndexFullError, LayoutOutdatedError, StoreError
from mdrag.files.indexfiles import free_bytes, normalized
from mdrag.keys import doc_id, row_hex, row_number
from mdrag.milvus.calls import EngineCalls
from mdrag.milvus.carried import CarriedVectors
from mdrag.milvus.databases import Databases
from mdrag.milvus.filters import EVERY_NOTE, NoteScope, in_filter, in_numbers, metadata_expression
from mdrag.milvus.keywords import KeywordHit, KeywordIndex
from mdrag.milvus.rows import (
    KeywordRow,
    Match,
    NoteMatch,
    NoteVector,
    Shown,
    ShownRow,
    VectorKey,
)
from mdrag.milvus.schema import DENSE_METRIC, METADATA, VECTORS, ensure_collections, identity
from mdrag.milvus.shards import best_hits
from mdrag.params.scope import Scope

WRITE_BATCH = 1000  # rows per insert/upsert call
IN_BATCH = 500  # values per `in [...]` filter
MAX_TEXT_BYTES = 65_000  # VARCHAR limit is 65,535 bytes
# Milvus Lite keeps a collection in memory as it loaded it, plus every row written since, and
# searches the written (and deleted) ones slower until it loads the file again (figures in
# docs/benchmarks.md). Reopening is due once the rows written since the open are this share of
# the index (and a floor).
REOPEN_SHARE = 0.2
# Every call has a deadline (calls.py); loading's is its own: it reads every row, so it may take
# minutes on a large index.
LOAD_DEADLINE_S = 600.0
# Milvus Lite takes writes it cannot keep: on a full file system an insert succeeds, searches
# find the rows, and none of them is on disk when the index is opened again (nothing is
# reported, not even in its log, which is on the same disk). So no write is made with less room
# than this: a write batch (2048 windows, ~4 MB) and the engine's own files fit many times over.
MIN_FREE_BYTES = 16 * 1024 * 1024

# milvus-lite 2.5.1 imports pkg_resources (hence setuptools<81); its deprecation notice is noise.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
# pymilvus logs every failed call (and a warning per query iterator on Milvus Lite); mdrag
# raises its own StoreError with the message, so its log would only say it twice.
logging.getLogger("pymilvus").setLevel(logging.CRITICAL)


def engine_row(row: dict[str, Any]) -> dict[str, Any]:
    """A vector row as Milvus keeps it: its key, its note and its vector (the keyword index
    keeps the rest)."""
    return {"id": row_number(row["id"]), "doc_id": row["doc_id"], "embedding": row["embedding"]}


def _matches(result: Any) -> list[Match]:
    """A search's matches as `id` (the row id, hex) and `distance`."""
    return [{"id": row_hex(match["id"]), "distance": match["distance"]} for match in result]


def clip_bytes(text: str, limit: int = MAX_TEXT_BYTES) -> str:
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


def _displayed(
    words: KeywordIndex, rows: Sequence[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], Shown | None]]:
    """Each of these Milvus vector rows with what it shows in the keyword index (one lookup
    for all), or None where the keyword index lacks the row."""
    shown = words.rows_of(row_hex(row["id"]) for row in rows)
    for row in rows:
        found = shown.get(row_hex(row["id"]))
        yield row, None if found is None else found.get("display")


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class DenseHits(NamedTuple):
    """A dense search's hits, and the lowest cosine Milvus returned when it returned all it was
    asked for (-1.0 when fewer: no row left out scores above it). The floor is the engine's, not
    the hits': a row left out for having nothing to show still bounds what was not returned."""

    rows: list[ShownRow]
    floor: float


class Store:
    """Reads and writes the index in Milvus (Milvus Lite files or a Milvus server).

    On Milvus Lite the vectors collection is spread over shards, one database and server each
    (shards.py): the first database also holds the metadata, a note's vector rows live in one
    shard, and a search asks every shard at once and keeps the best. A server has one shard.

    Beside Milvus, a keyword index (keywords.py) holds each vector row's text for BM25 search
    and what its hit shows, written after the rows go into Milvus: a search asks Milvus for ids
    and distances only, and reads the rest there. It is kept in `keywords` (beside a Milvus
    Lite index by default). When it lacks rows (lost, unreadable, out of step after a crash),
    `missing_keywords` says so until Indexer.repair has read their notes again.
    """

    def __init__(
        self,
        uri: str,
        token: str = "",
        dimension: int = 384,
        model_id: str = "",
        timeout_s: float = 30.0,
        carry_to: CarriedVectors | None = None,
        keywords: Path | None = None,
    ) -> None:
        self.uri = uri
        self.dimension = dimension
        self.model_id = model_id
        self._db = Databases(uri, token, timeout_s)
        if keywords is None and self._db.is_lite:
            keywords = normalized(uri).with_suffix(".keywords")
        if keywords is None:
            raise ValueError(f"a store of the Milvus server {uri} needs a folder for its keyword index")
        self._keywords_path = keywords
        self.keywords: KeywordIndex | None = None  # open once the collections are checked
        self.missing_keywords = False  # the keyword index lacks rows Milvus holds (see repair)
        self.is_lite = self._db.is_lite
        self._engine = EngineCalls(self._db, uri, timeout_s)
        self._db.open()
        self._identity = identity(model_id, dimension, len(self._db))
        self._vectors_loaded = False
        self._load_lock = threading.Lock()
        self.rows_written = 0  # vector rows inserted, upserted or deleted since the open
        self._reopen_checked_at = 0
        try:
            self._open_keywords(fresh=self._ensure_collections())
        except LayoutOutdatedError as exc:
            # Same model, older mdrag or another back-end: the index is derived from the notes,
            # so an upgrade rebuilds it by itself rather than asking a person (or systemd) to,
            # keeping the vectors aside first, where they are this back-end's, so the rebuild
            # embeds nothing again.
            logger.warning("{}; rebuilding the index from the notes", exc)
            if carry_to is not None and exc.vectors_reusable:
                self._carry(carry_to)
            self.drop_all()
        except BaseException:
            self._db.close()  # a store that cannot open (another model's index) leaves no Lite server behind
            raise

    @property
    def shards(self) -> int:
        """How many databases hold the vectors collection (Milvus Lite: LITE_SHARDS; a server: 1)."""
        return len(self._db)

    @property
    def _client(self) -> MilvusClient:
        return self._db.first

    # ---- schema -------------------------------------------------------------------------

    def _carry(self, carry_to: CarriedVectors) -> None:
        started = time.monotonic()
        try:
            kept = carry_to.save(self._old_vectors())
        except (StoreError, OSError, sqlite3.Error) as exc:
            logger.warning("could not keep the old vectors ({}); every note is embedded again", exc)
            return
        seconds = time.monotonic() - started
        logger.info("kept {} vectors for the rebuild in {} ({:.1f} s)", kept, carry_to.path, seconds)

    def _old_vectors(self) -> Iterator[tuple[str, int, list[float]]]:
        """(section_id, window, vector) of every row of an older layout, from each shard that
        has the collection: layouts before 8 keep a row's section in Milvus, later ones in the
        keyword index beside it (read as this mdrag reads one)."""
        for client in self._db.clients:
            if not client.has_collection(VECTORS):
                continue  # an older layout may lack a shard
            self._load(client)
            columns = {field["name"] for field in client.describe_collection(VECTORS)["fields"]}
            if "section_id" in columns:
                fields = ["section_id", "window_index", "embedding"]
                for row in self._engine.iterate(VECTORS, fields, client=client):
                    yield row["section_id"], int(row["window_index"]), row["embedding"]
                continue
            words = KeywordIndex(self._keywords_path)
            for batch in self._engine.iterate_batches(VECTORS, ["id", "embedding"], client=client):
                for row, display in _displayed(words, batch):
                    if display is not None:
                        yield display["section_id"], int(display["window_index"]), row["embedding"]

    def _ensure_collections(self) -> bool:
        """Create the collections or check them; True when they were made now (empty)."""
        fresh = not self._client.has_collection(VECTORS)
        ensure_collections(self._client, self._identity, self.dimension, self.uri)
        for uri, client in zip(self._db.uris[1:], self._db.clients[1:], strict=True):
            if fresh and client.has_collection(VECTORS):
                # Left from an index whose first database was deleted: its rows belong to no note.
                client.drop_collection(VECTORS)
            elif not fresh and not client.has_collection(VECTORS):
                raise LayoutOutdatedError(f"the index {self.uri} has lost (or never had) its shard {uri}")
            ensure_collections(client, self._identity, self.dimension, uri, names=(VECTORS,))
        return fresh

    def _open_keywords(self, fresh: bool) -> None:
        """Open the keyword index: emptied beside new collections (it may hold an older index's
        rows); one missing, unreadable or whose repair was cut short sets `missing_keywords`."""
        path = self._keywords_path
        if fresh:  # what an older index left there (another layout, unreadable) is not read
            self.keywords = KeywordIndex.anew(path)
            self.keywords.mark_complete(True)
            self.missing_keywords = False
            return
        complete = KeywordIndex.complete_at(path)
        try:
            self.keywords = KeywordIndex(path)
        except StoreError as exc:
            if path.is_symlink():
                raise
            logger.warning("{}; made anew, and the notes of the rows it lacks are read again", exc)
            complete = False
            self.keywords = KeywordIndex.anew(path)
        self.missing_keywords = not complete

    @property
    def _words(self) -> KeywordIndex:
        """The keyword index (open from the store's open on)."""
        if self.keywords is None:
            raise StoreError(f"the keyword index of {self.uri} is not open")
        return self.keywords

    def keyword_gaps(self, keys: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Of these vector rows (each an `id`, `doc_id` and `file_path`: every row the store holds),
        those the keyword index lacks; rows it holds beyond them are deleted (a write may have
        stopped between Milvus and it). Milvus keeps no text to write the lacking ones from:
        their notes are read again (Indexer.repair), and until `keywords_complete` the index
        stays marked incomplete, so a repair cut short is done again at the next open."""
        words = self._words
        wanted = {key["id"]: key for key in keys}
        held = set(words.ids())
        extra = held - wanted.keys()
        missing = [key for row_id, key in wanted.items() if row_id not in held]
        words.delete("id", extra)
        if extra or missing:
            logger.warning(
                "the keyword index was out of step with the vector rows: {} missing, {} removed",
                len(missing),
                len(extra),
            )
        if missing:
            words.mark_complete(False)
            self.missing_keywords = True
        else:
            self.keywords_complete()
        return missing

    def notes_lacking_keywords(self, paths: Sequence[str]) -> set[str]:
        """Those of these notes with a vector row the keyword index lacks."""
        keys = self.vector_keys_for_paths(paths)
        held = self._words.rows_of(key["id"] for key in keys)
        return {key["file_path"] for key in keys if key["id"] not in held}

    def keywords_complete(self) -> None:
        """Mark the keyword index as holding every vector row (its repair is done)."""
        self._words.mark_complete(True)
        self.missing_keywords = False

    def drop_all(self) -> None:
        """Remove both collections and create them empty (for `reindex --rebuild`)."""
        for client in self._db.clients:
            for name in (VECTORS, METADATA):
                if client.has_collection(name):
                    client.drop_collection(name)
        self._vectors_loaded = False
        self.rows_written = self._reopen_checked_at = 0  # the rebuild's own writes count from here
        self._ensure_collections()
        if self.keywords is not None:
            self.keywords.clear()
            self.missing_keywords = False
        else:
            self._open_keywords(fresh=True)

    def load_vectors(self) -> None:
        """Load the vectors collection now (a daemon warms up before its first search)."""
        self._vectors()

    def _vectors(self) -> str:
        """The vectors collection's name, loaded on first use: loading reads every row into
        memory (Milvus Lite reads the whole collection), which a no-op rescan never needs."""
        if not self._vectors_loaded:
            with self._load_lock:
                if not self._vectors_loaded:
                    self._db.each(self._load)  # at once: each shard loads on its own core
                    self._vectors_loaded = True
        return VECTORS

    def _load(self, client: MilvusClient) -> None:
        self._engine.call(client.load_collection, VECTORS, timeout=LOAD_DEADLINE_S)

    # ---- writes -------------------------------------------------------------------------

    def insert_vectors(self, rows: Sequence[dict[str, Any]]) -> None:
        self._write_vectors("insert", rows)

    def upsert_vectors(self, rows: Sequence[dict[str, Any]]) -> None:
        self._write_vectors("upsert", rows)

    def _write_vectors(self, how: str, rows: Sequence[dict[str, Any]]) -> None:
        self.check_room()  # before a note's first write: its metadata follows only if its vectors went in
        collection = self._vectors()
        for _, client, shard_rows in self._db.by_note(rows, lambda row: row["doc_id"]):
            write = getattr(client, how)
            for batch in _batches(shard_rows, WRITE_BATCH):
                self._engine.write(write, collection, data=[engine_row(row) for row in batch])
                self.rows_written += len(batch)
        # After Milvus: a row is found once both hold it (a search shows only rows both hold).
        self._words.write(rows)

    def delete_vectors_of_paths(self, paths: Sequence[str]) -> None:
        notes = [doc_id(p) for p in paths]
        for shard, _, ids in self._db.by_note(notes, str):
            for batch in _batches(ids, IN_BATCH):
                self._delete_vectors_where(shard, in_filter("doc_id", batch))
        self._words.delete("doc_id", notes)

    def upsert_metadata(self, rows: Sequence[dict[str, Any]]) -> None:
        for batch in _batches(rows, WRITE_BATCH):
            self._engine.write(self._client.upsert, METADATA, data=list(batch))

    def delete_vectors(self, keys: Sequence[Mapping[str, Any]]) -> None:
        """Delete vector rows by key: each an `id` and the `doc_id` whose shard holds it."""
        for shard, _, shard_keys in self._db.by_note(keys, lambda key: key["doc_id"]):
            for batch in _batches([row_number(key["id"]) for key in shard_keys], WRITE_BATCH * 4):
                self._delete_vectors_where(shard, in_numbers("id", batch))
        self._words.delete("id", (key["id"] for key in keys))

    def _delete_vectors_where(self, shard: int, filter: str) -> None:
        result = self._engine.call(self._db.clients[shard].delete, self._vectors(), filter=filter)
        # Milvus Lite answers with the deleted ids, a server with {"delete_count": n}.
        self.rows_written += len(result) if isinstance(result, list) else int(result.get("delete_count", 0))

    def delete_metadata(self, paths: Sequence[str]) -> None:
        for batch in _batches([doc_id(p) for p in paths], WRITE_BATCH * 4):
            self._engine.call(self._client.delete, METADATA, filter=in_filter("doc_id", batch))

    # ---- reads --------------------------------------------------------------------------

    def vector_keys_for_paths(self, paths: Sequence[str]) -> list[VectorKey]:
        """id, doc_id and file_path of every vector row of these files (one query per 500)."""
        path_of = {doc_id(p): p for p in paths}
        rows: list[VectorKey] = []
        for _, client, ids in self._db.by_note(list(path_of), str):
            for batch in _batches(ids, IN_BATCH):
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

    def vectors_for_sections(self, section_ids: Sequence[str]) -> dict[tuple[str, int], list[float]]:
        """Stored embeddings by (section_id, window), so unchanged text is never embedded twice.

        In two steps: the rows holding each section, from the keyword index (Milvus keeps no
        section ids), then the embedding of one row per (section, window) by key from the shard
        of its note. A section's text often repeats (a page kept for several versions, a
        template, a copied folder), and returning an embedding costs Milvus Lite ~20x an id, so
        each is read once."""
        one_each: dict[tuple[str, int], tuple[str, str]] = {}  # (section, window) -> (note, row id)
        for batch in _batches(sorted(set(section_ids)), IN_BATCH):
            for row_id, row in self._words.rows_of_sections(batch).items():
                display = row["display"]
                key = (display["section_id"], int(display["window_index"]))
                one_each.setdefault(key, (doc_id(display["file_path"]), row_id))
        if not one_each:
            return {}
        found = self._embeddings(list(one_each.values()))
        return {key: found[row_id] for key, (_, row_id) in one_each.items() if row_id in found}

    def vectors_of_rows(self, rows: Sequence[tuple[str, str]]) -> dict[str, list[float]]:
        """The embeddings of rows by primary key, each given as (its note's path, its id), by id:
        exactly the rows asked for, from the one shard that holds each note (Milvus alone, so a
        lost keyword index is written again without embedding its notes)."""
        return self._embeddings([(doc_id(path), row_id) for path, row_id in rows])

    def _embeddings(self, rows: Sequence[tuple[str, str]]) -> dict[str, list[float]]:
        """The embeddings of these rows, each given as (its note's doc_id, its id), by id."""
        found: dict[str, list[float]] = {}
        for _, client, group in self._db.by_note(rows, lambda row: row[0]):
            numbers = [row_number(row_id) for _, row_id in group]
            for batch in _batches(numbers, IN_BATCH):
                filter = in_numbers("id", batch)
                for row in self._engine.query(self._vectors(), filter, ["id", "embedding"], client):
                    found[row_hex(row["id"])] = row["embedding"]
        return found

    def window_texts(self, rows: Sequence[ShownRow]) -> dict[str, str]:
        """The text each of these rows embedded, without the heading path that led it, by row id
        (what a hit shows when its note has changed since: see retrieval/hittext.py)."""
        found = self._words.rows_of(row["id"] for row in rows)
        return {
            row_id: row["embedded_text"].partition("\n")[2] or row["embedded_text"]
            for row_id, row in found.items()
        }

    def section_vectors(self, paths: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
        """Every window vector of these files, by (file_path, file_hash), as one matrix per
        version (the version from the keyword index: a row it lacks shows nothing, and is left out)."""
        found: dict[tuple[str, str], list[Any]] = {}
        for _, client, ids in self._db.by_note([doc_id(p) for p in paths], str):
            for batch in _batches(ids, IN_BATCH):
                filter = in_filter("doc_id", batch)
                batches = self._engine.iterate_batches(self._vectors(), ["id", "embedding"], filter, client)
                for rows in batches:
                    for row, display in _displayed(self._words, rows):
                        if display is not None:
                            key = (display["file_path"], display["file_hash"])
                            found.setdefault(key, []).append(row["embedding"])
        return {key: np.asarray(rows, dtype=np.float32) for key, rows in found.items()}

    def doc_vectors(self) -> Iterator[NoteVector]:
        """file_path, file_hash and doc_vector of every note, for the all-pairs duplicate scan."""
        for row in self._engine.iterate(METADATA, ["file_path", "file_hash", "doc_vector"]):
            path, file_hash, doc_vector = row["file_path"], row["file_hash"], row["doc_vector"]
            yield {"file_path": path, "file_hash": file_hash, "doc_vector": doc_vector}

    def doc_vectors_of(self, paths: Sequence[str]) -> np.ndarray:
        """The document vectors of these indexed notes, one row each (a failed note has none)."""
        found: list[Any] = []
        for batch in _batches([doc_id(p) for p in paths], IN_BATCH):
            expr = f'{in_filter("doc_id", batch)} and status == "indexed"'
            found += [row["doc_vector"] for row in self._engine.query(METADATA, expr, ["doc_vector"])]
        return np.asarray(found, dtype=np.float32)

    def search_doc_vectors(self, vector: np.ndarray, limit: int) -> list[NoteMatch]:
        """The notes whose document vector is nearest (`distance` is the cosine)."""
        result = self._engine.call(
            self._client.search,
            METADATA,
            data=[vector.tolist()],
            anns_field="doc_vector",
            limit=min(limit, 16384),
            output_fields=["file_path", "file_hash"],
            search_params={"metric_type": "COSINE"},
        )
        return [self._hit(match) for match in result[0]]

    def iter_vector_keys(self) -> Iterator[VectorKey]:
        """id and doc_id of every vector row, for the repair after a crash, with the `file_path`
        and `file_hash` of the note version it belongs to where the keyword index holds the row."""
        for client in self._db.clients:
            for rows in self._engine.iterate_batches(self._vectors(), ["id", "doc_id"], client=client):
                for row, display in _displayed(self._words, rows):
                    key: VectorKey = {"id": row_hex(row["id"]), "doc_id": row["doc_id"]}
                    if display is not None:
                        key["file_path"], key["file_hash"] = display["file_path"], display["file_hash"]
                    yield key

    def metadata_rows(self, fields: Sequence[str]) -> Iterator[dict[str, Any]]:
        """These fields of every note's metadata row (the catalog is loaded from them)."""
        yield from self._engine.iterate(METADATA, list(fields))

    def count_vectors(self) -> int:
        collection = self._vectors()  # loaded here, never from a shard worker (they would wait on each other)

        def count(client: MilvusClient) -> int:
            result = self._engine.call(client.query, collection, filter="", output_fields=["count(*)"])
            return int(result[0]["count(*)"]) if result else 0

        counts = self._db.each(count)
        return sum(counts)

    def paths_within(self, scope: Scope) -> list[str]:
        """The paths of the notes in `scope` (what a filtered dense search searches among), read
        from their metadata rows."""
        rows = self._engine.query(METADATA, metadata_expression(scope), ["file_path", "tags"])
        return [row["file_path"] for row in rows if scope.holds(row["file_path"], row["tags"] or ())]

    def search_dense(self, vector: np.ndarray, limit: int, scope: NoteScope | None = None) -> DenseHits:
        """Nearest windows, each with what a hit shows (`distance`: the inner product of unit
        vectors, i.e. the cosine), among the rows of the notes in `scope` when given; a row the
        keyword index lacks is left out (see `_shown`)."""
        data = [vector.tolist()]
        collection = self._vectors()
        filters = {id(client): "" for client in self._db.clients}
        if scope is not None:
            # Each shard is sent its own notes only: a long list costs the engine its parsing.
            groups = self._db.by_note(scope.doc_ids, str)
            listed = {id(client): scope.expression(group) for _, client, group in groups}
            # A shard holding none of the notes left out searches all its rows.
            filters = {**filters, **listed} if scope.outside else listed
        if not filters:
            return DenseHits([], -1.0)

        def search(client: MilvusClient) -> list[Match]:
            result = self._engine.call(
                client.search,
                collection,
                data=data,
                anns_field="embedding",
                limit=limit,
                filter=filters[id(client)],
                output_fields=[],  # ids and distances: what a hit shows is in the keyword index
                search_params={"metric_type": DENSE_METRIC},
            )
            return _matches(result[0])

        holding = [client for client in self._db.clients if id(client) in filters]
        matches = best_hits(self._db.each(search, holding), limit)
        floor = float(matches[-1]["distance"]) if len(matches) >= limit else -1.0
        return DenseHits(self._shown(matches), floor)

    def keyword_hits(self, text: str, limit: int, scope: Scope = EVERY_NOTE) -> list[KeywordHit]:
        """The `limit` best BM25 rows for `text` among the notes in `scope`, best first (the
        keyword index alone: milliseconds)."""
        return self._words.search(text, limit, scope)

    def unheard(self, text: str, scope: Scope = EVERY_NOTE) -> tuple[str, ...]:
        """The words of `text` that no note in `scope` holds."""
        return self._words.unheard(text, scope)

    def keyword_rows(self, hits: Sequence[KeywordHit], vector: np.ndarray) -> list[KeywordRow]:
        """These keyword hits as rows: what a hit shows, its `bm25` and its `cosine` to `vector`,
        best BM25 first; a hit Milvus no longer holds is left out.

        Each shard is asked a dense search restricted to its hits' ids: Milvus Lite answers it in
        ~4 ms at 141k rows a shard, where a query or a get of the same ids by primary key takes
        ~40 ms (it scans), and it gives the cosine without returning the vectors."""
        if not hits:
            return []
        collection = self._vectors()
        data = [vector.tolist()]
        wanted = {
            id(client): [hit.id for hit in group]
            for _, client, group in self._db.by_note(hits, lambda hit: doc_id(hit.file_path))
        }

        def score(client: MilvusClient) -> list[Match]:
            ids = wanted[id(client)]
            result = self._engine.call(
                client.search,
                collection,
                data=data,
                anns_field="embedding",
                limit=len(ids),
                filter=in_numbers("id", map(row_number, ids)),
                output_fields=[],
                search_params={"metric_type": DENSE_METRIC},
            )
            return _matches(result[0])

        holding = [client for client in self._db.clients if id(client) in wanted]
        found = {match["id"]: match for matches in self._db.each(score, holding) for match in matches}
        shown = {row["id"]: row for row in self._shown(list(found.values()))}
        rows: list[KeywordRow] = []
        for hit in hits:
            row = shown.get(hit.id)
            if row is not None:
                rows.append({**row, "cosine": row["distance"], "bm25": hit.bm25})
        return rows

    def _shown(self, matches: Sequence[Match]) -> list[ShownRow]:
        """These matched vector rows as hits, in their order: what each shows (read from the
        keyword index, one lookup for all), its id and distance. A row the keyword index lacks
        is left out until the repair has read its note again: it has nothing to show."""
        shown = self._words.rows_of(match["id"] for match in matches)
        hits: list[ShownRow] = []
        for match in matches:
            row = shown.get(match["id"])
            if row is not None:
                hits.append({**row["display"], "id": match["id"], "distance": float(match["distance"])})
        return hits

    @staticmethod
    def _hit(match: dict[str, Any]) -> NoteMatch:
        """A matched metadata row as one flat dict: its fields, id and distance."""
        entity = match["entity"]
        return {
            "id": match["id"],
            "file_path": entity["file_path"],
            "file_hash": entity["file_hash"],
            "distance": float(match["distance"]),
        }

    def answers(self) -> bool:
        """Whether every shard answers a ping now (a stuck Lite server is alive but does not)."""
        return self._engine.answers()

    def ping(self, timeout_s: float = 3.0) -> None:
        """Raises StoreError unless every shard answers within `timeout_s`."""
        self._engine.ping(timeout_s)

    def reopen_due(self, floor: int) -> bool:
        """True when Milvus Lite holds enough rows written since it opened the index to slow
        every search: at least `floor` and REOPEN_SHARE of the index (a server: never)."""
        if not self.is_lite or floor <= 0 or self.rows_written < floor:
            return False
        if self.rows_written == self._reopen_checked_at:
            return False  # nothing written since the last count said no
        due = self.rows_written >= REOPEN_SHARE * self.count_vectors()
        if not due:
            self._reopen_checked_at = self.rows_written
        return due

    def free_bytes(self) -> int | None:
        """Room left on the file system of a Milvus Lite index; None for a server (its own business)."""
        return free_bytes(normalized(self.uri).parent) if self.is_lite else None

    def check_room(self) -> None:
        """Raises IndexFullError when a Milvus Lite index has too little room to write."""
        free = self.free_bytes()
        if free is not None and free < MIN_FREE_BYTES:
            raise IndexFullError(
                f"the file system holding the index {self.uri} is full ({free // 1024} KB free, "
                f"{MIN_FREE_BYTES // 2**20} MB needed); changes wait until space is freed"
            )

    def engine_alive(self) -> bool:
        """False when a Milvus Lite server process of this index has died: only a reopen helps."""
        return self._db.engines_alive()

    @property
    def closed(self) -> bool:
        """True after close(), and after a reopen that failed before it could connect again."""
        return self._db.closed

    def reopen(self, swap: Callable[[], AbstractContextManager[object]] | None = None) -> float:
        """Open the index again in fresh Milvus Lite servers, loaded; returns the seconds taken.

        With `swap` (which holds the caller's other calls back), each shard's new server loads
        beside the running one, which answers meanwhile; the other calls wait only for the
        moment of the switch. Without it (or when that fails: a server that died, too little
        memory for two), the servers stop first and the caller keeps every other call out
        until this returns (Milvus Lite reads every row again). Safe to call again after a failure.
        """
        started = time.monotonic()
        beside = swap is not None and self.is_lite and not self.closed and self._db.engines_alive()
        try:
            if beside and swap is not None:
                self._db.reopen_beside(self._load_twin, swap)
                self._vectors_loaded = True
        except StoreError as exc:
            if self.closed:  # closed meanwhile (the daemon stopping): nothing to reopen
                raise
            logger.warning(
                "reopening the index beside its running servers failed ({}); "
                "reopening it in place, requests wait meanwhile",
                exc,
            )
            beside = False
        if not beside:
            with swap() if swap is not None else contextlib.nullcontext():
                self._reopen_in_place()
        self.rows_written = self._reopen_checked_at = 0
        return time.monotonic() - started

    def _load_twin(self, shard: int, client: MilvusClient) -> None:
        """What a shard's new server loads before it takes over: what the running one has loaded."""
        if shard == 0:
            self._engine.call(client.load_collection, METADATA, timeout=LOAD_DEADLINE_S)
        self._load(client)

    def _reopen_in_place(self) -> None:
        self.close()
        self._vectors_loaded = False
        self._db.open()
        try:
            fresh = self._ensure_collections()
        except MilvusException as exc:
            raise StoreError(f"cannot reopen the Milvus store at {self.uri}: {exc.message}") from exc
        self._open_keywords(fresh)  # a rebuild switched in brings its own (index/rebuild.py)
        self.load_vectors()

    def close(self) -> None:
        self._db.close()

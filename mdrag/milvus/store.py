"""Store: the two Milvus collections (pymilvus), document_vectors and document_metadata."""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger
from pymilvus import MilvusClient, MilvusException

from mdrag.errors import IndexFullError, LayoutOutdatedError, StoreError
from mdrag.files.indexfiles import free_bytes, normalized
from mdrag.keys import doc_id
from mdrag.milvus import hits
from mdrag.milvus.calls import WRITE_BATCH, EngineCalls, batches
from mdrag.milvus.carried import CarriedVectors
from mdrag.milvus.databases import Databases
from mdrag.milvus.filters import EVERY_NOTE, NoteScope, in_filter, metadata_expression
from mdrag.milvus.hits import DenseHits
from mdrag.milvus.keywords import KeywordHit, KeywordIndex
from mdrag.milvus.keywordtext import outdated
from mdrag.milvus.layout import carry, ensure_shards, keyword_gaps, old_vectors, open_keywords
from mdrag.milvus.loading import VectorRowsAccess, VectorsLoading
from mdrag.milvus.rows import KeywordRow, NoteMatch, NoteVector, ShownRow, VectorKey, clip_bytes
from mdrag.milvus.schema import METADATA, VECTORS, identity
from mdrag.milvus.vectorreads import VectorReads
from mdrag.milvus.vectorwrites import VectorWrites
from mdrag.params.scope import Scope

__all__ = ["DenseHits", "Store", "clip_bytes"]

# Milvus Lite keeps a collection in memory as it loaded it, plus every row written since, and
# searches the written (and deleted) ones slower until it loads the file again (figures in
# docs/benchmarks.md). Reopening is due once the rows written since the open are this share of
# the index (and a floor).
REOPEN_SHARE = 0.2
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
        self.keywords_outdated = ""  # ... because it was outdated (made anew at open): why
        self.rebuilt_from_older = False  # its collections, of an older layout, were dropped at open
        self.is_lite = self._db.is_lite
        self._engine = EngineCalls(self._db, uri, timeout_s)
        self._loading = VectorsLoading(self._db, self._engine)
        access = VectorRowsAccess(self._db, self._engine, self._loading.vectors, lambda: self._words)
        self._reads, self._writes = VectorReads(access), VectorWrites(access)
        self._db.open()
        self._identity = identity(model_id, dimension, len(self._db))
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
                carry(carry_to, old_vectors(self._db, self._engine, self._keywords_path, self._loading.load))
            self.drop_all()
            self.rebuilt_from_older = True
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

    def _ensure_collections(self) -> bool:
        """Create the collections or check them; True when they were made now (empty)."""
        return ensure_shards(self._db, self._identity, self.dimension, self.uri)

    def _open_keywords(self, fresh: bool) -> None:
        """Open the keyword index (layout.open_keywords), setting `missing_keywords` and
        `keywords_outdated`."""
        self.keywords_outdated = "" if fresh else outdated(self._keywords_path)
        self.keywords, self.missing_keywords = open_keywords(
            self._keywords_path, fresh, self.keywords_outdated
        )

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
        missing = keyword_gaps(self._words, keys)
        if missing:
            self._words.mark_complete(False)
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
        self._loading.loaded = False
        self.rows_written = self._reopen_checked_at = 0  # the rebuild's own writes count from here
        self._ensure_collections()
        if self.keywords is not None:
            self.keywords.clear()
            self.missing_keywords = False
        else:
            self._open_keywords(fresh=True)

    def load_vectors(self) -> None:
        """Load the vectors collection now (a daemon warms up before its first search)."""
        self._loading.vectors()

    # ---- writes -------------------------------------------------------------------------

    def insert_vectors(self, rows: Sequence[dict[str, Any]]) -> None:
        self.check_room()  # before a note's first write: its metadata follows only if its vectors went in
        self._writes.write("insert", rows)

    def upsert_vectors(self, rows: Sequence[dict[str, Any]]) -> None:
        self.check_room()
        self._writes.write("upsert", rows)

    def delete_vectors_of_paths(self, paths: Sequence[str]) -> None:
        self._writes.delete_of_paths(paths)

    def delete_vectors(self, keys: Sequence[Mapping[str, Any]]) -> None:
        """Delete vector rows by key: each an `id` and the `doc_id` whose shard holds it."""
        self._writes.delete(keys)

    @property
    def rows_written(self) -> int:
        """Vector rows inserted, upserted or deleted since the open (or the last reopen)."""
        return self._writes.rows_written

    @rows_written.setter
    def rows_written(self, count: int) -> None:
        self._writes.rows_written = count

    def upsert_metadata(self, rows: Sequence[dict[str, Any]]) -> None:
        for batch in batches(rows, WRITE_BATCH):
            self._engine.write(self._client.upsert, METADATA, data=list(batch))

    def delete_metadata(self, paths: Sequence[str]) -> None:
        for batch in batches([doc_id(p) for p in paths], WRITE_BATCH * 4):
            self._engine.call(self._client.delete, METADATA, filter=in_filter("doc_id", batch))

    # ---- reads --------------------------------------------------------------------------

    def vector_keys_for_paths(self, paths: Sequence[str]) -> list[VectorKey]:
        """id, doc_id and file_path of every vector row of these files (one query per 500)."""
        return self._reads.keys_for_paths(paths)

    def vectors_for_sections(self, section_ids: Sequence[str]) -> dict[tuple[str, int], list[float]]:
        """Stored embeddings by (section_id, window), so unchanged text is never embedded twice
        (each read once: see VectorReads.for_sections)."""
        return self._reads.for_sections(section_ids)

    def vectors_of_rows(self, rows: Sequence[tuple[str, str]]) -> dict[str, list[float]]:
        """The embeddings of rows by primary key, each given as (its note's path, its id), by id:
        exactly the rows asked for, from the one shard that holds each note (Milvus alone, so a
        lost keyword index is written again without embedding its notes)."""
        return self._reads.embeddings([(doc_id(path), row_id) for path, row_id in rows])

    def window_texts(self, rows: Sequence[ShownRow]) -> dict[str, str]:
        """The text each of these rows embedded, without the heading path that led it, by row id
        (what a hit shows when its note has changed since: see retrieval/hittext.py)."""
        return hits.window_texts(self._words, rows)

    def section_vectors(self, paths: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
        """Every window vector of these files, by (file_path, file_hash), as one matrix per
        version (the version from the keyword index: a row it lacks shows nothing, and is left out)."""
        return self._reads.section_vectors(paths)

    def doc_vectors(self) -> Iterator[NoteVector]:
        """file_path, file_hash and doc_vector of every note, for the all-pairs duplicate scan."""
        for row in self._engine.iterate(METADATA, ["file_path", "file_hash", "doc_vector"]):
            yield NoteVector(
                file_path=row["file_path"], file_hash=row["file_hash"], doc_vector=row["doc_vector"]
            )

    def doc_vectors_of(self, paths: Sequence[str]) -> np.ndarray:
        """The document vectors of these indexed notes, one row each (a failed note has none)."""
        return hits.doc_vectors_of(self._engine, paths)

    def description_vectors(self, paths: Sequence[str]) -> dict[str, np.ndarray]:
        """The frontmatter description's vector of each of these notes that has one, by path."""
        return hits.description_vectors(self._engine, paths)

    def search_doc_vectors(self, vector: np.ndarray, limit: int) -> list[NoteMatch]:
        """The notes whose document vector is nearest (`distance` is the cosine)."""
        return hits.nearest_notes(self._engine, self._client, vector, limit)

    def iter_vector_keys(self) -> Iterator[VectorKey]:
        """id and doc_id of every vector row, for the repair after a crash, with the `file_path`
        and `file_hash` of the note version it belongs to where the keyword index holds the row."""
        yield from self._reads.every_key()

    def metadata_rows(self, fields: Sequence[str]) -> Iterator[dict[str, Any]]:
        """These fields of every note's metadata row (the catalog is loaded from them)."""
        yield from self._engine.iterate(METADATA, list(fields))

    def count_vectors(self) -> int:
        """Vector rows held, in every shard."""
        return self._reads.count()

    def paths_within(self, scope: Scope) -> list[str]:
        """The paths of the notes in `scope` (what a filtered dense search searches among), read
        from their metadata rows."""
        rows = self._engine.query(METADATA, metadata_expression(scope), ["file_path"])
        return [row["file_path"] for row in rows if scope.under(row["file_path"])]

    def search_dense(self, vector: np.ndarray, limit: int, scope: NoteScope | None = None) -> DenseHits:
        """Nearest windows, each with what a hit shows (`distance`: the inner product of unit
        vectors, i.e. the cosine), among the rows of the notes in `scope` when given; a row the
        keyword index lacks is left out (see hits.shown)."""
        collection = self._loading.vectors()
        return hits.search_dense(self._db, self._engine, self._words, collection, vector, limit, scope)

    def keyword_hits(self, text: str, limit: int, scope: Scope = EVERY_NOTE) -> list[KeywordHit]:
        """The `limit` best BM25 rows for `text` among the notes in `scope`, best first (the
        keyword index alone: milliseconds)."""
        return self._words.search(text, limit, scope)

    def unheard(self, text: str, scope: Scope = EVERY_NOTE) -> tuple[str, ...]:
        """The words of `text` that no note in `scope` holds."""
        return self._words.unheard(text, scope)

    def keyword_rows(self, found: Sequence[KeywordHit], vector: np.ndarray) -> list[KeywordRow]:
        """These keyword hits as rows: what a hit shows, its `bm25` and its `cosine` to `vector`,
        best BM25 first; a hit Milvus no longer holds is left out (see hits.keyword_rows)."""
        if not found:
            return []
        return hits.keyword_rows(self._db, self._engine, self._words, self._loading.vectors(), found, vector)

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
                self._db.reopen_beside(self._loading.load_twin, swap)
                self._loading.loaded = True
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

    def _reopen_in_place(self) -> None:
        self.close()
        self._loading.loaded = False
        self._db.open()
        try:
            fresh = self._ensure_collections()
        except MilvusException as exc:
            raise StoreError(f"cannot reopen the Milvus store at {self.uri}: {exc.message}") from exc
        self._open_keywords(fresh)  # a rebuild switched in brings its own (index/rebuild.py)
        self.load_vectors()

    def close(self) -> None:
        self._db.close()

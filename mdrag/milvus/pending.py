"""Pending keywords: the windows of notes read but not embedded yet, searchable by their words."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import tantivy
from loguru import logger

from mdrag.errors import StoreError
from mdrag.files import indexfiles
from mdrag.keys import doc_id
from mdrag.milvus.filters import EVERY_NOTE
from mdrag.milvus.keywords import KeywordIndex, remove_index, stored_json
from mdrag.milvus.keywordtext import query_words
from mdrag.params.scope import Scope

# The shape of the rows kept here (index.rows.window_rows) and how their words are read
# (keywordtext.ANALYZER): a folder of another layout (an upgrade changed either) is removed at
# open and written again by the next run.
LAYOUT = "mdrag-pending-4"
# Reading ahead is a convenience: it stops while its disk has less room than this, which stays
# the index's own (its writes stop at 16 MB free, milvus.store.MIN_FREE_BYTES). A large vault's
# pending index takes tens of MB (~50 MB for 350k windows).
MIN_FREE_BYTES = 256 * 2**20


class _RowsIndex(KeywordIndex):
    """A keyword index whose documents keep their whole row: no Milvus row holds any of it yet."""

    SHOWN = None

    def rows(self, text: str, limit: int, scope: Scope) -> list[tuple[float, dict[str, Any]]]:
        return [(score, stored_json(doc)) for score, doc in self._search(text, limit, scope)]

    def replace_notes(self, rows: Sequence[dict[str, Any]]) -> None:
        """Hold these rows in place of every row their notes had (a note read again)."""
        notes = list(dict.fromkeys(row["doc_id"] for row in rows))

        def change(writer: Any) -> None:
            for note in notes:
                writer.delete_documents_by_term("doc_id", note)
            for row in rows:
                writer.add_document(self._document(row))

        self._commit(change)

    def holds(self, note: str, file_hash: str | None) -> bool:
        searcher = self._index.searcher()
        found = searcher.search(tantivy.Query.term_query(self._index.schema, "doc_id", note), 1).hits
        return any(
            file_hash is None or self.stored_row(searcher.doc(address))["display"]["file_hash"] == file_hash
            for _, address in found
        )


class PendingKeywords:
    """The sections of notes read but not embedded yet, searchable by their words.

    A first index of a large vault is bound by the model (hours on two cores), while reading and
    sectioning its notes takes minutes: the indexer writes each new note's windows here ahead of
    the model (index/prepass.py), and deletes them once the note's real rows are in, so keyword
    search covers every note long before semantic search does. Kept apart from the keyword index
    of the vector rows, whose every document is a row of Milvus (its crash repair goes by that).
    The folder exists while notes wait; a restart finds it and searches it.

    Best effort throughout: the notes are indexed by the model's pass whatever happens here, so a
    failure to write or read this index is logged, the index is given up (its folder removed, to
    be written again by the next run), and neither a search nor the writer ever fails for it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # one change at a time: a discard never meets an add
        self._index: _RowsIndex | None = None
        if path.is_dir() and not path.is_symlink():
            if (path / LAYOUT).is_file():
                try:
                    self._index = _RowsIndex(path)
                except StoreError as exc:
                    logger.warning("the pending keyword index could not be read ({}); written again", exc)
            if self._index is None:
                self._remove()

    @property
    def active(self) -> bool:
        """Whether any note waits here."""
        index = self._index
        return index is not None and index.count > 0

    def add(self, rows: Sequence[dict[str, Any]], added: Callable[[], None] | None = None) -> bool:
        """Hold these window rows (see index.rows.window_rows), replacing their notes' older
        ones, then call `added` (under the lock that a give-up takes too, so a count of the notes
        held never outlives them); False when the index could not take them (it is given up)."""
        with self._lock:
            free = indexfiles.free_bytes(self.path.parent)
            if free is not None and free < MIN_FREE_BYTES:  # also with no rows: its folder goes
                self._give_up(
                    "write", OSError(f"{free // 2**20} MB free on its disk: the index's own writes first")
                )
                return False
            if rows:
                try:
                    if self._index is None:
                        self._index = _RowsIndex(self.path)
                        (self.path / LAYOUT).touch()
                    self._index.replace_notes(rows)
                except (StoreError, OSError, ValueError) as exc:
                    self._give_up("write", exc)
                    return False
            if added is not None:  # also for notes of no rows: there is nothing to find in them
                added()
        return True

    def drop(self, doc_ids: Iterable[str], lost: Callable[[], None] | None = None) -> bool:
        """Forget these notes (their rows are in the index now, or they are gone); False when the
        index could not: it is given up, with the notes still waiting in it, and `lost` is called
        (under the lock `add` holds)."""
        with self._lock:
            if self._index is None:
                return True
            try:
                self._index.delete("doc_id", doc_ids)
            except (StoreError, OSError, ValueError) as exc:
                self._give_up("update", exc)
                if lost is not None:
                    lost()
                return False
        return True

    def discard(self) -> None:
        """Remove the folder: no note waits any more."""
        with self._lock:
            self._index = None
            self._remove()

    def holds(self, path: str, file_hash: str | None = None) -> bool:
        """Whether this version of this note waits here (read by an earlier pass, unchanged); with
        no `file_hash`, whether any version does (so the note may be opened to compare)."""
        index = self._index
        try:
            return index is not None and index.holds(doc_id(path), file_hash)
        except ValueError:
            return False

    def rows(self, text: str, limit: int, scope: Scope = EVERY_NOTE) -> list[tuple[float, dict[str, Any]]]:
        """The `limit` best window rows for `text`, each with its BM25 score, as `KeywordIndex.search`
        (none when the index is gone or cannot answer: the model's pass indexes those notes)."""
        index = self._index
        try:
            return [] if index is None else index.rows(text, limit, scope)
        except (StoreError, ValueError) as exc:  # json's errors are ValueErrors
            logger.warning("the pending keyword index could not answer: {}", exc)
            return []

    def unheard(self, text: str, scope: Scope = EVERY_NOTE) -> set[str]:
        """The words of `text` no waiting note holds (all of them when none waits)."""
        index = self._index
        every = set(query_words(text))
        try:
            return every if index is None else set(index.unheard(text, scope))
        except (StoreError, ValueError):
            return every

    def _give_up(self, what: str, exc: Exception) -> None:
        logger.warning(
            "could not {} the pending keyword index {} ({}); notes not indexed yet are found once the "
            "model reaches them",
            what,
            self.path,
            exc,
        )
        self._index = None
        self._remove()

    def _remove(self) -> None:
        try:
            remove_index(self.path)
        except StoreError as exc:  # a link in its place: the service refuses it at open
            logger.warning("{}", exc)

"""Keywords: BM25 over the vector rows and what each of their hits shows, in tantivy files by the index."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import shutil
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tantivy

from mdrag import spelling
from mdrag.errors import StoreError
from mdrag.milvus.filters import EVERY_NOTE
from mdrag.milvus.keywordtext import (
    WORDS,
    encodable,
    opened_index,
    parsed_terms,
    prefix_pattern,
    query_words,
    scope_encodable,
)
from mdrag.milvus.rows import KeptRow
from mdrag.params.scope import Scope
from mdrag.text import unspaced

# The writer's memory budget: tantivy's floor per thread. Writes come in batches of a few
# thousand windows, each committed at once, so a larger arena would only hold memory.
WRITER_HEAP_BYTES = 15_000_000
# Marks a keyword index whose every row is in. A new store's empty index has it at once; one made
# anew over lost or unreadable files, or found lacking rows, has it removed until the repair has
# read their notes again, so a repair cut short (a kill, a deadline) is done again at the next open.
COMPLETE = "mdrag-complete"


# What a vector row's document keeps for its hit (index.rows.window_rows makes them): the fields
# the store leaves out of Milvus, whose Lite engine holds every field of every row in memory.
SHOWN_FIELDS = ("display", "embedded_text")
CORRECTED = 3  # words of a query spelling tries at most (each reads a few hundred term counts)
STEM_LETTERS = 4  # the shortest stem a correction may search


@dataclass(frozen=True)
class KeywordHit:
    """One row the keyword search found: its id, its note (which shard holds it), its BM25 score."""

    id: str
    file_path: str
    bm25: float


class KeywordIndex:
    """BM25 over the text each vector row embedded, one tantivy document per row, which also
    keeps what the row's hit shows (`SHOWN`): Milvus holds only what search and filters need.

    Written only by the store, after the rows went into Milvus; every write is committed before
    it returns, so a clean stop leaves both alike. After an unclean stop, or when the files are
    missing or unreadable, the notes whose rows it lacks are read again (Indexer.repair): Milvus
    holds no text to build it from."""

    # The fields of a row each document keeps, read back by `rows_of`; None: the whole row.
    SHOWN: tuple[str, ...] | None = SHOWN_FIELDS

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # one writer at a time (tantivy's own lock is per process)
        self._index = self._open()

    @classmethod
    def anew(cls, path: Path) -> KeywordIndex:
        """An empty index at `path`, whatever was there (files tantivy could not read)."""
        _remove(path)
        return cls(path)

    @staticmethod
    def complete_at(path: Path) -> bool:
        """Whether an index at `path` holds every row it was given (no build of it was cut short)."""
        return (path / COMPLETE).is_file()

    def _open(self) -> Any:
        if self.path.is_symlink():
            raise StoreError(
                f"the keyword index {self.path} is a link; mdrag keeps a folder of its own there"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            return opened_index(self.path)
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot open the keyword index {self.path}: {exc}") from exc

    @property
    def count(self) -> int:
        """Rows held."""
        return int(self._index.searcher().num_docs)

    def ids(self) -> list[str]:
        """Every row's id, sorted (for checks: it reads every stored document)."""
        searcher = self._index.searcher()
        found = searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits
        return sorted(searcher.doc(address)["id"][0] for _, address in found)

    def clear(self) -> None:
        """Remove every row: the files too, so an unreadable index is made anew."""
        with self._lock:
            _remove(self.path)
            self._index = self._open()
            self.mark_complete(True)

    def mark_complete(self, complete: bool) -> None:
        """Say whether the index holds every row of the store (see COMPLETE)."""
        marker = self.path / COMPLETE
        if complete:
            marker.touch()
        else:
            marker.unlink(missing_ok=True)

    def write(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Add these rows (each `id`, `doc_id`, `file_path`, `tags`, `embedded_text` and the
        fields of `SHOWN`), replacing any row of the same id (an upsert, or a batch written again
        after an outage)."""
        if not rows:
            return

        def change(writer: Any) -> None:
            for row in rows:
                writer.delete_documents_by_term("id", row["id"])
                writer.add_document(self._document(row))

        self._commit(change)

    def _document(self, row: Mapping[str, Any]) -> Any:
        document = tantivy.Document(
            id=row["id"],
            doc_id=row["doc_id"],
            section_id=row["section_id"],
            file_path=row["file_path"],
            text=row["embedded_text"],
        )
        for tag in row.get("tags") or ():
            document.add_text("tags", tag)
        shown = row if self.SHOWN is None else {field: row[field] for field in self.SHOWN}
        # surrogatepass: a path of undecodable bytes keeps its lone surrogates (see pathtext).
        document.add_bytes("row", json.dumps(shown, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        return document

    @staticmethod
    def stored_row(document: Any) -> KeptRow:
        """What a document keeps of its row (`SHOWN`)."""
        row: KeptRow = stored_json(document)
        return row

    def rows_of(self, ids: Iterable[str]) -> dict[str, KeptRow]:
        """What these rows keep (`SHOWN`), by id; a row the index lacks is left out. One
        term-set lookup, then each stored document: ~0.05 ms a row."""
        return self._rows_where("id", ids, one_each=True)

    def rows_of_sections(self, section_ids: Iterable[str]) -> dict[str, KeptRow]:
        """What every row of these sections keeps (`SHOWN`), by id (a section repeated across
        notes has a row in each)."""
        return self._rows_where("section_id", section_ids, one_each=False)

    def _rows_where(self, field: str, values: Iterable[str], one_each: bool) -> dict[str, KeptRow]:
        wanted = [value for value in dict.fromkeys(values) if encodable(value)]
        if not wanted:
            return {}
        searcher = self._index.searcher()
        query = tantivy.Query.term_set_query(self._index.schema, field, wanted)
        try:
            # A value names one row (`one_each`) or any number: then they are counted first.
            limit = len(wanted) if one_each else searcher.search(query, 1, count=True).count
            found = searcher.search(query, max(1, limit), count=False).hits
            documents = [searcher.doc(address) for _, address in found]
            return {document["id"][0]: self.stored_row(document) for document in documents}
        except ValueError as exc:  # json's errors are ValueErrors too
            raise StoreError(f"cannot read rows of the keyword index {self.path}: {exc}") from exc

    def every_row(self) -> Iterator[dict[str, Any]]:
        """What every row keeps, with its id (for benches: it reads every stored document)."""
        searcher = self._index.searcher()
        for _, address in searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits:
            document = searcher.doc(address)
            yield {"id": document["id"][0], **self.stored_row(document)}

    def delete(self, field: str, values: Iterable[str]) -> None:
        """Delete the rows whose `field` (`id` or `doc_id`) is one of `values`."""
        values = list(values)
        if not values:
            return

        def change(writer: Any) -> None:
            for value in values:
                writer.delete_documents_by_term(field, value)

        self._commit(change)

    def _commit(self, change: Any) -> None:
        with self._lock:
            try:
                # A writer per change, dropped after its commit: held, it would keep its arena.
                writer = self._index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=1)
                try:
                    change(writer)
                    writer.commit()
                except BaseException:
                    writer.rollback()
                    raise
                finally:
                    writer.wait_merging_threads()
                    del writer
            except (OSError, ValueError) as exc:
                raise StoreError(f"cannot write the keyword index {self.path}: {exc}") from exc
            self._index.reload()  # read-your-writes: the next search sees this commit

    def unheard(self, text: str, scope: Scope = EVERY_NOTE) -> tuple[str, ...]:
        """The words of `text` (lower case, in order) that no row holds, as the index reads them: a
        stop word is never one, and a word is held when a row holds its stem ("restoring" is held
        by "restore"). A compound is held however the notes spell it: "wifi" by notes of "Wi-Fi"
        (the phrase "wi fi"), the "wi" and "fi" of "wi-fi" by notes of "wifi"; a run of a script
        written without spaces by a row holding any pair of its characters side by side (as the
        search matches it). Only the rows in `scope` count. A term lookup and a
        one-row search a word, a few more for a word no row holds: 1.8 ms a query at the median
        at 353k rows (a word 112k rows hold takes 0.6 ms); with a filter, milliseconds at 700k
        rows with a path, whose prefix is a pattern."""
        if not encodable(text) or not scope_encodable(scope):
            return ()  # nothing to look up, or a filter no row meets: the search says that instead
        index = self._index
        searcher = index.searcher()
        try:
            filters = self._filters(scope)
        except ValueError:
            filters = []  # a prefix too long for a pattern: the words of the whole index, then

        def found(query: Any) -> bool:
            return bool(searcher.search(_within(query, filters), 1, count=False).hits)

        schema = index.schema

        def term(text: str) -> Any:
            return tantivy.Query.term_query(schema, "text", text)

        @functools.cache
        def held(word: str) -> bool:
            if unspaced.holds(word):  # a run of such a script: held when a row holds any of its
                return found(index.parse_query(parsed_terms(word), ["text"]))  # pairs ("如何创建")
            terms = WORDS.analyze(word)
            # doc_freq counts a deleted row's terms until its segment is merged away: a term it
            # never saw is unheard at once; one it counts, only if some live row holds it.
            if not all(searcher.doc_freq("text", t) > 0 for t in terms):
                return False
            if not terms:
                return True
            if not filters:  # each term in some row, as the search matches any of them
                return all(found(term(t)) for t in terms)
            return found(tantivy.Query.boolean_query([(tantivy.Occur.Must, term(t)) for t in terms]))

        def phrase(first: str, second: str) -> bool:
            # A stop word may be one half ("log in"), never both.
            if not (WORDS.analyze(first + " " + second) and held(first) and held(second)):
                return False
            return found(index.parse_query(f'"{first} {second}"', ["text"]))

        tokens = query_words(text)
        missing = [word for word in dict.fromkeys(tokens) if not held(word)]
        if not missing:
            return ()  # the common case: one term lookup a word, no pair or phrase lookups
        apart: set[str] = set()  # the halves of a compound the query spells apart and the notes together
        for first, second in itertools.pairwise(tokens):
            joined = first + second  # one too long for the index (over 40 letters) is held by none
            if unspaced.holds(joined):
                continue  # a run is no half of a compound
            if (first in missing or second in missing) and WORDS.analyze(joined) and held(joined):
                apart.update((first, second))

        def compound(word: str) -> bool:  # held as two words side by side (a run never is one)
            return not unspaced.holds(word) and any(
                phrase(word[:cut], word[cut:]) for cut in range(1, len(word))
            )

        return tuple(word for word in missing if word not in apart and not compound(word))

    def _filters(self, scope: Scope) -> list[Any]:
        """Queries that keep the rows in `scope` (none for every note): tantivy's translation of
        it. Each scores nothing, so a BM25 score stays the text's. Raises ValueError for a prefix
        too long for tantivy's pattern (about a thousand characters)."""
        schema = self._index.schema
        filters = []
        if scope.tags:
            tagged = tantivy.Query.term_set_query(schema, "tags", list(scope.tags))
            filters.append(tantivy.Query.const_score_query(tagged, 0.0))
        if scope.path_prefix:
            under = tantivy.Query.regex_query(schema, "file_path", prefix_pattern(scope.path_prefix))
            filters.append(tantivy.Query.const_score_query(under, 0.0))
        return filters

    def search(self, text: str, limit: int, scope: Scope = EVERY_NOTE) -> list[KeywordHit]:
        """The `limit` best rows for `text` (any term may match; BM25 with tantivy's defaults)
        among the rows in `scope`."""
        return [
            KeywordHit(doc["id"][0], doc["file_path"][0], score)
            for score, doc in self._search(text, limit, scope)
        ]

    def _search(self, text: str, limit: int, scope: Scope) -> list[tuple[float, Any]]:
        """The best documents for `text` with their BM25 scores (see `search`). A word no row
        holds is searched as typed and as the word one slip away that rows hold (spelling)."""
        if not encodable(text) or not scope_encodable(scope):
            return []  # nothing to match, or a filter no stored path or tag can meet
        index = self._index
        terms = parsed_terms(" ".join([text, *self._corrections(text, index.searcher())]))
        if not terms:
            return []
        try:
            query = index.parse_query(terms, ["text"])
        except ValueError:
            return []  # nothing left to match once stop words are dropped ("and or not")
        after = ""  # a prefix the index cannot take as a pattern is matched on the hits instead
        try:
            filters = self._filters(scope)
        except ValueError:
            filters, after = self._filters(dataclasses.replace(scope, path_prefix="")), scope.path_prefix
        try:
            searcher = index.searcher()
            hits = searcher.search(_within(query, filters), limit).hits
            found = []
            for score, address in hits:
                doc = searcher.doc(address)
                if doc["file_path"][0].startswith(after):
                    found.append((float(score), doc))
        except ValueError as exc:
            raise StoreError(f"the keyword index {self.path} could not answer {text!r}: {exc}") from exc
        return found

    @staticmethod
    def _corrections(text: str, searcher: Any) -> list[str]:
        """For each of the first CORRECTED words of `text` that no row holds, the word one slip
        away that most rows hold (spelling.corrected), where there is one: "minfy" also searches
        "minify". A neighbour whose stem is under STEM_LETTERS letters is none ("minly" is "min",
        a word of every other note). About 2 ms a word tried, so a pasted page of unheard words
        costs no more than three; a held word costs one term lookup."""

        @functools.cache
        def analyzed(word: str) -> tuple[str, ...]:
            return tuple(WORDS.analyze(word))

        @functools.cache
        def rows_holding(term: str) -> int:
            return int(searcher.doc_freq("text", term))

        def notes_holding(word: str) -> int:
            return min(map(rows_holding, analyzed(word)), default=1)  # a stop word: held

        def counted(word: str) -> int:
            terms = analyzed(word)
            return notes_holding(word) if terms and all(len(t) >= STEM_LETTERS for t in terms) else 0

        unheard = (
            word
            for word in dict.fromkeys(query_words(text))
            if spelling.correctable(word) and notes_holding(word) == 0
        )
        found = (
            spelling.corrected(word, notes_holding, counted) for word in itertools.islice(unheard, CORRECTED)
        )
        return [word for word in found if word is not None]


def stored_json(document: Any) -> Any:
    """The row a document keeps, as it was written (`KeywordIndex.SHOWN` of it)."""
    return json.loads(bytes(document["row"][0]).decode("utf-8", "surrogatepass"))


def _within(query: Any, filters: list[Any]) -> Any:
    """`query` among the rows every one of `filters` keeps."""
    if not filters:
        return query
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, q) for q in (query, *filters)])


def remove_index(path: Path) -> None:
    """Remove a keyword index's folder, whatever it holds (a link in its place is refused)."""
    _remove(path)


def _remove(path: Path) -> None:
    """Remove an index's folder (a link to one is refused when it is opened, never followed)."""
    if path.is_symlink():
        raise StoreError(f"the keyword index {path} is a link; mdrag keeps a folder of its own there")
    shutil.rmtree(path, ignore_errors=True)

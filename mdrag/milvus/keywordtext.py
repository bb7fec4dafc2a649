"""Keyword text: the keyword index's schema and analyzer, and a query's words read as it reads them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import tantivy

from mdrag.params.scope import Scope
from mdrag.text import unspaced

# What tantivy's regex syntax (Rust's regex crate) treats as syntax: escaped in a path prefix.
REGEX_META = re.compile(r"([\\.+*?()|\[\]{}^$#&\-~])")

# The text's analyzer, as Milvus's `english` one was: words lowered, English stop words dropped
# ("a", "the": else a query's article matches most rows), stems ("restoring backups" matches
# "restore a backup"), and a script written without spaces a character at a time (unspaced.py).
# tantivy keeps only its name in its files (it is registered at every open): a change to it takes
# a new name, whose schema differs, so the index is built anew (its notes read again, none
# embedded again).
ANALYZER_FAMILY = "mdrag_english"
ANALYZER = ANALYZER_FAMILY + "_2"
# Splits a query term where the index splits text: runs of letters, marks and digits, and each
# character of a script written without spaces.
SPLITTER = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(unspaced.TOKEN_PATTERN)).build()


def analyzer() -> Any:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(unspaced.TOKEN_PATTERN))
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def keyword_schema() -> Any:
    schema = tantivy.SchemaBuilder()
    schema.add_text_field("text", stored=False, tokenizer_name=ANALYZER)
    schema.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    schema.add_text_field("doc_id", stored=False, tokenizer_name="raw", index_option="basic")
    # The row's section (Milvus keeps only its key, note and vector): an unchanged section's
    # vector is found by it, so its text is never embedded twice (Store.vectors_for_sections).
    schema.add_text_field("section_id", stored=False, tokenizer_name="raw", index_option="basic")
    schema.add_text_field("file_path", stored=True, tokenizer_name="raw", index_option="basic")
    schema.add_text_field("tags", stored=False, tokenizer_name="raw", index_option="basic")
    # What a hit shows, as JSON (KeywordIndex.SHOWN); stored, never searched.
    schema.add_bytes_field("row", stored=True)
    return schema.build()


def older_analyzer(path: Path) -> str:
    """The name of the analyzer an older mdrag wrote the keyword index at `path` with, which read
    words another way (another of mdrag's analyzers), or "" (this one's, none there, unreadable:
    opening it says which). Such an index is made anew, not repaired; an older layout's rows are
    still read from it (layout.old_vectors)."""
    try:
        schema = json.loads((path / "meta.json").read_text(encoding="utf-8"))["schema"]
        text = next(field for field in schema if field["name"] == "text")
        name = str(text["options"]["indexing"]["tokenizer"])
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return ""
    return name if name.startswith(ANALYZER_FAMILY) and name != ANALYZER else ""


def by_older_mdrag(path: Path) -> bool:
    """Whether an older mdrag wrote the keyword index at `path` (`older_analyzer`)."""
    return bool(older_analyzer(path))


def deleted_rows(path: Path) -> int:
    """How many deleted rows the keyword index at `path` still holds, when they outnumber its
    live ones, else 0. Tantivy keeps a deleted row in its segment until that segment is merged,
    and counts it in BM25's word statistics meanwhile; a large segment is seldom merged, so a
    mass removal (a folder moved out, another root served) would skew every score for good."""
    try:
        segments = json.loads((path / "meta.json").read_text(encoding="utf-8"))["segments"]
        rows = sum(int(segment["max_doc"]) for segment in segments)
        deleted = sum(int((segment.get("deletes") or {}).get("num_deleted_docs", 0)) for segment in segments)
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    return deleted if deleted > rows - deleted else 0


def outdated(path: Path) -> str:
    """Why the keyword index at `path` is written again from the notes at open, in words, or ""."""
    if by_older_mdrag(path):
        return "for this version of mdrag, which reads words another way"
    if deleted := deleted_rows(path):
        return f"without the {deleted} rows deleted from it, which still weighed in its word statistics"
    return ""


def opened_index(path: Path) -> Any:
    """The tantivy index in the folder `path` (made there if none), its analyzer registered; one
    an older mdrag wrote is read as it was written (for an older layout's rows: old_vectors)."""
    if older := older_analyzer(path):
        index = tantivy.Index.open(str(path))
        index.register_tokenizer(older, analyzer())
        return index
    index = tantivy.Index(keyword_schema(), path=str(path), reuse=True)
    index.register_tokenizer(ANALYZER, analyzer())
    return index


# The same analysis, for telling whether the index holds a query's word (KeywordIndex.unheard).
WORDS = analyzer()


def parsed_terms(text: str) -> str:
    """The query as tantivy's parser reads it: each term's tokens quoted, so a term of several is
    a phrase (`Get-ChildItem` must match those words in that order) and nothing is read as
    syntax (AND, OR, NOT, `field:`, `^`); the parser's analyzer then lowers, drops stop words
    and stems as the index did. A run of a script written without spaces is asked as its pairs
    of neighbouring characters, each a phrase of two (unspaced.py)."""
    parts = []
    for term in unspaced.spaced(text).split():
        tokens = SPLITTER.analyze(term)
        if tokens:
            parts.append('"' + " ".join(tokens) + '"')
    return " ".join(parts)


def encodable(text: str) -> bool:
    """Whether tantivy can take `text` (a lone surrogate is no UTF-8; no stored path holds one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def prefix_pattern(prefix: str) -> str:
    """A regex matching every path that starts with `prefix` (any character, newline included)."""
    return "(?s)" + REGEX_META.sub(r"\\\1", prefix) + ".*"


def scope_encodable(scope: Scope) -> bool:
    """Whether every string of `scope` is one the index can hold (else no row is in it)."""
    return all(map(encodable, (scope.path_prefix, *scope.tags)))


def query_words(text: str) -> list[str]:
    """The words of `text` as `KeywordIndex.unheard` names them (lower case, in order). A run of a
    script written without spaces is one, as typed: no dictionary says where its words part."""
    words: list[str] = []
    for part, run in unspaced.parts(text):
        words += [part.lower()] if run else [token.lower() for token in SPLITTER.analyze(part)]
    return words

"""A search candidate: one section window as the store returns it, then what the search adds to it."""

from __future__ import annotations

from typing import cast

from mdrag.milvus import ShownRow


class Candidate(ShownRow, total=False):
    """A search candidate: a window the store's dense or keyword search found (its row id, match
    distance and what it shows: `ShownRow`), then what the search adds.

    Made by search (and ahead, for notes not embedded yet); relevance, snippets and hittext
    read and add to it."""

    cosine: float  # of the query vector and the row's (the best window's, per section)
    bm25: float  # keyword rows: the BM25 score
    description: float  # described: the cosine of the query and its note's frontmatter description
    section_text: str  # hittext: read from the note (or the row's embedded text when stale)
    score: float  # relevance: the candidate's score in [0, 1]
    features: tuple[float, ...]  # relevance: its evidence, in relevance.FEATURES order
    pending: bool  # a note read ahead of the model, embedded for this query (retrieval/ahead.py)
    stands_for: tuple[str, str, int]  # readable: shown for its note's names, whose score it has


SectionKey = tuple[str, str, int]

# The candidate lists each mode asks for, in the order search makes them.
MODE_LISTS = {"dense": ("dense",), "keyword": ("keyword",), "hybrid": ("dense", "keyword")}


def section_key(row: Candidate) -> SectionKey:
    """What makes a candidate one: its note, its section id and the section's start in the note."""
    return (row["file_path"], row["section_id"], row["start_position"])


def as_candidate(row: ShownRow) -> Candidate:
    """The store's row as a candidate: the same dict, before the search adds to it. Every key a
    Candidate adds is optional, so the row already is one; the type checker cannot see it (a
    row's type leaves room for keys it does not declare, so `{**row}` is refused too), hence the
    cast here, once."""
    return cast(Candidate, row)

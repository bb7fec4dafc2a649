"""A search candidate: one section window as the store returns it, then what the search adds to it."""

from __future__ import annotations

from typing import TypedDict


class Candidate(TypedDict, total=False):
    """A search candidate: one section window as the store returns it, then what the search adds.

    Made by search (and ahead, for notes not embedded yet); relevance, snippets and hittext
    read and add to it. A row's display fields (index.rows writes them) and its id/distance come
    from the store; `cosine` and `bm25` from the store too (a dense row's `distance` is its
    cosine), `section_text` from hittext, `score` and `features` from relevance."""

    # the store's row: its id, match distance and display fields
    id: str
    distance: float
    section_id: str
    file_path: str
    file_hash: str
    window_index: int
    section_heading: str
    heading_level: int
    heading_path: str
    section_type: str
    chunk_index: int
    token_count: int
    start_position: int
    end_position: int
    window_start: int | None  # absent on an older layout's rows
    window_end: int | None
    start_line: int
    end_line: int
    anchor: str
    title: str
    tags: list[str] | None
    # added by the search
    cosine: float  # of the query vector and the row's (the best window's, per section)
    bm25: float  # keyword rows: the BM25 score
    section_text: str  # hittext: read from the note (or the row's embedded text when stale)
    score: float  # relevance: the candidate's score in [0, 1]
    features: tuple[float, ...]  # relevance: its evidence, in relevance.FEATURES order
    pending: bool  # a note read ahead of the model, embedded for this query (retrieval/ahead.py)


SectionKey = tuple[str, str, int]

# The candidate lists each mode asks for, in the order search makes them.
MODE_LISTS = {"dense": ("dense",), "keyword": ("keyword",), "hybrid": ("dense", "keyword")}


def section_key(row: Candidate) -> SectionKey:
    """What makes a candidate one: its note, its section id and the section's start in the note."""
    return (row["file_path"], row["section_id"], row["start_position"])

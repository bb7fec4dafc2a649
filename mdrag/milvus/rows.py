"""Rows: the shapes of the rows the store takes (from the indexer) and returns (to the readers)."""

from __future__ import annotations

from typing import Any, TypedDict

MAX_TEXT_BYTES = 65_000  # VARCHAR limit is 65,535 bytes


def clip_bytes(text: str, limit: int = MAX_TEXT_BYTES) -> str:
    """`text` cut to at most `limit` bytes of UTF-8, on a character's boundary (what a VARCHAR holds)."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


# TypedDicts are plain dicts at run time: naming a row's keys changes nothing the engine sees.
# A key some rows lack is declared in a `total=False` class (NotRequired is Python 3.11's).


class _ShownAlways(TypedDict):
    """The fields every shown row has (see `Shown`)."""

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
    start_line: int
    end_line: int
    anchor: str
    title: str
    tags: list[str] | None


class Shown(_ShownAlways, total=False):
    """What a vector row's hit shows: index.rows.window_rows makes it, the keyword index keeps it
    (Milvus holds only a row's key, note and vector)."""

    window_start: int | None  # file offsets of the text the window embedded; absent on an older
    window_end: int | None  # layout's rows
    aliases: list[str]  # the note's other names (Document.aliases); absent on an older layout's rows


class ShownRow(Shown):
    """A window a search found (Store.search_dense): what it shows, its row id and its match
    distance (the inner product of unit vectors: the cosine)."""

    id: str
    distance: float


class KeywordRow(ShownRow):
    """A window the keyword search found (Store.keyword_rows): its `bm25` score, and its `cosine`
    to the query vector (its `distance` too)."""

    cosine: float
    bm25: float


class KeptRow(TypedDict):
    """What the keyword index keeps of a vector row beside its terms (keywords.SHOWN_FIELDS)."""

    display: Shown
    embedded_text: str


class WindowRow(KeptRow):
    """One section window of a note as the indexer makes it, before its vector."""

    id: str  # keys.row_id: hex, its number is the Milvus primary key
    section_id: str
    doc_id: str
    file_path: str
    file_hash: str
    window_index: int
    tags: list[str]


class VectorRow(WindowRow):
    """A window row with its vector: what the indexer writes (Store.insert_vectors)."""

    embedding: list[float]


class RowKey(TypedDict):
    """A vector row's key: its id and the note (`doc_id`) whose shard holds it."""

    id: str
    doc_id: str


class VectorKey(RowKey, total=False):
    """A vector row's key with its note's path, and the version it belongs to where known."""

    file_path: str
    file_hash: str


class MetadataRow(TypedDict):
    """A note's one metadata row: what the catalog keeps, its frontmatter and document vector."""

    doc_id: str
    file_path: str
    file_hash: str
    size: int
    status: str  # "indexed" or "failed"
    error_message: str
    warning: str
    frontmatter: dict[str, Any]
    title: str
    tags: list[str]
    topics: list[str]
    keywords: list[str]
    summary: str
    llm_hints: dict[str, Any]
    links: dict[str, Any]  # {"items": [Link, ...]}
    language: str
    word_count: int
    section_count: int
    has_frontmatter: bool
    created_at: float
    modified_at: float
    indexed_at: float
    doc_vector: list[float]
    description_vector: str  # its frontmatter description's, packed (packed.py); "" for none


class NoteVector(TypedDict):
    """A note's document vector and the version it was made from (the duplicate scan's rows)."""

    file_path: str
    file_hash: str
    doc_vector: list[float]


class NoteMatch(TypedDict):
    """A note a document-vector search found: `distance` is the cosine, `id` its doc_id."""

    id: str
    file_path: str
    file_hash: str
    distance: float


class Match(TypedDict):
    """A vector row a search matched, as the engine answers: its id (hex) and distance."""

    id: str
    distance: float

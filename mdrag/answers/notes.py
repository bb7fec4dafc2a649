"""Note answers: links, similar and related notes, duplicates, a context pack, a note's text, gaps."""

from __future__ import annotations

from typing import TypedDict

from mdrag.answers.search import ClosestNote, Confidence, Freshness, SearchAnswer, SourceReference
from mdrag.answers.status import IndexStatus, ProgressSnapshot

# ---- a note's links (notes.links), as `note` and `related` give them ------------------------------


class Link(TypedDict):
    """A link a note's body makes, unresolved (notes.links.extract_links; the catalog keeps them)."""

    kind: str  # "wikilink" or "markdown"
    target: str
    anchor: str
    alias: str
    line: int


class ResolvedLink(Link):
    """A link with the indexed note it resolves to: None when broken."""

    path: str | None


class OutgoingLink(ResolvedLink):
    broken: bool  # path is None


class Backlink(Link):
    """A link another note makes to this one; `path`: that other note."""

    path: str


# ---- similar, duplicates, related --------------------------------------------------------------


class SimilarNote(TypedDict):
    """A note like the one asked about, scored 0-100 (retrieval.similarity)."""

    path: str
    score: int
    tier: str  # "near-duplicate", "closely related" or "related"
    doc_cosine: float


class SimilarAnswer(TypedDict):
    """`similar`: the notes most like a note (or a draft: `note` None), best first."""

    note: str | None
    floor: int  # the lowest score listed
    results: list[SimilarNote]


class DuplicatePair(TypedDict):
    a: str
    b: str  # a < b: a pair reads the same on every run
    score: int
    tier: str
    doc_cosine: float


class DuplicateGroup(TypedDict):
    """The notes that the pairs join, each group once."""

    notes: list[str]
    best_score: int
    pairs: int


class DuplicatesAnswer(TypedDict):
    """`duplicates`: the pairs scoring at least min_score, and the groups they join."""

    min_score: int
    total_pairs: int
    total_groups: int  # every group, though `groups` holds the first `limit`
    complete: bool  # whether the scan covered every candidate pair
    pairs: list[DuplicatePair]
    groups: list[DuplicateGroup]


class RelatedNote(TypedDict):
    """One other note and every way it relates: "links to", "linked from", "similar"."""

    path: str
    relations: list[str]
    score: int | None  # with "similar" only
    tier: str | None


class RelatedAnswer(TypedDict):
    """`related`: a note's links out and in, its similar notes, and each other note labelled."""

    note: str
    outgoing: list[OutgoingLink]
    backlinks: list[Backlink]
    similar: list[SimilarNote]
    related: list[RelatedNote]
    broken_links: list[OutgoingLink]


# ---- context, note, gaps -------------------------------------------------------------------------


class ContextSource(SourceReference):
    """A section in a context pack: its number in the pack, its score and where it lives."""

    n: int
    score: float


class _ContextPack(TypedDict):
    query: str
    confidence: Confidence
    message: str
    closest: list[ClosestNote]  # when nothing went in
    tokens: int
    max_tokens: int
    sources: list[ContextSource]
    context: str


class ContextPack(_ContextPack, total=False):
    """`context`: the pack (retrieval.context.build_context); `freshness` and `indexing` from the
    daemon only."""

    freshness: Freshness
    indexing: ProgressSnapshot | None


class NoteText(TypedDict):
    """`note`: an indexed note's text as on disk now, and whether the index holds that version."""

    path: str
    text: str
    fresh: bool
    status: str
    links: list[ResolvedLink]


class Gap(TypedDict):
    """A search the notes could not answer (retrieval.gaps); `gap_status` answers one."""

    query: str
    count: int
    status: str  # "open", "deferred" or "addressed"
    first_seen: float
    last_seen: float
    best_score: float | None
    possibly_addressed_by: str | None
    possibly_addressed_at: float | None


class GapsAnswer(TypedDict):
    gaps: list[Gap]


# What Service.handle answers, whichever read operation it was asked (a reader knows which it asked,
# and names that one: `result: SimilarAnswer = route.call("similar", ...)`).
ServiceAnswer = (
    SearchAnswer
    | IndexStatus
    | SimilarAnswer
    | DuplicatesAnswer
    | RelatedAnswer
    | ContextPack
    | NoteText
    | GapsAnswer
    | Gap
)

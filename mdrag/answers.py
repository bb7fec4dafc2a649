"""Answers: the shapes of what the operations answer, as they cross the socket (JSON objects).

Declared once here, in the base, so that the modules that build an answer (the searcher, the
service, the daemon) and those that read one (the client, the CLI, the page, the MCP server)
name the same keys. A search process imports them for the type checker only: building these
classes costs it ~3 ms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict, TypeGuard


class ProgressSnapshot(TypedDict):
    """How far an indexing run is (mdrag.progress.Progress.to_dict)."""

    state: str  # "scanning", "indexing" or "done"
    notes_done: int
    notes_total: int
    done: int
    total: int
    unit: str
    rate: float | None
    eta_s: float | None
    started_at: float
    keyword_notes: int  # notes keyword search finds: those done, and those read ahead of the model


class Freshness(TypedDict):
    """How far the index is behind the files: changes waiting, and when the last was applied."""

    queue_depth: int
    last_change_applied_at: float | None


class Snippet(TypedDict):
    """The window of a hit that matched, its lines, and (start, end) of the query's words in it."""

    text: str
    start_line: int
    end_line: int
    highlights: list[list[int]]


class SourceReference(TypedDict):
    """Where a hit lives: path, lines, heading path and a `path#slug` link."""

    path: str
    start_line: int
    end_line: int
    heading_path: str
    anchor: str


class HitMetadata(TypedDict):
    title: str
    tags: list[str]
    section_type: str
    token_count: int
    start_position: int
    end_position: int
    section_id: str
    row_id: Any  # the store's id of the row (an int on Lite)
    waiting: bool  # a note found by its words while the model has not reached it yet (first index)


class Evidence(TypedDict):
    """With --explain: what a hit's (or a dropped candidate's) score was made of."""

    similarity: float | None
    score: float
    evidence: dict[str, float]  # feature name (relevance.FEATURES) -> value
    dense_rank: int | None
    keyword_rank: int | None
    score_rank: int | None


class Hit(TypedDict):
    """One section that matched (retrieval.search.Hit.to_dict)."""

    file_path: str
    section_heading: str
    heading_level: int
    chunk_index: int
    confidence_score: float
    section_text: str
    snippet: Snippet
    start_line: int
    end_line: int
    heading_path: str
    source: SourceReference
    metadata: HitMetadata
    explain: Evidence | None
    similarity: float | None


class ClosestNote(TypedDict):
    """A note shown when nothing passed the threshold."""

    path: str
    heading_path: str
    score: float
    similarity: float
    source: SourceReference


class Confidence(TypedDict):
    level: str  # "high", "medium", "low" or "none"
    best_score: float | None
    hits: int
    outcome: str  # "answer", "related" or "none"
    reason: str


class SearchParameters(TypedDict):
    """The parameters a search ran with, as its answer reports them."""

    top_k: int
    threshold: float
    metric: str  # "IP": inner product of unit vectors (the cosine)
    mode: str
    tags: list[str]
    path_prefix: str


class DroppedCandidate(Evidence):
    file_path: str
    section_id: str


class SearchExplain(TypedDict):
    """With --explain: the candidates the threshold dropped."""

    mode: str
    threshold: float
    candidates: int
    dropped_by_threshold: list[DroppedCandidate]


class _SearchAnswer(TypedDict):
    query: str
    results: list[Hit]
    search_parameters: SearchParameters
    execution_time_ms: float
    best_candidate_score: float | None
    closest: list[ClosestNote]
    related: list[Hit]
    confidence: Confidence
    message: str
    explain: SearchExplain | None


class SearchAnswer(_SearchAnswer, total=False):
    """A search's answer. `freshness` says how far the index is behind the files; `indexing`
    (the daemon only) the run under way, None when none is."""

    freshness: Freshness
    indexing: ProgressSnapshot | None


class FailedNote(TypedDict):
    file_path: str
    error: str


class WarnedNote(TypedDict):
    file_path: str
    warning: str


class UnavailableRoot(TypedDict):
    root: str
    reason: str
    since: float | None
    notes_kept: int


class StoreStatus(TypedDict):
    uri: str
    shards: int


class UnshownNotes(TypedDict):
    """Notes whose rows the keyword index lost and that could not be read again yet (their root
    away): left out of every search until a run reads them."""

    notes: int
    example: str


class IndexStatus(TypedDict):
    """What the index holds (Service.status), whoever opened it."""

    version: str
    documents: dict[str, int]  # status ("indexed", "failed") -> notes
    sections: int
    failed: list[FailedNote]
    warnings: list[WarnedNote]
    last_indexed_at: float | None
    model: str
    store: StoreStatus
    roots: list[str]
    unavailable_roots: list[UnavailableRoot]
    unshown: UnshownNotes | None
    open_gaps: int | None


class Reopen(TypedDict):
    """One reopen of a Milvus Lite index: when it ended, why, how long it took, and how long
    it held requests back (new servers load beside the running ones, which answer meanwhile)."""

    at: float
    rows_written: int
    seconds: float
    requests_held_s: float


class DaemonStatus(TypedDict):
    """The daemon's own state: its store, its writer, its queue."""

    store_available: bool
    store_error: str | None
    index_full: str | None  # no room to write: changes wait, searches go on
    pid: int
    uptime_s: float
    state: str
    socket: str
    index_reopens: list[Reopen]
    unwatched_folders: int
    indexing: ProgressSnapshot | None
    queue_depth: int
    last_change_applied_at: float | None


class StatusAnswer(IndexStatus):
    """`status`: the index, and the daemon's state (None when the command opened the index itself)."""

    daemon: DaemonStatus | None


class StartingDaemon(TypedDict):
    """The daemon while it starts: what it is doing, before it can say what the index holds."""

    state: str  # "loading"
    loading: str  # what: "opening the index", "loading the model and the vectors of N sections", ...
    pid: int
    uptime_s: float
    socket: str


class StartingAnswer(TypedDict):
    """`status` while the daemon starts: answered at once, whatever the index's size."""

    daemon: StartingDaemon
    starting: bool  # always True: what tells this answer from a StatusAnswer


def is_starting(answer: StatusAnswer | StartingAnswer) -> TypeGuard[StartingAnswer]:
    """A status asked while the daemon starts (it says what loads, not what the index holds)."""
    return answer.get("starting") is True


class ReindexReport(TypedDict):
    """What one indexing run did (index.indexer.IndexReport.to_dict); `reindex --json` prints it."""

    added: int
    updated: int
    unchanged: int
    deleted: int
    failed: list[dict[str, str]]
    sections_embedded: int
    sections_reused: int
    seconds: float


class Pong(TypedDict):
    pong: bool
    pid: int
    state: str
    roots: list[str]


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


@dataclass(frozen=True)
class Live:
    """What the daemon knows of the index that the service does not: its queue of changes and
    the run under way. Given to a search, its answer says it; without it (a command's own
    process: no queue) the index is exactly as fresh as its last reindex."""

    freshness: Freshness
    indexing: ProgressSnapshot | None = None

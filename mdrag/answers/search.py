"""Search answers: hits with their evidence and snippets, the confidence, and how fresh the index is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from mdrag.answers.status import ProgressSnapshot
from mdrag.params.scope import ScopeShown


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
    """One section that matched (retrieval.hits.Hit.to_dict)."""

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


class SearchParameters(ScopeShown):
    """The parameters a search ran with, as its answer reports them (its scope's fields too)."""

    top_k: int
    threshold: float
    metric: str  # "IP": inner product of unit vectors (the cosine)
    mode: str


class DroppedCandidate(Evidence):
    file_path: str
    section_id: str
    start_line: int | None  # the section's lines: a note's sections told apart
    end_line: int | None
    heading_path: str


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


@dataclass(frozen=True)
class Live:
    """What the daemon knows of the index that the service does not: its queue of changes and
    the run under way. Given to a search, its answer says it; without it (a command's own
    process: no queue) the index is exactly as fresh as its last reindex."""

    freshness: Freshness
    indexing: ProgressSnapshot | None = None

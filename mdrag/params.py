"""Params: what a search or a command may ask for, its limits and its validation (shared by every front)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from mdrag.errors import QueryError

if TYPE_CHECKING:
    from mdrag.config import Config

MAX_QUERY_CHARS = 1000
SELECTION_CHARS = (10, 5000)  # a passage used as the query: a sentence to a few paragraphs
MAX_DRAFT_CHARS = 100_000  # a long note; embedding it holds the model for a few seconds
SEARCH_MODES = ("hybrid", "dense", "keyword")
GAP_STATUSES = ("open", "deferred", "addressed")


@dataclass(frozen=True)
class Operation:
    """One operation a request may name, and who answers it.

    `answered_by`: "daemon" (the daemon itself: ping), "writer" (queued for the one writer:
    reindex) or "service" (Service.handle, in the daemon or in a command's own process).
    `reads_store`: it shares the store (waits out a reopen; refused while the store is down);
    `fresh`: its answer says how fresh the index is, and it may wait for the queue (`wait_fresh`).
    """

    name: str
    answered_by: Literal["daemon", "writer", "service"] = "service"
    reads_store: bool = True
    fresh: bool = False


# The one table of operations: the socket's validation, the daemon's dispatch, the service's
# handlers and the client's checks all read it.
OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("ping", answered_by="daemon", reads_store=False),
        Operation("search", fresh=True),
        Operation("status", reads_store=False),
        Operation("reindex", answered_by="writer", reads_store=False),
        Operation("similar"),
        Operation("duplicates"),
        Operation("related"),
        Operation("context", fresh=True),
        Operation("note"),
        Operation("gaps", reads_store=False),  # the gap log, not the store
        Operation("gap_status", reads_store=False),
    )
}


def operation(op: object) -> Operation:
    """The operation a request names, or a QueryError listing the known ones."""
    found = OPERATIONS.get(op) if isinstance(op, str) else None
    if found is None:
        raise QueryError(f"unknown operation {op!r}; known: {', '.join(OPERATIONS)}")
    return found


class SearchRequest(TypedDict, total=False):
    """A search request's fields as they cross the socket (what `SearchParams.parse` reads)."""

    query: str
    selection: str
    top_k: int
    threshold: float
    mode: str
    tags: list[str]
    path_prefix: str
    explain: bool
    record_gap: bool
    wait_fresh: float


@dataclass(frozen=True)
class SearchParams:
    """A validated search request; the CLI, the socket and the library all build one."""

    query: str
    top_k: int = 10
    threshold: float = 0.7
    mode: str = "hybrid"
    tags: tuple[str, ...] = ()
    path_prefix: str = ""
    explain: bool = False
    passage: bool = False  # the query is a selected passage (10-5000 characters), not a question
    record_gap: bool = True  # False: not a question yet (the page's as-you-type), never a gap
    # The fields the request named; the others came from the defaults it was parsed with, and a
    # request sent on (to the daemon) leaves them to the daemon's own defaults.
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def parse(cls, raw: dict[str, Any], defaults: SearchParams | None = None) -> SearchParams:
        """Validate a request's fields, filling what it leaves out from `defaults`."""
        base = defaults or cls(query="-")
        selection = raw.get("selection")
        if selection is not None:
            low, high = SELECTION_CHARS
            if not isinstance(selection, str) or not low <= len(selection.strip()) <= high:
                raise QueryError(f"a selection must be {low}-{high} characters after trimming spaces")
            raw = {**raw, "query": selection}
        query = raw.get("query")
        if selection is None and (
            not isinstance(query, str) or not 1 <= len(query.strip()) <= MAX_QUERY_CHARS
        ):
            raise QueryError(f"query must be 1-{MAX_QUERY_CHARS} characters after trimming spaces")
        assert isinstance(query, str)
        check_text(query, "query")
        top_k = raw.get("top_k", base.top_k)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
            raise QueryError(f"top_k must be a whole number from 1 to 100, got {top_k!r}")
        threshold = raw.get("threshold", base.threshold)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise QueryError(f"threshold must be a number from 0 to 1, got {threshold!r}")
        mode = raw.get("mode") or base.mode
        if mode not in SEARCH_MODES:
            raise QueryError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        tags = raw.get("tags") or ()
        if isinstance(tags, str) or not all(isinstance(t, str) and t.strip() for t in tags):
            raise QueryError("tags must be a list of non-empty strings")
        prefix = raw.get("path_prefix") or ""
        if not isinstance(prefix, str):
            raise QueryError("path_prefix must be a string")
        explain = _flag(raw, "explain")
        return cls(
            query.strip(),
            top_k,
            float(threshold),
            mode,
            tuple(t.strip() for t in tags),
            prefix,
            explain,
            passage=selection is not None,
            record_gap=raw.get("record_gap") is not False,
            given=frozenset(name for name in _FIELDS if raw.get(name) not in (None, "")),
        )

    def to_request(self) -> SearchRequest:
        """The request these parameters came from, as the socket carries it: the fields it named
        (a passage as its `selection`), so that the daemon fills the rest from its own config."""
        request: SearchRequest = {"selection": self.query} if self.passage else {"query": self.query}
        given = self.given
        if "top_k" in given:
            request["top_k"] = self.top_k
        if "threshold" in given:
            request["threshold"] = self.threshold
        if "mode" in given:
            request["mode"] = self.mode
        if self.tags:
            request["tags"] = list(self.tags)
        if self.path_prefix:
            request["path_prefix"] = self.path_prefix
        if self.explain:
            request["explain"] = True
        if not self.record_gap:
            request["record_gap"] = False
        return request


def search_defaults(config: Config) -> SearchParams:
    """What a search leaves out, from the config (top_k, threshold, mode)."""
    return SearchParams(
        query="-", top_k=config.search_top_k, threshold=config.search_threshold, mode=config.search_mode
    )


_FIELDS = ("top_k", "threshold", "mode")  # those a request may leave to the defaults


def check_text(value: str, name: str) -> None:
    """Reject what no note can hold and the tokenizer cannot take: NUL and unpaired surrogates."""
    if "\0" in value:
        raise QueryError(f"{name} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError(f"{name} is not valid Unicode text (an unpaired surrogate)") from None


def _flag(raw: dict[str, Any], name: str) -> bool:
    value = raw.get(name, False)
    if not isinstance(value, bool):
        raise QueryError(f"{name} must be true or false, got {value!r}")
    return value


def whole_number(raw: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    """A bounded integer parameter, or a QueryError naming it."""
    value = raw.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise QueryError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


def text_param(raw: dict[str, Any], name: str, max_chars: int) -> str:
    """A non-blank string parameter of at most `max_chars`, or a QueryError naming it."""
    value = raw.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > max_chars:
        raise QueryError(f"{name} must be a non-empty string of at most {max_chars} characters")
    check_text(value, name)
    return value

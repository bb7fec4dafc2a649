"""Params: what a search or a command may ask for, its limits and its validation (shared by every front)."""

from __future__ import annotations

import math
from collections.abc import Mapping
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
MAX_WAIT_FRESH_S = 300.0
MAX_PATH_CHARS = 4096  # PATH_MAX: a note's path, a folder to search under


@dataclass(frozen=True)
class Field:
    """What one request field may hold. Every field of every operation is checked by its kind where
    a request comes in, before anything acts on it: a string is never a flag ("false" would be
    true), a number never a string, a list of paths never one path."""

    kind: Literal["string", "whole", "number", "flag", "strings", "choice"]
    low: float = 0
    high: float = math.inf  # a number's highest value; a string's (each string's) most characters
    choices: tuple[str, ...] = ()

    def check(self, name: str, value: Any) -> None:
        """Raise a QueryError naming the field unless `value` is of its kind and within its limits."""
        kind = self.kind
        if kind == "flag":
            if not isinstance(value, bool):
                raise QueryError(f"{name} must be true or false, got {_shown(value)}")
        elif kind in ("whole", "number"):
            whole = kind == "whole"
            number = isinstance(value, int) or (not whole and isinstance(value, float))
            if isinstance(value, bool) or not number or not self.low <= value <= self.high:
                what = "a whole number" if whole else "a number"
                got = repr(value) if number and not isinstance(value, bool) else _shown(value)
                raise QueryError(f"{name} must be {what} from {self.low:g} to {self.high:g}, got {got}")
        elif kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise QueryError(f"{name} must be one of {', '.join(self.choices)}, got {_shown(value)}")
        elif kind == "string":
            if not isinstance(value, str):
                raise QueryError(f"{name} must be a string, got {_shown(value)}")
            self._check_length(name, value)
        else:  # strings: a list of non-empty strings (tags, paths)
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise QueryError(f"{name} must be a list of non-empty strings, got {_shown(value)}")
            for item in value:
                self._check_length(name, item)

    def _check_length(self, name: str, value: str) -> None:
        if len(value) > self.high:
            raise QueryError(f"{name} must be at most {self.high:g} characters, got {len(value):,}")
        check_text(value, name)


def _shown(value: Any) -> str:
    """A refused value as the error shows it: its kind, and the value itself when short."""
    text = repr(value)
    kind = {bool: "a flag", str: "a string", list: "a list", dict: "an object", type(None): "null"}
    named = kind.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)
    return f"{named} {text}" if len(text) <= 40 else f"{named} of {len(text):,} characters"


_SEARCH_FIELDS: dict[str, Field] = {
    "query": Field("string"),  # its length after trimming: SearchParams.parse
    "selection": Field("string"),
    "top_k": Field("whole", 1, 100),
    "threshold": Field("number", 0, 1),
    "mode": Field("choice", choices=SEARCH_MODES),
    "tags": Field("strings", high=200),
    "path_prefix": Field("string", high=MAX_PATH_CHARS),
    "explain": Field("flag"),
    "record_gap": Field("flag"),
    "wait_fresh": Field("number", 0, MAX_WAIT_FRESH_S),
}
_NOTE = Field("string", high=MAX_PATH_CHARS)
_HOW_MANY = Field("whole", 1, 100)


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
    fields: Mapping[str, Field] = field(default_factory=dict, hash=False)  # every field it takes

    def checked(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The request's fields, each checked by its kind (a null is a field left out); a field
        the operation does not take is refused, never ignored (a misspelt `rebuild` did nothing)."""
        fields: dict[str, Any] = {}
        for name, value in raw.items():
            spec = self.fields.get(name)
            if spec is None:
                takes = ", ".join(self.fields) or "no fields"
                raise QueryError(f"{self.name} takes no field {name!r} (it takes {takes})")
            if value is not None:
                spec.check(name, value)
                fields[name] = value
        return fields


# The one table of operations: the socket's validation, the daemon's dispatch, the service's
# handlers and the client's checks all read it.
OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("ping", answered_by="daemon", reads_store=False),
        Operation("search", fresh=True, fields=_SEARCH_FIELDS),
        Operation("status", reads_store=False),
        Operation(
            "reindex",
            answered_by="writer",
            reads_store=False,
            fields={
                "paths": Field("strings", high=MAX_PATH_CHARS),
                "force": Field("flag"),
                "rebuild": Field("flag"),
                "stream": Field("flag"),  # progress lines before the answer
            },
        ),
        Operation(
            "similar",
            fields={"note": _NOTE, "text": Field("string", high=MAX_DRAFT_CHARS), "k": _HOW_MANY},
        ),
        Operation(
            "duplicates",
            fields={"min_score": Field("whole", 50, 100), "limit": Field("whole", 1, 100_000)},
        ),
        Operation("related", fields={"note": _NOTE, "k": _HOW_MANY}),
        Operation(
            "context", fresh=True, fields={**_SEARCH_FIELDS, "max_tokens": Field("whole", 50, 100_000)}
        ),
        Operation("note", fields={"note": _NOTE}),
        # the gap log, not the store
        Operation("gaps", reads_store=False, fields={"status": Field("choice", choices=GAP_STATUSES)}),
        Operation(
            "gap_status",
            reads_store=False,
            fields={
                "query": Field("string", high=MAX_QUERY_CHARS),
                "status": Field("choice", choices=GAP_STATUSES),
            },
        ),
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
        for name, spec in _SEARCH_FIELDS.items():  # each field by its kind, as the socket does
            if raw.get(name) is not None and name not in ("query", "selection"):
                spec.check(name, raw[name])
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
        top_k = raw.get("top_k")
        top_k = base.top_k if top_k is None else top_k
        threshold = raw.get("threshold")
        threshold = base.threshold if threshold is None else threshold
        mode = raw.get("mode") or base.mode
        if mode not in SEARCH_MODES:
            raise QueryError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        tags = raw.get("tags") or ()
        prefix = raw.get("path_prefix") or ""
        explain = raw.get("explain") is True
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


def flag(raw: Mapping[str, Any], name: str) -> bool:
    """A true/false field (false when left out), or a QueryError: a string is never a flag."""
    value = raw.get(name)
    if value is None:
        return False
    Field("flag").check(name, value)
    return bool(value)


def whole_number(raw: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    """A bounded integer parameter, or a QueryError naming it."""
    value = raw.get(name)
    if value is None:
        return default
    Field("whole", low, high).check(name, value)
    return int(value)


def text_param(raw: dict[str, Any], name: str, max_chars: int) -> str:
    """A non-blank string parameter of at most `max_chars`, or a QueryError naming it."""
    value = raw.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > max_chars:
        raise QueryError(f"{name} must be a non-empty string of at most {max_chars} characters")
    check_text(value, name)
    return value

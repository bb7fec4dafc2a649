"""Protocol: the newline-delimited JSON messages between client and daemon, and their validation."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mdrag.errors import QueryError

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 1024 * 1024
MAX_QUERY_CHARS = 1000
SELECTION_CHARS = (10, 5000)  # a passage used as the query: a sentence to a few paragraphs
MAX_DRAFT_CHARS = 100_000  # a long note; embedding it holds the model for a few seconds
SEARCH_MODES = ("hybrid", "dense", "keyword")
GAP_STATUSES = ("open", "deferred", "addressed")
OPERATIONS = (
    "ping",
    "search",
    "status",
    "reindex",
    "similar",
    "duplicates",
    "related",
    "context",
    "gaps",
    "gap_status",
)


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
        )


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


def text_param(raw: dict[str, Any], name: str, max_chars: int, required: bool = True) -> str:
    """A non-blank string parameter of at most `max_chars`, or a QueryError naming it."""
    value = raw.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip() or len(value) > max_chars:
        raise QueryError(f"{name} must be a non-empty string of at most {max_chars} characters")
    check_text(value, name)
    return value


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def request(op: str, **params: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "op": op, "params": params}


def ok(result: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


def progress(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A line sent before the answer to a request that asked for progress (`"stream": true`);
    a client that did not ask never gets one."""
    return {"v": PROTOCOL_VERSION, "progress": snapshot}


def error(kind: str, message: str) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "ok": False, "error": {"type": kind, "message": message}}


def decode_request(line: bytes) -> tuple[str, dict[str, Any]]:
    """(operation, params) from one request line; QueryError says what is wrong with it."""
    try:
        message = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QueryError(f"request is not valid JSON: {exc}") from None
    if not isinstance(message, dict):
        raise QueryError("request must be a JSON object")
    if message.get("v") != PROTOCOL_VERSION:
        raise QueryError(
            f"unsupported protocol version {message.get('v')!r}; this daemon speaks {PROTOCOL_VERSION}"
        )
    op = message.get("op")
    if op not in OPERATIONS:
        raise QueryError(f"unknown operation {op!r}; known: {', '.join(OPERATIONS)}")
    params = message.get("params") or {}
    if not isinstance(params, dict):
        raise QueryError("params must be a JSON object")
    return op, params

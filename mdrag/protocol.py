"""Protocol: the newline-delimited JSON messages between client and daemon, and their validation."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mdrag.errors import QueryError

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 1024 * 1024
MAX_QUERY_CHARS = 1000
SEARCH_MODES = ("hybrid", "dense", "keyword")
OPERATIONS = ("ping", "search", "status", "reindex")


@dataclass(frozen=True)
class SearchParams:
    """A validated search request; the CLI, the socket and the library all build one."""

    query: str
    top_k: int = 10
    threshold: float = 0.7
    mode: str = "hybrid"
    tags: tuple[str, ...] = ()
    path_prefix: str = ""

    @classmethod
    def parse(cls, raw: dict[str, Any], defaults: SearchParams | None = None) -> SearchParams:
        """Validate a request's fields, filling what it leaves out from `defaults`."""
        base = defaults or cls(query="-")
        query = raw.get("query")
        if not isinstance(query, str) or not 1 <= len(query.strip()) <= MAX_QUERY_CHARS:
            raise QueryError(f"query must be 1-{MAX_QUERY_CHARS} characters after trimming spaces")
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
        return cls(query.strip(), top_k, float(threshold), mode, tuple(t.strip() for t in tags), prefix)


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def request(op: str, **params: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "op": op, "params": params}


def ok(result: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


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

"""Protocol: the newline-delimited JSON messages between client and daemon, and their validation."""

from __future__ import annotations

import json
from typing import Any

from mdrag.errors import QueryError

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 1024 * 1024
OPERATIONS = (
    "ping",
    "search",
    "status",
    "reindex",
    "similar",
    "duplicates",
    "related",
    "context",
    "note",
    "gaps",
    "gap_status",
)


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

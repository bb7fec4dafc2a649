"""Protocol: the newline-delimited JSON messages between client and daemon, and their validation.

A request names an operation of `params.OPERATIONS` (the one table of them); an answer is `ok`
with its result, a `progress` line before it when the request streams, or an `error` naming the
error's kind, which the client raises again as the same class (see mdrag.errors.remote_error).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypedDict

from mdrag.errors import MdragError, QueryError, error_kind, remote_error
from mdrag.params import OPERATIONS as OPERATIONS  # re-exported: the wire's operations
from mdrag.params import operation

if TYPE_CHECKING:
    from mdrag.answers import ProgressSnapshot

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 1024 * 1024


class Request(TypedDict):
    v: int
    op: str
    params: dict[str, Any]  # the operation's own fields (params.SearchRequest for a search)


class ErrorBody(TypedDict):
    type: str  # the error's kind: an MdragError class's name (InvalidRequest, Busy), or the server's own
    message: str


class OkAnswer(TypedDict):
    v: int
    ok: Literal[True]
    result: Any  # the operation's answer (mdrag.answers)


class ErrorAnswer(TypedDict):
    v: int
    ok: Literal[False]
    error: ErrorBody


class ProgressLine(TypedDict):
    v: int
    progress: ProgressSnapshot


Message = Request | OkAnswer | ErrorAnswer | ProgressLine


def encode(message: Message) -> bytes:
    return (json.dumps(message, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def request(op: str, **params: Any) -> Request:
    return {"v": PROTOCOL_VERSION, "op": op, "params": params}


def ok(result: Any) -> OkAnswer:
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


def progress(snapshot: ProgressSnapshot) -> ProgressLine:
    """A line sent before the answer to a request that asked for progress (`"stream": true`);
    a client that did not ask never gets one."""
    return {"v": PROTOCOL_VERSION, "progress": snapshot}


def error(kind: str, message: str) -> ErrorAnswer:
    return {"v": PROTOCOL_VERSION, "ok": False, "error": {"type": kind, "message": message}}


def failure(exc: MdragError) -> ErrorAnswer:
    """The answer to a request that failed with this error: its kind and its words."""
    return error(error_kind(exc), str(exc))


def raise_failure(body: ErrorBody | dict[str, Any]) -> NoReturn:
    """Raise the error an answer names, as its own class (a RemoteError too)."""
    raise remote_error(
        str(body.get("type") or ""), str(body.get("message") or "the daemon reported an unknown error")
    )


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
    op = operation(message.get("op")).name
    params = message.get("params") or {}
    if not isinstance(params, dict):
        raise QueryError("params must be a JSON object")
    return op, params

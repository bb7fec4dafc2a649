"""Protocol: the newline-delimited JSON messages between client and daemon, and their validation.

A request names an operation of `params.OPERATIONS` (the one table of them); an answer is `ok`
with its result, a `progress` line before it when the request streams, or an `error` naming the
error's kind, which the client raises again as the same class (see mdrag.errors.remote_error).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypedDict

from mdrag.errors import MdragError, QueryError, error_kind, remote_error
from mdrag.params.operations import OPERATIONS as OPERATIONS  # re-exported: the wire's operations
from mdrag.params.operations import operation

if TYPE_CHECKING:
    from mdrag.answers.status import ProgressSnapshot

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 1024 * 1024
# No request needs more than 3 levels ({"params": {"tags": [...]}}); json's decoder recurses once a
# level, so 100,000 of them ended in a RecursionError (a traceback in the log) before this bound.
MAX_REQUEST_DEPTH = 32


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
    result: Any  # the operation's answer (mdrag.answers.*)


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


def too_large(size: int | None = None, limit: int = MAX_REQUEST_BYTES) -> str:
    """What a request over the size limit is told, by the client before it sends or by the daemon."""
    what = f"the request is {size:,} bytes" if size is not None else "the request is too large"
    return f"{what}; the daemon takes requests of at most {limit:,} bytes ({limit / 2**20:g} MB)"


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
    """(operation, params) from one request line, every field checked by its kind (params.Field);
    QueryError says what is wrong with it."""
    too_deep = f"request too deep: JSON nested more than {MAX_REQUEST_DEPTH} levels is refused"
    if _deeper_than(line, MAX_REQUEST_DEPTH):
        raise QueryError(too_deep)
    try:
        message = json.loads(line.decode("utf-8"))
    except RecursionError:  # never past the bound above; kept so that no nesting reaches the log
        raise QueryError(too_deep) from None
    except ValueError as exc:  # not UTF-8, not JSON, or a number of more digits than Python reads
        raise QueryError(f"request is not valid JSON: {exc}") from None
    if not isinstance(message, dict):
        raise QueryError("request must be a JSON object")
    if message.get("v") != PROTOCOL_VERSION:
        raise QueryError(
            f"unsupported protocol version {message.get('v')!r}; this daemon speaks {PROTOCOL_VERSION}"
        )
    found = operation(message.get("op"))
    params = message.get("params") or {}
    if not isinstance(params, dict):
        raise QueryError("params must be a JSON object")
    return found.name, found.checked(params)


# A JSON string, closed or running to the end of the line (so that every match attempt consumes
# what it looked at: the scan stays linear however the quotes fall).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _deeper_than(line: bytes, limit: int) -> bool:
    """Whether the JSON on `line` nests arrays and objects more than `limit` deep, found without
    decoding it, in time linear in its length (C loops: a count, a regex, `limit` replaces)."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False  # the common case: too few brackets to be that deep
    brackets = _STRING.sub(b"", line).translate(None, _NOT_BRACKETS)
    for _ in range(limit):  # each pass removes the innermost level
        brackets = brackets.replace(b"[]", b"").replace(b"{}", b"")
    return b"[" in brackets or b"{" in brackets

"""Operations: the one table of what a request may name, the fields each takes, and who answers it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mdrag.errors import QueryError
from mdrag.params.fields import MAX_DRAFT_CHARS, MAX_PATH_CHARS, MAX_QUERY_CHARS, Field
from mdrag.params.search import SEARCH_FIELDS

GAP_STATUSES = ("open", "deferred", "addressed")
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
        Operation("search", fresh=True, fields=SEARCH_FIELDS),
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
        Operation("context", fresh=True, fields={**SEARCH_FIELDS, "max_tokens": Field("whole", 50, 100_000)}),
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

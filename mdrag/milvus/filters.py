"""Filters: Milvus filter expressions built from values, every string quoted and escaped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from mdrag.keys import doc_id
from mdrag.params.scope import Scope

EVERY_NOTE = Scope()


def quote(value: str) -> str:
    """A Milvus filter string literal with quotes and backslashes escaped."""
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def in_filter(field: str, values: Iterable[str], *, negate: bool = False) -> str:
    """`field in ["a", "b"]` (`not in` when `negate`), each value quoted."""
    operator = "not in" if negate else "in"
    return f"{field} {operator} [{', '.join(quote(v) for v in values)}]"


def in_numbers(field: str, values: Iterable[int]) -> str:
    """`field in [1, -2]`: integers need no quoting."""
    return f"{field} in [{', '.join(str(int(v)) for v in values)}]"


def metadata_expression(scope: Scope) -> str:
    """The Milvus expression on the metadata rows that narrows them to `scope`: tags exactly, a
    folder by LIKE where its text allows (`Scope.under` then checks the rows exactly)."""
    clauses = []
    if scope.tags:
        clauses.append(f"array_contains_any(tags, [{', '.join(quote(t) for t in scope.tags)}])")
    prefix = scope.path_prefix
    if prefix and prefix.isprintable() and not any(c in prefix for c in "%_"):
        # LIKE narrows the notes in the engine (its wildcards would widen the match, so
        # prefixes holding them skip it).
        clauses.append(f"file_path like {quote(prefix + '%')}")
    return " and ".join(clauses)


class NoteScope(NamedTuple):
    """The notes a filtered dense search searches among, sent as the shorter list: the doc_ids
    of the notes within it, or (`outside`) those of every other note."""

    doc_ids: list[str]
    outside: bool = False

    def expression(self, doc_ids: Iterable[str]) -> str:
        """The filter on `doc_id` for these of the scope's doc_ids (one shard's)."""
        return in_filter("doc_id", doc_ids, negate=self.outside)


def note_scope(within: Sequence[str], every: Sequence[str]) -> NoteScope | None:
    """The scope of the notes at paths `within`, of all the notes at `every`: None when it is
    every note. The engine's cost is in parsing the list (12,352 notes took ~120 ms at 5x
    against ~30 ms unfiltered), so a scope of most notes is sent as the notes left out."""
    inside = set(within)
    left_out = [path for path in every if path not in inside]
    if not left_out:
        return None  # a filter every note meets (a root as --path): no list to send
    if len(inside) <= len(left_out):
        return NoteScope([doc_id(path) for path in within])
    return NoteScope([doc_id(path) for path in left_out], outside=True)

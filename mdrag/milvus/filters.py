"""Filters: Milvus filter expressions built from values, every string quoted and escaped."""

from __future__ import annotations

from collections.abc import Iterable


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


def in_filter(field: str, values: Iterable[str]) -> str:
    """`field in ["a", "b"]`, each value quoted."""
    return f"{field} in [{', '.join(quote(v) for v in values)}]"


def in_numbers(field: str, values: Iterable[int]) -> str:
    """`field in [1, -2]`: integers need no quoting."""
    return f"{field} in [{', '.join(str(int(v)) for v in values)}]"

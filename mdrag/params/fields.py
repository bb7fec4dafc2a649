"""Fields: what one request field may hold, checked by its kind before anything acts on it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mdrag.errors import QueryError

MAX_QUERY_CHARS = 1000
MAX_DRAFT_CHARS = 100_000  # a long note; embedding it holds the model for a few seconds
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

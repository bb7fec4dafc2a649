"""Scope: which notes a search reads (any of some tags, under a folder), parsed once and passed whole."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict

from mdrag.params.fields import MAX_PATH_CHARS, Field


class ScopeShown(TypedDict):
    """A scope as a search's answer reports it (`search_parameters`): every field."""

    tags: list[str]
    path_prefix: str


@dataclass(frozen=True)
class Scope:
    """The notes a search reads: those with any of `tags` and a path starting with `path_prefix`
    (every note when both are empty).

    Parsed once where a request comes in, and passed whole to the engines. Each engine translates
    it once: `milvus/filters.py` into a Milvus expression, `milvus/keywords.py` into tantivy
    queries. `holds` checks a note in Python when no engine holds it yet (read ahead of the
    model, or waiting for it), and `words` says the scope to a person. A new filter is a field
    here; docs/design/retrieval.md has the recipe and the files it touches.
    """

    tags: tuple[str, ...] = ()
    path_prefix: str = ""

    # Each field as a request carries it, checked by its kind (params/fields.py).
    FIELDS: ClassVar[dict[str, Field]] = {
        "tags": Field("strings", high=200),
        "path_prefix": Field("string", high=MAX_PATH_CHARS),
    }

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Scope:
        """The scope a request names (a null or empty field narrows nothing), or a QueryError."""
        for name, spec in cls.FIELDS.items():
            if raw.get(name) is not None:
                spec.check(name, raw[name])
        tags = raw.get("tags") or ()
        return cls(tuple(tag.strip() for tag in tags), raw.get("path_prefix") or "")

    @property
    def narrows(self) -> bool:
        """Whether it leaves any note out (an empty scope is every note)."""
        return bool(self.tags or self.path_prefix)

    def to_request(self) -> dict[str, Any]:
        """Its fields as a request carries them, the empty ones left out."""
        request: dict[str, Any] = {}
        if self.tags:
            request["tags"] = list(self.tags)
        if self.path_prefix:
            request["path_prefix"] = self.path_prefix
        return request

    def shown(self) -> ScopeShown:
        """Every field, as a search's answer reports what it searched (`search_parameters`)."""
        return {"tags": list(self.tags), "path_prefix": self.path_prefix}

    def holds(self, path: str, tags: Sequence[str] = ()) -> bool:
        """Whether the note at `path` with `tags` is within the scope."""
        return self.under(path) and (not self.tags or any(tag in self.tags for tag in tags))

    def under(self, path: str) -> bool:
        """Whether `path` is under the scope's folder: the part of it an engine may only narrow
        (Milvus's LIKE cannot take every prefix), checked exactly on the rows it returns."""
        return path.startswith(self.path_prefix)

    def none_words(self, so_far: str = "") -> str:
        """That no note is within it, as a person says it: "no note is tagged a or b", "no note
        tagged a is under notes/x" (`so_far`: " indexed so far", while the daemon indexes)."""
        tagged = f" tagged {' or '.join(self.tags)}" if self.tags else ""
        under = f" under {self.path_prefix}" if self.path_prefix else ""
        if tagged and under:
            return f"no note{so_far}{tagged} is{under}"
        return f"no note{so_far} is{tagged or under}"

    def words(self) -> str:
        """The scope as a sentence goes on to say it ("nothing matched" + this), or "" for none."""
        tagged = f" among the notes tagged {' or '.join(self.tags)}" if self.tags else ""
        return tagged + (f" under {self.path_prefix}" if self.path_prefix else "")

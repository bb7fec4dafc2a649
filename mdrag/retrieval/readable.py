"""Readable hits: a hit on a note's breadcrumb (its own names alone) shows the section that follows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

from mdrag.retrieval.candidate import Candidate, SectionKey, section_key
from mdrag.retrieval.excerpt import plain, without_comments

_WORD = re.compile(r"\w+")
# What a hit is scored by; the rest of it is where it is and what it shows.
_SCORED = ("score", "cosine", "bm25", "features")


def readable(shown: Sequence[Candidate], pool: Sequence[Candidate]) -> list[Candidate]:
    """The hits to show, each a section a person can read: a section before a note's first
    heading that says nothing but the note's own names (a generated page's breadcrumb
    "Plugin › addRibbonIcon", a title repeated) is shown as the section of the note that follows
    it, when the search scored that one too, with the score the names earned.

    Such a section embeds the note's title and little else, so it is what finds a page by its
    name (an identifier, a command): kept in the index for that, but its text tells the reader
    nothing. A note shows once: the following section is not shown again further down, and a
    breadcrumb whose following section is already shown above it is left out."""
    taken: set[SectionKey] = set()
    out: list[Candidate] = []
    for row in shown:
        key = section_key(row)
        if key in taken:
            continue
        following = _following(row, pool) if names_only(row) else None
        if following is None:
            out.append(row)
            taken.add(key)
            continue
        if section_key(following) in taken:
            continue
        taken.add(section_key(following))
        out.append(_scored_as(following, row))
    return out


def names_only(row: Candidate) -> bool:
    """Whether the row is the text before its note's first heading and, as a reader sees it
    (comments hidden, links as their words), holds no word but the note's title and aliases."""
    if row["heading_level"] != 0 or row["chunk_index"] != 0:
        return False
    text, _ = plain(*without_comments(row.get("section_text", ""), []))
    said = {word.casefold() for word in _WORD.findall(text)}
    names = " ".join([row.get("title") or "", *(row.get("aliases") or [])])
    return bool(said) and said <= {word.casefold() for word in _WORD.findall(names)}


def _following(row: Candidate, pool: Sequence[Candidate]) -> Candidate | None:
    """The scored section of the same note version that starts first after the row ends."""
    after = [
        other
        for other in pool
        if other["file_path"] == row["file_path"]
        and other["file_hash"] == row["file_hash"]
        and other["start_position"] >= row["end_position"]
        and "section_text" in other
    ]
    return min(after, key=lambda other: other["start_position"], default=None)


def _scored_as(following: Candidate, row: Candidate) -> Candidate:
    """The following section, with the score (and its evidence) of the row it is shown for."""
    moved = {**following, **{name: row[name] for name in _SCORED if name in row}}  # type: ignore[literal-required]
    return cast(Candidate, moved)

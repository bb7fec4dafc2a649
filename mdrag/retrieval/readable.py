"""Readable hits: a hit on a note's breadcrumb (its own names alone) shows the section that follows."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import cast

from mdrag.retrieval.candidate import Candidate, SectionKey, section_key
from mdrag.retrieval.excerpt import plain, without_comments

_WORD = re.compile(r"\w+")
# What a candidate was scored and ranked by: a row shown in a breadcrumb's place takes the
# breadcrumb's (a key the breadcrumb lacks is dropped, never left from the other section).
_SCORED = ("score", "cosine", "distance", "bm25", "features")
NAMES_CHARS = 1000  # a breadcrumb is a line: longer text is read as the section it is


def readable(candidates: Iterable[Candidate], pool: Sequence[Candidate], limit: int) -> list[Candidate]:
    """The first `limit` hits to show of `candidates` (best first), each a section a person can
    read: a section before a note's first heading that says nothing but the note's own names (a
    generated page's breadcrumb "Plugin › addRibbonIcon", a title repeated) is shown as the
    nearest section after it in the note that the search scored (in `pool`), with the score and
    evidence the names earned, and `stands_for` naming it.

    Such a section embeds the note's title and little else, so it is what finds a page by its
    name (an identifier, a command): kept in the index for that, but its text tells the reader
    nothing. A note shows once: the section after it is not shown again further down, and a
    breadcrumb whose following section is already shown above it is left out. A breadcrumb with
    no scored section after it is shown as it is."""
    taken: set[SectionKey] = set()
    out: list[Candidate] = []
    notes: dict[tuple[str, str], list[Candidate]] | None = None  # the pool by note version, once needed
    for row in candidates:
        if len(out) >= limit:
            break
        key = section_key(row)
        if key in taken:
            continue
        following = None
        if names_only(row):
            if notes is None:
                notes = {}
                for other in pool:
                    notes.setdefault((other["file_path"], other["file_hash"]), []).append(other)
            following = _following(row, notes.get((row["file_path"], row["file_hash"]), []))
        if following is None:
            out.append(row)
            taken.add(key)
        elif section_key(following) not in taken:
            taken.add(section_key(following))
            out.append(_shown_for(following, row))
    return out


def names_only(row: Candidate) -> bool:
    """Whether the row is the text before its note's first heading and, as a reader sees it
    (comments hidden, links as their words), holds no word but the note's title and aliases."""
    text = row.get("section_text") or ""
    if row["heading_level"] != 0 or row["chunk_index"] != 0 or len(text) > NAMES_CHARS:
        return False
    shown, _ = plain(*without_comments(text, []))
    said = {word.casefold() for word in _WORD.findall(shown)}
    names = " ".join([row.get("title") or "", *(row.get("aliases") or [])])
    return bool(said) and said <= {word.casefold() for word in _WORD.findall(names)}


def _following(row: Candidate, note: Sequence[Candidate]) -> Candidate | None:
    """The scored section of the row's note version that starts first after the row ends."""
    after = [
        other for other in note if other["start_position"] >= row["end_position"] and "section_text" in other
    ]
    return min(after, key=lambda other: other["start_position"], default=None)


def _shown_for(following: Candidate, row: Candidate) -> Candidate:
    """The following section with the row's score and evidence, standing for the row."""
    shown = {name: value for name, value in following.items() if name not in _SCORED}
    shown.update({name: row[name] for name in _SCORED if name in row})  # type: ignore[literal-required]
    shown["stands_for"] = section_key(row)
    return cast(Candidate, shown)

"""Hit text: each candidate's section text, read from its note and checked against the indexed hash."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mdrag import keys
from mdrag.errors import DocumentError
from mdrag.milvus import clip_bytes
from mdrag.notes.document import decode_text
from mdrag.notes.regular import read_regular
from mdrag.retrieval.candidate import Candidate

# The index keeps no copy of a section's text: at ~1.3 KB per row it was a seventh of Milvus
# Lite's memory. The note is the source of truth, and a row names the version it was cut from
# (file_hash) and where (start/end_position), so the text is read back from the file. A note
# changed on disk and not indexed yet holds other text at those places: its rows show the text
# they embedded instead (`fallback`), so a search still finds the version it indexed.
Fallback = Callable[[list[Any]], dict[str, str]]  # the store's window_texts: rows -> id -> text


def attach_texts(rows: Iterable[Candidate], fallback: Fallback) -> None:
    """Set `section_text` on every row that lacks it: from its note when the note still has the
    indexed hash, else from `fallback` (id -> text, one call for all such rows)."""
    notes: dict[tuple[str, str], str | None] = {}
    stale: list[Candidate] = []
    for row in rows:
        if "section_text" in row:
            continue
        key = (row["file_path"], row["file_hash"])
        if key not in notes:
            notes[key] = note_text(*key)
        text = notes[key]
        if text is None:
            stale.append(row)
        else:
            row["section_text"] = clip_bytes(text[row["start_position"] : row["end_position"]])
    if stale:
        found = fallback(stale)
        for row in stale:
            row["section_text"] = found.get(row["id"], "")


def note_text(path: str, file_hash: str) -> str | None:
    """The note's decoded text when its bytes still hash to `file_hash`, else None."""
    try:
        data = read_regular(path)  # whatever its size: the hash decides; never a FIFO's wait
    except DocumentError:
        return None
    if keys.file_hash(data) != file_hash:
        return None
    try:
        return decode_text(data)
    except DocumentError:
        return None

"""Rows: a read and sectioned note as the store keeps it (vector rows, metadata, catalog record)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdrag import keys
from mdrag.answers.notes import Link
from mdrag.milvus import MAX_TAGS, clip_bytes, pack_vector
from mdrag.notes.document import Document, file_title
from mdrag.notes.sections import Section, titled_path


@dataclass
class PreparedNote:
    """A changed file, read and sectioned, waiting for its vectors."""

    path: str
    is_new: bool
    document: Document | None = None
    sections: list[Section] = field(default_factory=list)
    section_ids: list[str] = field(default_factory=list)
    windows: list[list[str]] = field(default_factory=list)
    spans: list[list[tuple[int, int]]] = field(default_factory=list)  # each window's place in its body
    title: str = ""
    links: list[Link] = field(default_factory=list)
    error: str = ""
    file_hash: str = ""
    size: int = 0
    held_hash: str = ""  # the version the index held when the note was read ("" for a new note)
    description: str = ""  # its frontmatter description, embedded beside its sections
    description_id: str = ""  # the description's vector key, as a section's (keys.section_id)

    @property
    def text_count(self) -> int:
        """The texts the model embeds for this version: its section windows and its description."""
        return sum(len(w) for w in self.windows) + bool(self.description)

    @property
    def rows_unseen(self) -> bool:
        """No row of this version can be in the store, so its rows are inserted, not upserted
        (an upsert on Milvus Lite also deletes, and costs more): a version the index did not
        hold has no rows, because every write deletes the rows of the version it replaced and a
        crash's leftovers are removed at the next open. Only a forced re-read of the same
        version finds its own rows."""
        return self.file_hash != self.held_hash


def vector_rows(p: PreparedNote, vectors: dict[tuple[str, int], np.ndarray]) -> list[dict[str, Any]]:
    """One row per section window of the note's new version, with its vector; `display` and
    `embedded_text` hold what a hit shows (the keyword index keeps them, see keywords.py), the
    other columns what filters and deletes need."""
    rows = window_rows(p)
    for row in rows:
        row["embedding"] = vectors[(row["section_id"], row["window_index"])].tolist()
    return rows


def window_rows(p: PreparedNote) -> list[dict[str, Any]]:
    """The note's rows as `vector_rows` makes them, without their vectors (what the pending
    keyword index holds until the model reaches the note)."""
    if p.document is None or p.error:
        return []
    tags = [clip_bytes(t, 500) for t in p.document.fm_list("tags")[:MAX_TAGS]]
    rows = []
    heading_title = _clip(_heading_title(p), 8000)
    title = _clip(p.title, 4000)
    aliases = p.document.aliases
    for ordinal, (section, sid, windows) in enumerate(zip(p.sections, p.section_ids, p.windows, strict=True)):
        positions = _window_positions(
            section, p.spans[ordinal] if ordinal < len(p.spans) else [], len(windows)
        )
        # Once a section, each part cut before it is joined: a heading of megabytes has thousands
        # of windows, and clipping it whole for each cost the square of its length.
        path = titled_path(heading_title, [_clip(h, 8000) for h in section.heading_path])
        heading_path, heading = _clip(" > ".join(path), 8000), _clip(section.heading, 4000)
        anchor = _clip(section.anchor, 1000)
        for w, text in enumerate(windows):
            window_start, window_end = positions[w]
            display = {
                "section_id": sid,
                "file_path": p.path,
                "file_hash": p.file_hash,
                "window_index": w,
                "section_heading": heading,
                "heading_level": section.heading_level,
                "heading_path": heading_path,
                "section_type": section.section_type,
                "chunk_index": section.chunk_index,
                "token_count": section.token_count,
                "start_position": section.start_position,
                "end_position": section.end_position,
                "window_start": window_start,  # file offsets of the text this window embedded
                "window_end": window_end,
                "start_line": section.start_line,
                "end_line": section.end_line,
                "anchor": anchor,
                "title": title,
                "aliases": aliases,
                "tags": tags,
            }
            rows.append(
                {
                    "id": keys.row_id(p.path, p.file_hash, sid, ordinal, w),
                    "section_id": sid,
                    "doc_id": keys.doc_id(p.path),
                    "file_path": p.path,
                    "file_hash": p.file_hash,
                    "window_index": w,
                    "tags": tags,
                    "display": display,
                    "embedded_text": clip_bytes(text),
                }
            )
    return rows


def _clip(text: str, limit: int) -> str:
    """clip_bytes(text, limit), looking at no more of the text than can be kept (a character is a
    byte or more)."""
    return clip_bytes(text[:limit], limit)


def _heading_title(p: PreparedNote) -> str:
    """The title that leads a hit's heading path: the frontmatter title or first H1, not the
    file name that stands in for a missing one (the path beside the hit shows that already)."""
    return "" if p.title == file_title(p.path) else p.title


def _window_positions(section: Section, spans: list[tuple[int, int]], windows: int) -> list[tuple[int, int]]:
    """Each window's (start, end) in the file, from its span in the section's embedded body.

    The body is the section's text under its heading, stripped; a section with none embedded its
    heading, and a window without a known span stands for the whole section.
    """
    if not section.body_text or len(spans) != windows:
        return [(section.start_position, section.end_position)] * windows
    return [(section.body_offset + start, section.body_offset + end) for start, end in spans]


def metadata_row(
    p: PreparedNote, rows: list[dict[str, Any]], dimension: int, description: np.ndarray | None = None
) -> dict[str, Any]:
    """The note's one metadata row: what the catalog keeps, its frontmatter, its document vector
    and its description's (packed: see milvus/packed.py)."""
    doc = p.document
    if rows:
        mean = np.mean([row["embedding"] for row in rows], axis=0)
        doc_vector = (mean / (np.linalg.norm(mean) or 1.0)).tolist()
    else:
        # Milvus needs a vector in every row; a unit placeholder for files with no sections.
        doc_vector = [1.0] + [0.0] * (dimension - 1)
    return {
        "doc_id": keys.doc_id(p.path),
        "file_path": p.path,
        "file_hash": p.file_hash,
        "size": p.size,
        "status": "failed" if p.error else "indexed",
        "error_message": clip_bytes(p.error, 8000),
        "warning": clip_bytes(doc.warning if doc else "", 8000),
        "frontmatter": doc.frontmatter if doc else {},
        "title": clip_bytes(p.title or file_title(p.path), 4000),
        "tags": [clip_bytes(t, 500) for t in (doc.fm_list("tags") if doc else [])][:MAX_TAGS],
        "topics": [clip_bytes(t, 500) for t in (doc.fm_list("topics") if doc else [])][:MAX_TAGS],
        "keywords": [clip_bytes(t, 500) for t in (doc.fm_list("keywords") if doc else [])][:MAX_TAGS],
        "summary": clip_bytes(doc.fm_text("summary") if doc else ""),
        "llm_hints": {"value": doc.frontmatter.get("llm_hints")} if doc else {},
        "links": {"items": p.links},
        "language": clip_bytes(doc.language if doc else "en", 30),
        "word_count": doc.word_count if doc else 0,
        "section_count": len(p.sections) if not p.error else 0,
        "has_frontmatter": bool(doc and doc.has_frontmatter),
        "created_at": doc.created_at if doc else 0.0,
        "modified_at": doc.modified_at if doc else 0.0,
        "indexed_at": time.time(),
        "doc_vector": doc_vector,
        "description_vector": pack_vector(description if p.description and not p.error else None),
    }

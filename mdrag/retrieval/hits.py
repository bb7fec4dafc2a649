"""Hits: a scored candidate as the hit an answer shows, and where it lives in its note."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import cast

from mdrag.answers import search as answers
from mdrag.notes.blocks import shown_inline
from mdrag.retrieval.candidate import Candidate
from mdrag.retrieval.snippets import snippet


def shown_heading(text: str) -> str:
    """A heading, heading path or title as a reader sees it rendered (notes.blocks.shown_inline).
    What the model embeds keeps the markup as written."""
    return shown_inline(text) if text else text


def source_reference(row: Candidate) -> answers.SourceReference:
    """Where a hit lives: path, lines, heading path and a `path#slug` link an editor can open."""
    path = row["file_path"]
    return {
        "path": path,
        "start_line": row["start_line"],
        "end_line": row["end_line"],
        "heading_path": shown_heading(row["heading_path"]),
        "anchor": f"{path}#{row['anchor']}" if row.get("anchor") else path,
    }


@dataclass
class Hit:
    """One section that matched, with where to find it."""

    file_path: str
    section_heading: str
    heading_level: int
    chunk_index: int
    confidence_score: float  # relevance score in [0, 1]: how likely it answers (see relevance.py)
    section_text: str
    snippet: answers.Snippet  # the window that matched: text, lines, the query's words in it
    start_line: int
    end_line: int
    heading_path: str
    source: answers.SourceReference
    metadata: answers.HitMetadata
    explain: answers.Evidence | None = None  # with --explain: dense score and the ranks behind it
    # raw cosine of the section's best-matching window (shown for its note's names: theirs, readable.py)
    similarity: float | None = None

    def to_dict(self) -> answers.Hit:
        # Shallow on purpose: every dict in a hit is built for it alone, and asdict's deep copy
        # cost a measurable share of each answer.
        return cast(answers.Hit, {f.name: getattr(self, f.name) for f in fields(self)})


def hit_of(row: Candidate, query: str = "") -> Hit:
    """A candidate row (display fields and its `cosine`) as the hit a response shows; its snippet
    marks the query's words (none for a passage: every word of it would be marked)."""
    return Hit(
        file_path=row["file_path"],
        section_heading=shown_heading(row["section_heading"]),
        heading_level=row["heading_level"],
        chunk_index=row["chunk_index"],
        confidence_score=round(row["score"], 4),
        similarity=round(row["cosine"], 4),
        section_text=row["section_text"],
        snippet=snippet(row, query),
        start_line=row["start_line"],
        end_line=row["end_line"],
        heading_path=shown_heading(row["heading_path"]),
        source=source_reference(row),
        metadata={
            "title": shown_heading(row["title"]),
            "tags": list(row["tags"] or []),
            "section_type": row["section_type"],
            "token_count": row["token_count"],
            "start_position": row["start_position"],
            "end_position": row["end_position"],
            "section_id": row["section_id"],
            "row_id": row["id"],
            "waiting": bool(row.get("pending")),
        },
    )

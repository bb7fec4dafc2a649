"""Index status: what the index holds, as `mdrag status` shows it (counts, failures, warnings, roots)."""

from __future__ import annotations

from pathlib import Path

from mdrag import __version__
from mdrag.answers.status import FailedNote, IndexStatus, StoreStatus
from mdrag.catalog import Catalog
from mdrag.index.roots import Roots
from mdrag.notes.pathtext import to_text
from mdrag.notes.scanner import NoteFilter


def index_status(
    catalog: Catalog,
    note_filter: NoteFilter,
    roots: Roots,
    unshown: set[str],
    model: str,
    store: StoreStatus,
    open_gaps: int | None,
) -> IndexStatus:
    """`unshown`: the notes whose keyword rows are lost and not yet read again (the indexer's)."""
    shown_later = sorted(unshown.copy())  # a copy is one step: the indexer may add to it
    return {
        "version": __version__,
        "documents": catalog.status_counts(),
        "sections": catalog.section_count(),
        "failed": failed_notes(catalog, note_filter.unlisted),
        "warnings": [
            {"file_path": r.file_path, "warning": r.warning} for r in catalog.records() if r.warning
        ],
        "last_indexed_at": catalog.last_indexed_at() or None,
        "model": model,
        "store": store,
        "roots": [str(r) for r in note_filter.roots],
        "unavailable_roots": roots.report(),
        "roots_without_notes": [str(root) for root in roots.without_notes(look=False)],  # report() looked
        "unshown": {"notes": len(shown_later), "example": shown_later[0]} if shown_later else None,
        "open_gaps": open_gaps,
    }


def failed_notes(catalog: Catalog, unlisted: dict[Path, str]) -> list[FailedNote]:
    """Notes that failed, with their reasons, then places the scan could not read (a folder
    past the system's path length): their notes are on no list but this one."""
    failed: list[FailedNote] = [
        {"file_path": r.file_path, "error": r.error_message} for r in catalog.failed()
    ]
    for place, why in sorted(unlisted.copy().items()):  # a copy: the writer scans
        failed.append(
            {"file_path": to_text(place), "error": f"cannot read: {why}; notes under it are not indexed"}
        )
    return failed

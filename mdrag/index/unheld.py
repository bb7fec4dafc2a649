"""Unheld notes: the index cannot hold them (a path past the system's length or the store's): failed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from loguru import logger

from mdrag.catalog import Catalog
from mdrag.notes.pathtext import to_text

# The longest path a metadata row holds (its file_path field, milvus/schema.py), in UTF-8 bytes.
# A path the system opens is shorter, but its stored form writes each byte that is not UTF-8 as
# four characters (notes/pathtext.py): a name of such bytes can pass it.
MAX_STORED_PATH_BYTES = 4096


def too_long_to_store(path: str) -> str | None:
    """Why the index cannot hold a note at this stored path, or None when it can."""
    size = len(path.encode("utf-8"))
    if size <= MAX_STORED_PATH_BYTES:
        return None
    return (
        f"its path is {size:,} bytes as the index stores it (each byte that is not UTF-8 written as "
        f"four characters), longer than the index holds ({MAX_STORED_PATH_BYTES:,}), so it is not "
        "indexed: rename it or move it to a shallower folder"
    )


def sort_out(
    files: list[str],
    scope: Iterable[str],
    catalog: Catalog,
    failed: list[dict[str, str]],
    scanned: Mapping[Path, str] | None = None,
) -> list[str]:
    """The files (stored paths) the index can hold. The others, and the notes a scan found but
    could not open (`scanned`: a path past the system's length), are failed notes with their
    reason: in the catalog, in place of what it knew of `scope`, and in the run's report."""
    found = {to_text(path): why for path, why in (scanned or {}).items()}
    held = []
    for path in files:
        why = too_long_to_store(path)
        if why is None:
            held.append(path)
        else:
            found[path] = why
    catalog.unheld(found, scope)
    for path, why in sorted(found.items()):
        failed.append({"file_path": path, "error": why})
        logger.warning("failed {}: {}", path, why)
    return held

"""Changes: which of a run's notes changed since the index read them, each read from disk and sectioned."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from loguru import logger

from mdrag import keys
from mdrag.catalog import Catalog
from mdrag.errors import DocumentError
from mdrag.index import prepass
from mdrag.index.reading import NoteReader
from mdrag.index.rows import PreparedNote
from mdrag.milvus import PendingKeywords
from mdrag.notes.document import FileUnreadable, FileVanished, parse_document, read_bytes
from mdrag.progress import ProgressMeter


class Tally(Protocol):
    """What a run counts of its reading (the indexer's IndexReport)."""

    unchanged: int
    failed: list[dict[str, str]]


def read_changed(
    paths: list[str],
    *,
    catalog: Catalog,
    reader: NoteReader,
    max_file_bytes: int,
    force: bool,
    unshown: set[str],
    report: Tally,
    vanished: list[str],
    meter: ProgressMeter,
) -> Iterator[PreparedNote]:
    """Each of these notes that changed since indexed (all with `force`, and those `unshown`),
    read and sectioned, or failed with the reason; one unchanged is counted in `report`, one
    deleted since the scan goes to `vanished` (the writer removes it). Runs in the reader thread."""
    for path in paths:
        known = catalog.get(path)
        held = known.file_hash if known is not None else ""
        prepared = PreparedNote(path=path, is_new=known is None, held_hash=held)
        try:
            data = read_bytes(path, max_file_bytes)
            catalog.unread(path)  # readable (again)
        except FileVanished:
            vanished.append(path)  # deleted since the scan: the writer removes it
            meter.unchanged()
            continue
        except FileUnreadable as exc:
            if known is not None and known.status == "indexed":
                # Permissions come and go (a folder being copied, a mount): keep what we have,
                # and say so in `status` until it is readable again.
                error = f"{exc}; its indexed version is kept until it is readable or gone"
                report.failed.append({"file_path": path, "error": error})
                catalog.unread(path, error)
                logger.warning("failed {}: {}", path, error)
                meter.unchanged()
                continue
            prepared.error = str(exc)
        except DocumentError as exc:
            if known is not None and known.status == "failed" and known.error_message == str(exc):
                report.unchanged += 1  # failed for the same reason as last time: nothing to write
                meter.unchanged()
                continue
            prepared.error = str(exc)
        if prepared.error:  # recorded failed, with the reason
            meter.read(0)
            yield prepared
            continue
        prepared.file_hash, prepared.size = keys.file_hash(data), len(data)
        unchanged = known is not None and known.file_hash == prepared.file_hash
        if unchanged and not force and path not in unshown:
            report.unchanged += 1
            meter.unchanged()
            continue
        catalog.mark([path], "processing")
        try:
            reader.read(prepared, data)
        except DocumentError as exc:
            prepared.error = str(exc)
        except Exception as exc:  # a parser bug on one strange file must not stop the run
            logger.exception("unexpected error while parsing {}", path)
            prepared.error = f"internal error while parsing: {exc!r}"
        meter.read(prepared.text_count)
        yield prepared


def read_for_keywords(
    path: str, reader: NoteReader, max_file_bytes: int, waiting: PendingKeywords | None
) -> prepass.Read | None:
    """A note read and sectioned for the pending keyword index, or None when it cannot be
    (the model's pass records why)."""
    prepared = PreparedNote(path=path, is_new=True)
    try:
        data = read_bytes(path, max_file_bytes)
        prepared.file_hash, prepared.size = keys.file_hash(data), len(data)
        if waiting is not None and waiting.holds(path, prepared.file_hash):
            return prepass.Read(prepared, held=True)  # read by a run before this one: kept
        reader.section(prepared, parse_document(path, data, prepared.file_hash))
    except Exception:  # any failure is the model's pass to report
        return None
    return prepass.Read(prepared)

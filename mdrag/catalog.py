"""Catalog: the in-memory map of every indexed file to its record, loaded from the store once."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mdrag.answers.notes import Link


@dataclass(frozen=True)
class FileRecord:
    """What the index knows of one file: enough to skip it unchanged and to report on it."""

    file_path: str
    file_hash: str
    status: str  # indexed or failed as stored; processing while the writer has it in hand
    error_message: str = ""
    warning: str = ""
    section_count: int = 0
    indexed_at: float = 0.0
    size: int = 0
    links: list[Link] = field(default_factory=list)  # what the note links to, unresolved


# The metadata row's fields a record is made of (the store reads only these to load the catalog).
RECORD_FIELDS = (
    "file_path",
    "file_hash",
    "status",
    "error_message",
    "warning",
    "section_count",
    "indexed_at",
    "size",
    "links",
)


def record_from_row(row: dict[str, Any]) -> FileRecord:
    """The catalog's record of a note, from its metadata row (written now, or read back)."""
    fields = {name: row[name] for name in RECORD_FIELDS}
    fields["links"] = (fields["links"] or {}).get("items", [])
    return FileRecord(**fields)


def records_from_rows(rows: Iterable[dict[str, Any]]) -> dict[str, FileRecord]:
    return {row["file_path"]: record_from_row(row) for row in rows}


class Catalog:
    """What the index holds, per file; the single writer updates it, searches read it.

    Searches trust a vector row only when its file_hash is the catalog's current hash for
    its file: while the writer swaps one version of a note for the next, search sees
    either the old version or the new one, never a mix.
    """

    def __init__(self, records: dict[str, FileRecord] | None = None) -> None:
        self._records = dict(records or {})
        self._transient: dict[str, str] = {}  # path -> pending | processing (not persisted)
        # The indexed notes of each file hash: where a copy's or a moved note's rows already are.
        self._holders = _holders(self._records)
        self._last_indexed_at = _latest(self._records)
        self._lock = threading.Lock()
        # Notes the index cannot hold (a path too long to open or to store), with why: failed
        # notes that no stored row can name, so kept here alone and found again by each scan.
        self._unheld: dict[str, str] = {}
        # Indexed notes that cannot be read now (permissions), with why: their indexed version
        # answers meanwhile. Not stored: each run that meets one finds it again.
        self._unread: dict[str, str] = {}

    def get(self, path: str) -> FileRecord | None:
        return self._records.get(path)

    def visible_hash(self, path: str) -> str | None:
        record = self._records.get(path)
        return record.file_hash if record is not None and record.status == "indexed" else None

    def holder_of(self, file_hash: str) -> str | None:
        """A note whose indexed version has exactly these bytes (its rows hold their vectors)."""
        return next(iter(self._holders.get(file_hash, ())), None)

    def put(self, record: FileRecord) -> None:
        with self._lock:
            self._let_go(record.file_path)
            self._unread.pop(record.file_path, None)
            self._records[record.file_path] = record
            self._transient.pop(record.file_path, None)
            if _holds(record):
                self._holders.setdefault(record.file_hash, set()).add(record.file_path)
            self._last_indexed_at = max(self._last_indexed_at, record.indexed_at)

    def remove(self, path: str) -> None:
        with self._lock:
            self._let_go(path)
            self._unread.pop(path, None)
            self._records.pop(path, None)
            self._transient.pop(path, None)

    def _let_go(self, path: str) -> None:
        """`path` no longer holds its version's rows."""
        old = self._records.get(path)
        if old is None:
            return
        holders = self._holders.get(old.file_hash)
        if holders is not None:
            holders.discard(path)
            if not holders:
                del self._holders[old.file_hash]

    def mark(self, paths: list[str], state: str) -> None:
        """Record that files are queued (pending) or being indexed (processing)."""
        with self._lock:
            for path in paths:
                self._transient[path] = state

    def clear_marks(self, paths: list[str]) -> None:
        with self._lock:
            for path in paths:
                self._transient.pop(path, None)

    def reset(self, records: dict[str, FileRecord] | None = None) -> None:
        with self._lock:
            self._records = dict(records or {})
            self._holders = _holders(self._records)
            self._last_indexed_at = _latest(self._records)
            self._transient.clear()
            self._unread.clear()

    def paths(self) -> list[str]:
        return list(self._records)

    def paths_under(self, directory: str) -> list[str]:
        """Indexed paths inside a folder, given as stored (see pathtext)."""
        prefix = directory.rstrip("/") + "/"
        return [p for p in list(self._records) if p.startswith(prefix)]

    def records(self) -> list[FileRecord]:
        return list(self._records.values())

    def unheld(self, found: dict[str, str], scope: Iterable[str] | None = None) -> None:
        """What a scan of `scope` (folders or notes; None: everywhere) found the index cannot
        hold, with why: it replaces what was known there."""
        with self._lock:
            places = None if scope is None else {place.rstrip("/") or "/" for place in scope}
            for path in list(self._unheld):
                if places is None or places.intersection(_with_folders(path)):
                    del self._unheld[path]
            self._unheld.update(found)

    def status_counts(self) -> dict[str, int]:
        with self._lock:
            counts = Counter(r.status for r in self._records.values())
            counts["failed"] += len(self._unheld)
            for path, state in self._transient.items():
                previous = self._records.get(path)
                if previous is not None:
                    counts[previous.status] -= 1
                counts[state] += 1
        return {status: n for status, n in counts.items() if n > 0}

    def section_count(self) -> int:
        return sum(r.section_count for r in list(self._records.values()) if r.status == "indexed")

    def has_sections(self) -> bool:
        """Whether any note's rows are in the store: asked by every keyword or hybrid search, so
        read off the holders kept up to date (not a pass over every record: ~1 ms at 31k notes)."""
        return bool(self._holders)

    def last_indexed_at(self) -> float:
        """When a note was last written (a removal leaves it): asked by every search without a
        daemon, so kept as notes are put (not a pass over every record: 11 ms at 31k notes)."""
        return self._last_indexed_at

    def unread(self, path: str, why: str = "") -> None:
        """An indexed note that cannot be read now, and why (its indexed version kept); no `why`:
        it was read again."""
        if why:
            with self._lock:
                if path in self._records:
                    self._unread[path] = why
        elif path in self._unread:
            with self._lock:
                self._unread.pop(path, None)

    def failed(self) -> list[FileRecord]:
        """Every note that failed, with its reason: those recorded, those the index cannot hold,
        and indexed ones that cannot be read now (their indexed version kept)."""
        unheld = [FileRecord(path, "", "failed", why) for path, why in self._unheld.copy().items()]
        unread = [FileRecord(path, "", "failed", why) for path, why in self._unread.copy().items()]
        return sorted(
            [*(r for r in list(self._records.values()) if r.status == "failed"), *unheld, *unread],
            key=lambda r: r.file_path,
        )

    def __len__(self) -> int:
        return len(self._records)


def _with_folders(path: str) -> list[str]:
    """The path and each folder above it, as stored."""
    found = [path]
    while (cut := path.rfind("/")) > 0:
        path = path[:cut]
        found.append(path)
    return [*found, "/"]


def _holds(record: FileRecord) -> bool:
    """Whether the store holds this version's rows (a note without sections has none)."""
    return record.status == "indexed" and record.section_count > 0


def _latest(records: dict[str, FileRecord]) -> float:
    return max((r.indexed_at for r in records.values()), default=0.0)


def _holders(records: dict[str, FileRecord]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for record in records.values():
        if _holds(record):
            found.setdefault(record.file_hash, set()).add(record.file_path)
    return found

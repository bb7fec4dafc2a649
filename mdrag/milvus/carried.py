"""Carried vectors: an older index layout's vectors, kept across its rebuild so nothing is embedded again."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from loguru import logger

_SCHEMA = """
CREATE TABLE vectors (section_id TEXT, window INTEGER, vector BLOB, PRIMARY KEY (section_id, window))
"""
_LOOKUP_BATCH = 500  # ids per `IN (...)`, well under SQLite's variable limit


class CarriedVectors:
    """A SQLite file of (section_id, window) -> vector, written once before an upgrade drops the
    old collections, read by the rebuild, and removed after the first complete run.

    A section id hashes the model and the embedded text, so a vector found here is exactly the one
    the model would give again; a section whose text or embedding input changed is simply absent.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def save(self, rows: Iterable[tuple[str, int, Sequence[float]]]) -> int:
        """Write every row, then move the file into place: a crash leaves no half-written file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.unlink(missing_ok=True)
        db = sqlite3.connect(partial)
        try:
            with db:
                db.execute(_SCHEMA)
                db.executemany(
                    "INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)",
                    ((sid, int(w), np.asarray(v, dtype=np.float32).tobytes()) for sid, w, v in rows),
                )
            count = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        except BaseException:
            db.close()
            partial.unlink(missing_ok=True)
            raise
        db.close()
        os.replace(partial, self.path)
        return int(count)

    def lookup(self, section_ids: Sequence[str]) -> dict[tuple[str, int], np.ndarray]:
        """Every carried window vector of these sections."""
        if not self.exists():
            return {}
        found: dict[tuple[str, int], np.ndarray] = {}
        ids = sorted(set(section_ids))
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            for start in range(0, len(ids), _LOOKUP_BATCH):
                batch = ids[start : start + _LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                for sid, window, blob in db.execute(
                    f"SELECT section_id, window, vector FROM vectors WHERE section_id IN ({marks})", batch
                ):
                    found[(sid, int(window))] = np.frombuffer(blob, dtype=np.float32)
        finally:
            db.close()
        return found

    def discard(self) -> None:
        """The rebuild is complete: every vector worth keeping is in the store again."""
        if self.exists():
            self.path.unlink()
            logger.info("the index is rebuilt; removed the vectors carried over from its old layout")

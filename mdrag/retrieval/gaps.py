"""Gaps: the searches your notes could not answer, counted per distinct query, kept beside the index."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from loguru import logger

from mdrag.answers.notes import Gap
from mdrag.errors import NotFoundError, QueryError
from mdrag.files import private
from mdrag.params.operations import GAP_STATUSES

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gaps (
    key TEXT PRIMARY KEY,          -- the query, spaces collapsed and case folded
    query TEXT NOT NULL,           -- as first asked
    count INTEGER NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    status TEXT NOT NULL,          -- open, deferred or addressed
    best_score REAL,               -- the best cosine any note reached, last time asked
    vector BLOB,                   -- the query's embedding, to notice a note that answers it
    possibly_addressed_by TEXT,    -- a note indexed later that scores at or above the threshold
    possibly_addressed_at REAL
)
"""


# The log keeps the gaps asked most recently: a daemon that runs for months (and an assistant that
# searches on its own) would otherwise grow it without end, and every note written is checked
# against each open gap's vector (~30 ms a write at 6,000 gaps). A person reviews tens of gaps.
MAX_GAPS = 1000


def gap_key(query: str) -> str:
    return " ".join(query.split()).casefold()


class GapLog:
    """A small SQLite file: the daemon and a direct CLI may both write it, so each call connects."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mdrag-gap-log")
        path.parent.mkdir(parents=True, exist_ok=True)
        private.refuse_link(path, "the gap log")  # SQLite would write through it
        with self._db() as db:
            db.execute(_SCHEMA)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = sqlite3.connect(self.path, timeout=10)
            try:
                with db:  # one transaction: committed on success, rolled back on error
                    yield db
            finally:
                db.close()

    def record(self, query: str, best_score: float | None, vector: np.ndarray | None) -> None:
        """Count one unanswered search; a query asked again reopens if it was marked addressed.

        Written by a background thread: the search that found nothing does not wait for the
        commit (~1.5 ms), and every read of the log first waits for the records before it.
        """
        blob = None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()
        self._writer.submit(self._record, query, time.time(), best_score, blob)

    def close(self) -> None:
        """Write what is pending, then stop the writer thread."""
        self._writer.shutdown(wait=True)

    def _settle(self) -> None:
        self._writer.submit(lambda: None).result()

    def _record(self, query: str, now: float, best_score: float | None, blob: bytes | None) -> None:
        try:
            self._insert(query, now, best_score, blob)
        except Exception as exc:  # the answer went out already; its bookkeeping only warns
            logger.warning("could not record the unanswered query in {}: {}", self.path, exc)

    def _insert(self, query: str, now: float, best_score: float | None, blob: bytes | None) -> None:
        with self._db() as db:
            db.execute(
                """
                INSERT INTO gaps (key, query, count, first_seen, last_seen, status, best_score, vector)
                VALUES (?, ?, 1, ?, ?, 'open', ?, ?)
                ON CONFLICT (key) DO UPDATE SET
                    count = count + 1, last_seen = excluded.last_seen, best_score = excluded.best_score,
                    vector = COALESCE(excluded.vector, vector),
                    status = CASE WHEN status = 'addressed' THEN 'open' ELSE status END,
                    possibly_addressed_by = NULL, possibly_addressed_at = NULL
                """,
                (gap_key(query), query.strip(), now, now, best_score, blob),
            )
            db.execute(  # the least recently asked go past the cap; one asked again stays
                "DELETE FROM gaps WHERE key IN "
                "(SELECT key FROM gaps ORDER BY last_seen DESC LIMIT -1 OFFSET ?)",
                (MAX_GAPS,),
            )

    def entries(self, status: str | None = None) -> list[Gap]:
        """The gaps, most frequent first (then most recent)."""
        if status is not None and status not in GAP_STATUSES:
            raise QueryError(f"status must be one of {', '.join(GAP_STATUSES)}, got {status!r}")
        self._settle()
        with self._db() as db:
            db.row_factory = sqlite3.Row
            rows = db.execute(
                "SELECT * FROM gaps WHERE (? IS NULL OR status = ?) ORDER BY count DESC, last_seen DESC",
                (status, status),
            ).fetchall()
        return [_entry(row) for row in rows]

    def count_open(self) -> int:
        self._settle()
        with self._db() as db:
            return int(db.execute("SELECT COUNT(*) FROM gaps WHERE status = 'open'").fetchone()[0])

    def set_status(self, query: str, status: str) -> Gap:
        if status not in GAP_STATUSES:
            raise QueryError(f"status must be one of {', '.join(GAP_STATUSES)}, got {status!r}")
        self._settle()
        with self._db() as db:
            db.row_factory = sqlite3.Row
            key = gap_key(query)
            changed = db.execute("UPDATE gaps SET status = ? WHERE key = ?", (status, key)).rowcount
            if not changed:
                raise NotFoundError(f"no recorded gap for the query {query!r}; `mdrag gaps` lists them")
            row = db.execute("SELECT * FROM gaps WHERE key = ?", (key,)).fetchone()
        return _entry(row)

    def notice_answers(self, paths: list[str], vectors: np.ndarray, threshold: float) -> list[str]:
        """Mark open gaps that one of these newly written windows answers; returns their queries."""
        if not len(vectors):
            return []
        self._settle()
        with self._db() as db:
            rows = db.execute(
                "SELECT key, query, vector FROM gaps WHERE status = 'open' AND vector IS NOT NULL"
            ).fetchall()
            if not rows:
                return []
            queries = np.stack([np.frombuffer(row[2], dtype=np.float32) for row in rows])
            if queries.shape[1] != vectors.shape[1]:
                return []  # recorded under another model
            scores = queries @ vectors.T
            answered = []
            for (key, query, _), row_scores in zip(rows, scores, strict=True):
                best = int(np.argmax(row_scores))
                if row_scores[best] >= threshold:
                    db.execute(
                        "UPDATE gaps SET possibly_addressed_by = ?, possibly_addressed_at = ? WHERE key = ?",
                        (paths[best], time.time(), key),
                    )
                    answered.append(query)
        return answered


def _entry(row: sqlite3.Row) -> Gap:
    return {
        "query": row["query"],
        "count": row["count"],
        "status": row["status"],
        "first_seen": row["first_seen"],
        "last_seen": row["last_seen"],
        "best_score": None if row["best_score"] is None else round(row["best_score"], 4),
        "possibly_addressed_by": row["possibly_addressed_by"],
        "possibly_addressed_at": row["possibly_addressed_at"],
    }

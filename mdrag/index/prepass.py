"""Keywords ahead: a large run's new notes, in the pending keyword index before the model reaches them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from loguru import logger

from mdrag.embedding.priority import lower_this_thread
from mdrag.index.rows import PreparedNote, window_rows
from mdrag.milvus import PendingKeywords
from mdrag.progress import ProgressMeter

# Fewer new notes than this are embedded within a minute or two (~10 notes/s on two cores):
# nothing to get ahead of, and a watcher's edit never pays for the pass.
MIN_NOTES = 200
BATCH_NOTES = 100  # notes per commit of the pending index: searchable in steps of seconds
BATCH_WINDOWS = 2048  # and never more windows than this per commit (a few long notes), as the model


class Read(NamedTuple):
    """A note the pass read; `held` when the pending index holds this version already (a run
    before this one read it ahead): nothing to write, and its texts were not counted."""

    note: PreparedNote
    held: bool = False


class KeywordsAhead:
    """A thread that reads and sections notes a run has still to embed, and writes their window
    rows to the pending keyword index, so keyword search finds them within minutes of a first
    index's start rather than when the model reaches them (hours for a large vault).

    It runs at the model's lowered priority, sharing the cores with it (reading and sectioning a
    note costs milliseconds, embedding it seconds). `notes` are the new notes with their position
    in the run; `prepare` reads one (None when it cannot: the model's pass records why). The meter
    is told each note's texts (so the run's total is counted, not guessed) and each batch's notes
    once searchable."""

    def __init__(
        self,
        pending: PendingKeywords,
        notes: list[tuple[int, str]],
        prepare: Callable[[str], Read | None],
        meter: ProgressMeter,
    ) -> None:
        self.pending = pending
        self._notes = notes
        self._prepare = prepare
        self._meter = meter
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mdrag-keywords-ahead", daemon=True)

    def start(self) -> KeywordsAhead:
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the pass after the note it is on (its written batches stay)."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        # Background work, as indexing's model runs are: searches and the user's programs first.
        lower_this_thread()
        rows: list[dict[str, Any]] = []
        notes = 0
        try:
            for position, path in self._notes:
                if self._stop.is_set():
                    return
                read = self._prepare(path)
                if read is None:
                    continue
                if not read.held:  # a held note's texts are left to the estimate: it was not sectioned
                    self._meter.sized(position, read.note.text_count)
                    rows.extend(window_rows(read.note))
                notes += 1
                if notes >= BATCH_NOTES or len(rows) >= BATCH_WINDOWS:
                    if not self._write(rows, notes):
                        return
                    rows, notes = [], 0
            self._write(rows, notes)
        except Exception:  # the pass only runs ahead: the model's pass indexes every note anyway
            logger.exception("reading notes ahead for keyword search failed; each is found once indexed")

    def _write(self, rows: list[dict[str, Any]], notes: int) -> bool:
        """Whether the pass goes on: not once stopped, nor once the index gave up (it logged why)."""
        if self._stop.is_set():
            return False
        if not self.pending.add(rows, added=lambda: self._meter.ahead(notes)):
            self._meter.ahead_lost()  # what it held is gone: no line may say those notes are found
            return False
        return True

"""Writer: the daemon's one thread that changes the index, in queue order, through outages and reopens."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from mdrag.answers.status import ProgressSnapshot, Reopen, report_line
from mdrag.config import Config
from mdrag.errors import IndexFullError, MdragError, RowsRejectedError, StoreError
from mdrag.index.workqueue import Command, FileChanges, WorkQueue
from mdrag.notes.pathtext import to_fs
from mdrag.progress import ProgressMeter
from mdrag.serve.gate import Gate

if TYPE_CHECKING:
    from mdrag.service import Service

BACKOFF_MIN_S, BACKOFF_MAX_S = 1.0, 30.0  # retry delays while the store is unavailable
# An idle writer asks the engine this often whether it answers, and gives it this long: a Milvus
# Lite server that is stuck (stopped, deadlocked) is alive, so only a call that goes unanswered
# shows it, and otherwise nothing would until a search or a write had waited out its deadline.
PING_EVERY_S, PING_DEADLINE_S = 5.0, 10.0
# A Milvus Lite index down this long, restarts of its servers failing all along: the writer gives
# up, and the daemon stops feeding systemd's watchdog, which restarts it (a server: keep waiting).
LITE_GIVE_UP_S = 120.0


class WriterState(str, Enum):
    """What the writer is doing; its own thread sets it (a str, so it reads as its word in JSON)."""

    STARTING = "starting"  # the daemon is loading the model and opening the index
    RECONCILING = "reconciling"  # bringing the index in line with every root
    WATCHING = "watching"  # up to date; applying changes as they come
    REOPENING = "reopening"  # Milvus Lite reopened after many writes (searches answered meanwhile)
    REBUILDING = "rebuilding"  # `reindex --rebuild`, beside the live index
    UNHEALTHY = "unhealthy"  # down past LITE_GIVE_UP_S: systemd should restart it

    def __str__(self) -> str:
        return self.value


class Writer:
    """Applies the work queue to the index, one item at a time, and keeps the store's health.

    While the store does not answer, work goes back in the queue and is replayed once it is
    back; a Milvus Lite index that took many writes is reopened once requests pause. Its state
    (what it is doing, the run under way, the store's error) is what the daemon reports.
    """

    def __init__(
        self,
        config: Config,
        service: Service,
        queue: WorkQueue,
        gate: Gate,
        stop: threading.Event,
        last_request_at: Callable[[], float],
    ) -> None:
        self.config = config
        self.queue = queue
        self.gate = gate  # requests share the store; a reopen or a rebuild's switch has it alone
        self._stop = stop
        self._last_request_at = last_request_at  # monotonic time of the latest request's start or end
        self.service = service
        self.state = WriterState.STARTING  # set by the writer's thread alone, once it runs
        self.meter: ProgressMeter | None = None  # the indexing run under way, if any
        self.store_error: str | None = None  # set while the store does not answer
        self.store_down_since: float | None = None  # monotonic time store_error was first set
        self.rebuilding_in_place = False  # a rebuild with the collections dropped (not built beside)
        self.reopens: deque[Reopen] = deque(maxlen=5)  # the last few, for status
        self._held_s = 0.0  # how long the reopen under way has held requests back so far
        self._ping_at = 0.0  # monotonic time of the next health ping
        self.index_full: str | None = None  # set while the index's file system has no room to write

    def reconcile_first(self) -> None:
        """Queue the first reconcile before the thread starts, so that until it is done the daemon
        reads the index as not yet in line with the notes (a search finding nothing is no gap)."""
        self.state = WriterState.RECONCILING
        self.queue.submit(Command("reconcile"))

    def run(self) -> None:
        """The writer thread's loop, until the stop event: take work, apply it, mind the store."""
        backoff = BACKOFF_MIN_S
        while not self._stop.is_set():  # each check is a beat of the writer's liveness
            if self.store_error is None and not self.service.engine_alive():
                # Killed from outside: every call would fail until its server is started again.
                self._store_failed(StoreError("a Milvus Lite server of the index has exited"), None)
            if self.store_error is not None:
                self.give_up_if_due()
                if not self._reconnect():
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, BACKOFF_MAX_S)
                    continue
                backoff = BACKOFF_MIN_S
            if self.index_full is not None and not self._room_again():
                self._stop.wait(1.0)  # a look at the free space costs nothing: catch up within a second
                continue
            work = self.queue.take(timeout=0.5)
            if work is None:
                self._ping_if_due()
                self._reopen_if_due()
                continue
            applied = False
            try:
                self._apply(work)
                applied = True
            except IndexFullError as exc:  # nothing written: searches go on, changes wait for room
                if self.index_full is None:
                    logger.error("{}", exc)
                self.index_full = str(exc)
                self._requeue(exc, work)
            except RowsRejectedError as exc:  # what a note holds, not an outage: never replayed
                logger.warning("index update refused: {}", exc)
                if isinstance(work, Command):
                    work.error = exc
            except StoreError as exc:
                self._store_failed(exc, work)
            except MdragError as exc:  # a user's mistake (a path outside the roots): one line, no traceback
                logger.warning("{}", exc)
                if isinstance(work, Command):
                    work.error = exc
            except Exception as exc:
                logger.exception("index update failed: {}", exc)
                if isinstance(work, Command):
                    work.error = exc
            finally:
                if isinstance(work, Command) and (applied or work.error is not None):
                    work.done.set()
                self.queue.finish(applied)
        logger.debug("writer stopped")

    def _store_failed(self, exc: StoreError, work: FileChanges | Command | None) -> None:
        """Keep the work for later: the store comes back and the queue replays it."""
        self.store_error = str(exc)
        if self.store_down_since is None:
            self.store_down_since = time.monotonic()
        logger.error("the store is unavailable, changes are queued and retried: {}", exc)
        self._requeue(exc, work)

    def give_up_if_due(self) -> None:
        """Past LITE_GIVE_UP_S with a Milvus Lite index down and every restart failing: unhealthy,
        so the daemon stops feeding the watchdog (a remote server cannot be restarted from here)."""
        down = self.store_down_since
        if down is None or self.state is WriterState.UNHEALTHY or not self.service.is_lite:
            return
        if time.monotonic() - down >= LITE_GIVE_UP_S:
            logger.error(
                "the index has been unavailable for {:.0f} s and restarting Milvus Lite keeps failing; "
                "no longer feeding the watchdog, so that systemd restarts the daemon",
                time.monotonic() - down,
            )
            self.state = WriterState.UNHEALTHY

    def _requeue(self, exc: StoreError, work: FileChanges | Command | None) -> None:
        if work is None:
            return
        if isinstance(work, FileChanges):
            for path in work.files:
                self.queue.add_file(path)
            for path in work.directories:
                self.queue.add_directory(path)
        elif work.kind == "reconcile":
            self.queue.submit(Command("reconcile"))
        else:
            work.error = exc  # a client waits for this reindex: tell it now
            self.queue.submit(Command("reconcile"))

    def _room_again(self) -> bool:
        """Whether the index's file system has room again (then the queued changes go in)."""
        try:
            self.service.check_room()
        except IndexFullError as exc:
            self.index_full = str(exc)
            return False
        logger.info("the index has room again; applying {} queued change(s)", self.queue.depth())
        self.index_full = None
        return True

    def _ping_if_due(self) -> None:
        """Every PING_EVERY_S while idle: an engine that does not answer is an outage, reported
        (status, log) and, for Milvus Lite, restarted by _reconnect like a dead one."""
        if self.store_error is not None or time.monotonic() < self._ping_at:
            return
        try:
            self.service.ping(PING_DEADLINE_S)
        except StoreError as exc:
            self._store_failed(exc, None)
        self._ping_at = time.monotonic() + PING_EVERY_S

    def _reopen_if_due(self) -> None:
        """Reopen a Milvus Lite index that has taken many writes since it opened, once requests
        have paused: Lite searches the rows written since the open slower than those it loaded."""
        quiet_s = time.monotonic() - self._last_request_at()
        if self._stop.is_set() or self.store_error is not None or self.gate.busy:
            return  # a request still running (a long duplicates scan, say) is not quiet
        if quiet_s < self.config.milvus_reopen_quiet_s:
            return
        try:
            rows = self.service.reopen_due(self.config.milvus_reopen_after_rows)
            if rows is None:
                return
            logger.info("reopening the index: {} vector rows were written since it opened", rows)
            self._held_s = 0.0
            self.state = WriterState.REOPENING
            seconds = self.service.reopen(self._held_for_swap)
        except StoreError as exc:
            if self._stop.is_set():  # the daemon closed the index while a new server loaded
                logger.info("the reopen stopped with the daemon: {}", exc)
                return
            self._store_failed(exc, None)
            return
        except Exception as exc:  # stopping Lite's server can fail in other ways: never lose the writer
            logger.exception("reopening the index failed: {}", exc)
            self._store_failed(StoreError(f"reopening the index failed: {exc}"), None)
            return
        finally:
            if self.state is WriterState.REOPENING:
                self.state = WriterState.WATCHING
        held_s, self._held_s = self._held_s, 0.0
        self.reopens.append(
            {
                "at": time.time(),
                "rows_written": rows,
                "seconds": round(seconds, 1),
                "requests_held_s": round(held_s, 3),
            }
        )
        logger.info("reopened the index in {:.1f} s; requests were held back {:.3f} s", seconds, held_s)

    @contextlib.contextmanager
    def _held_for_swap(self) -> Iterator[None]:
        """The gate alone, for one step of a reopen; the time requests were held back is added up."""
        self._stop.is_set()  # a beat of the writer's liveness: each shard's load ends here
        waited = time.monotonic()
        with self.gate.exclusive():
            try:
                yield
            finally:
                # What a request arriving as the gate was asked for waits at most: the wait for
                # requests in flight to finish, then the step itself.
                self._held_s += time.monotonic() - waited

    def _reconnect(self) -> bool:
        """Once the store answers again: reload what it holds and repair half-done writes."""
        try:
            # A reopen failed halfway, a server died, or a Lite server is alive and stuck: a
            # server of ours that does not answer is restarted (a remote one is waited for).
            self.service.reconnect(self.gate.exclusive)
        except Exception as exc:  # noqa: BLE001 - starting Lite's server can fail in other ways: retry later
            logger.debug("store still unavailable: {}", exc)
            return False
        logger.info("the store is back; applying {} queued change(s)", self.queue.depth())
        self.store_error = None
        self.store_down_since = None
        if self.state is WriterState.UNHEALTHY:
            self.state = WriterState.WATCHING
        return True

    def _apply(self, work: FileChanges | Command) -> None:
        if isinstance(work, FileChanges):
            if work.directories:
                folders = [Path(to_fs(d)) for d in work.directories]  # the watcher queues stored forms
                report = self.service.index_folders(folders, self._meter(), self._stop)
                logger.info("folder change: {}", report_line(report.to_dict()))
            if work.files:
                self._index_changed(work.files)
            return
        if work.kind == "reconcile":
            self.state = WriterState.RECONCILING
            report = self.service.reindex(cancel=self._stop, progress=self._meter())
            logger.info("reconciled the roots: {}", report_line(report.to_dict()))
            for root in report.roots_without_notes:
                logger.warning(
                    "no note of root {} is indexed (no .md or .markdown file outside hidden or "
                    "excluded folders, or none read): nothing of it can be found; is it the folder "
                    "you meant?",
                    root,
                )
            self.state = WriterState.WATCHING
        elif work.rebuild and not work.paths and self.service.is_lite:
            # Searches go on answering from the old index until the new one is complete.
            self.state = WriterState.REBUILDING
            try:
                report = self.service.rebuild_beside(self.gate.exclusive, self._meter(), self._stop)
            finally:
                self.state = WriterState.WATCHING
            logger.info("rebuild: {}", report_line(report.to_dict()))
        else:
            if work.rebuild:  # no beside for it: searches are told so, once those running are done
                with self.gate.exclusive():
                    self.rebuilding_in_place = True
            try:
                report = self.service.reindex(
                    work.paths or None,
                    force=work.force,
                    rebuild=work.rebuild,
                    cancel=self._stop,
                    progress=self._meter(),
                )
            finally:
                self.rebuilding_in_place = False
            logger.info("reindex: {}", report_line(report.to_dict()))
        work.result = report.to_dict()

    def _index_changed(self, files: list[str]) -> None:
        """Changed files, small ones first; a large note yields to changes saved meanwhile and
        goes back in the queue behind them (its vectors so far are kept, see Indexer)."""
        sizes = {p: _size(p) for p in files}
        large = [p for p in files if sizes[p] > LARGE_NOTE_BYTES]
        small = [p for p in files if sizes[p] <= LARGE_NOTE_BYTES]
        if small:
            report = self.service.index_files(small, self._meter(), self._stop)
            logger.info("{} changed file(s): {}", len(small), report_line(report.to_dict()))
        for i, path in enumerate(large):
            turn = _Turn(self.queue, self._stop)
            report = self.service.index_files([path], self._meter(), turn)
            if turn.yielded:
                logger.info("{} waits behind newer changes ({} large note(s) deferred)", path, len(large) - i)
                for later in large[i:]:
                    self.queue.add_file(later)
                return
            logger.info("large note {}: {}", path, report_line(report.to_dict()))

    def _meter(self) -> ProgressMeter:
        """A new run's progress: what status, searches and the log report until it ends."""
        self.meter = ProgressMeter()
        return self.meter

    def indexing(self) -> ProgressSnapshot | None:
        """The run under way (notes and texts done of those known, rate, ETA), else None."""
        meter = self.meter
        if meter is None:
            return None
        progress = meter.snapshot()
        return progress.to_dict() if progress.pending else None


LARGE_NOTE_BYTES = 256 * 1024  # a note this large takes seconds to embed: it goes after small ones
TURN_MIN_S = 0.5  # a large note embeds at least this long before it yields


class _Turn(threading.Event):
    """The `cancel` of a large note's run: set on stop, or once other work waits (see WorkQueue)."""

    def __init__(self, queue: WorkQueue, stop: threading.Event) -> None:
        super().__init__()
        self.queue, self.stop, self.started = queue, stop, time.monotonic()
        self.yielded = False

    def is_set(self) -> bool:
        if self.stop.is_set():
            return True
        if time.monotonic() - self.started >= TURN_MIN_S and self.queue.others_waiting():
            self.yielded = True
        return self.yielded


def _size(path: str) -> int:
    try:
        return os.stat(to_fs(path)).st_size
    except OSError:
        return 0

"""Daemon: builds the service, socket server, watcher and writer from config, and runs until told to stop."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loguru import logger

from mdrag.answers.search import Freshness, Live
from mdrag.answers.status import DaemonStatus, Pong, ProgressSnapshot, StartingAnswer, StatusAnswer
from mdrag.config import Config
from mdrag.errors import ConfigError, StoreError, StoreLockedError
from mdrag.files import indexlock, trust
from mdrag.files.indexfiles import IndexFiles
from mdrag.index.workqueue import Command, WorkQueue
from mdrag.milvus import index_held
from mdrag.notes.pathtext import to_text
from mdrag.params import OPERATIONS, flag
from mdrag.progress import ProgressMeter, progress_line
from mdrag.serve.gate import Gate
from mdrag.serve.liveness import Liveness, PulsingEvent
from mdrag.serve.notify import SystemdNotifier
from mdrag.serve.server import SocketServer
from mdrag.serve.writer import Writer, WriterState

if TYPE_CHECKING:  # imported when the service opens: `status` answers before pymilvus and the model load
    from mdrag.index.watcher import Watcher
    from mdrag.service import Service

STARTUP_WAIT_S = 120.0  # how long a request waits for a starting daemon
INDEX_HOLD_WAIT_S = 60.0  # how long start-up waits for a command that holds the index
WRITER_THREAD = "mdrag-writer"
PROGRESS_STREAM_S = 0.5  # and to a client that asked for progress (reindex --stream)
REQUESTS_STOP_WAIT_S = 5.0  # how long a stop waits for requests in hand before closing the index


class _StopDuringStartup(BaseException):
    """SIGTERM or SIGINT arrived before the service was up.

    A BaseException, like KeyboardInterrupt: raised from the signal handler wherever start-up
    is (opening the store, say), it must pass the `except Exception` of the code it interrupts.
    """


@dataclass
class _Running:
    """What the daemon builds once its socket is bound and the index is open: all of it at once."""

    service: Service
    writer: Writer
    watcher: Watcher  # replaced by a new one if it stops


class Daemon:
    """One process that owns the index: a writer thread applies changes, any thread may search."""

    def __init__(self, config: Config, lock: indexlock.IndexLock | None = None) -> None:
        """`lock`: the index's lock as `mdrag serve` took it before its heavy imports, or None
        when a short-lived command held it then (taken here once the socket is bound)."""
        if not config.roots:
            raise ConfigError(
                "no roots configured: set `roots` in the config file or pass --root DIR to serve"
            )
        self.config = config
        self.notifier = SystemdNotifier()
        self.queue = WorkQueue(config.watch_debounce_ms / 1000, config.watch_max_wait_ms / 1000)
        self.server = SocketServer(config.server_socket_path, self.handle)
        self._progress_logged_at = 0.0
        self._progress_logged_for: ProgressMeter | None = None  # the run those log lines are about
        self.started_at = time.time()
        # The watchdog is fed only while the writer shows progress (see _main_loop).
        self.writer_liveness = Liveness()
        self._stop = PulsingEvent(self.writer_liveness, WRITER_THREAD)
        self._ready = threading.Event()
        # Requests share the store; a reopen (see Writer) has it alone.
        self.gate = Gate()
        self.last_request_at = time.monotonic()
        self._lock = lock
        self._running: _Running | None = None  # set once, with the index open (see run)
        self._loading = "starting"  # what the start is doing, for a status asked meanwhile

    # ---- lifecycle ----------------------------------------------------------------------------

    def run(self) -> int:
        """Serve until SIGTERM or SIGINT; returns the exit code."""
        self.server.claim()  # fail fast, before the model loads, if another daemon runs
        if fallback := trust.runtime_fallback(str(self.server.path)):
            logger.warning("{}", fallback)
        # SIGHUP (the terminal closed, or `kill -HUP`) stops it cleanly as well: there is no reload.
        # Under `nohup` SIGHUP is ignored on purpose, and stays so.
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            if signum == signal.SIGHUP and signal.getsignal(signum) is signal.SIG_IGN:
                continue
            signal.signal(signum, self._on_signal)
        try:
            # Serve at once, so a client never mistakes a starting daemon for none and opens
            # the index itself; its requests wait until the service is up (see handle).
            self.server.start()
            service = self._open_service()
            # The model loads lazily (a no-op `mdrag reindex` never needs it); a daemon loads it
            # now, and the vectors too, so its first search is fast and a model that cannot load
            # fails the start.
            service.load(self._step)
            self._step("starting the file watcher")
            watcher = service.watcher(self.queue, on_overflow=self.request_sweep)
            watcher.start()  # before the first reconcile, so no change slips between the two
            writer_ = Writer(
                self.config, service, self.queue, self.gate, self._stop, lambda: self.last_request_at
            )
            writer_.reconcile_first()
            self._running = _Running(service, writer_, watcher)
            writer = threading.Thread(target=writer_.run, name=WRITER_THREAD, daemon=True)
            writer.start()
            # Only now: a request that waits for freshness must find the first reconcile queued.
            self._ready.set()
            self.notifier.ready(self._status_line())
            logger.info("serving on {}", self.server.path)
            self._main_loop()
            logger.info("stopping")
            self.notifier.stopping()
            self.server.stop()
            self.running.watcher.stop()
            writer.join(timeout=30)  # the writer finishes the batch in hand (or a reopen), then exits
            return 0
        except _StopDuringStartup:
            logger.info("stopped while starting")
            return 0
        finally:
            self.server.stop()
            if self._running is not None:
                # Never under a reopen or a request still running, but never held up for ever by
                # one that does not end (stopped for: a request may not keep the daemon alive).
                with self.gate.exclusive(timeout=REQUESTS_STOP_WAIT_S) as alone:
                    if not alone:
                        logger.warning("closing the index under requests still running after the stop")
                    self._running.service.close()
            self.notifier.close()
            logger.info("stopped")

    def _open_service(self) -> Service:
        """The daemon wins the start race. Its socket is bound, so no command opens the index from
        now on; one that looked before the bind may hold it for a moment: wait for it to let go
        (bounded, said in the log) rather than exit and leave systemd in a restart loop."""
        started = time.monotonic()
        deadline = started + INDEX_HOLD_WAIT_S
        waiting = False
        while True:
            if not index_held(self.config.milvus_uri):
                if waiting:
                    logger.info("the index was let go after {:.1f} s; opening it", time.monotonic() - started)
                try:
                    # As the daemon, for the process's life (a second `serve` reads the role and
                    # is refused at once): taken once, here or by `mdrag serve`, owned by the service.
                    lock = self._lock or indexlock.acquire(
                        IndexFiles.of(self.config).lock,
                        self.config.milvus_uri,
                        indexlock.DAEMON,
                        self.config.server_socket_path,
                    )
                    self._lock = None  # the service's from here: it releases it when it closes
                    self._step("opening the index")
                    from mdrag.service import Service

                    return Service.open(self.config, lock, pending=self.pending)
                except StoreLockedError:
                    if time.monotonic() >= deadline:
                        raise
            elif time.monotonic() >= deadline:
                raise StoreLockedError(
                    f"the index {self.config.milvus_uri} was still held by another process after "
                    f"{INDEX_HOLD_WAIT_S:.0f} s; stop that process (an `mdrag reindex`?), then start again"
                )
            if not waiting:
                waiting = True
                self._step("waiting for another process to let go of the index (a command started first)")
                logger.warning(
                    "the index is held by another process (a command that started before this daemon); "
                    "waiting up to {:.0f} s for it to finish",
                    INDEX_HOLD_WAIT_S,
                )
            time.sleep(0.1)

    def _step(self, what: str) -> None:
        """What the start is doing now: a status asked meanwhile says so, and so does systemd's."""
        self._loading = what
        self.notifier.status(what)

    def starting_status(self) -> StartingAnswer:
        """`status` before the index is open: answered at once, never after the start."""
        return {
            "daemon": {
                "state": "loading",
                "loading": self._loading,
                "pid": os.getpid(),
                "uptime_s": round(time.time() - self.started_at, 1),
                "socket": str(self.server.path),
            },
            "starting": True,
        }

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._stop.set()
        if not self._ready.is_set():
            # Loading the model can take a while; a stop request should not wait for it.
            raise _StopDuringStartup()

    def _main_loop(self) -> None:
        interval = self.config.watch_sweep_interval_s
        next_sweep = time.monotonic() + interval if interval else float("inf")
        beat = self.notifier.watchdog_interval_s
        while not self._stop.wait(min(beat or 1.0, 1.0)):
            if beat and self.feeds_watchdog() and self._writer_alive():
                self.notifier.heartbeat()
            if time.monotonic() >= next_sweep:
                self.request_sweep()
                next_sweep = time.monotonic() + interval
            # Each chore on its own: one that fails (a folder it cannot stat, a socket path it
            # cannot unlink) is logged and tried again next second, and never ends the daemon.
            for chore in (self._mind_watcher, self.server.rebind_if_gone, self._log_progress):
                try:
                    chore()
                except Exception:
                    logger.opt(exception=True).error("{} failed; trying again", chore.__name__)
            self.notifier.status(self._status_line())

    @property
    def running(self) -> _Running:
        """The service, writer and watcher; only asked for once the daemon is ready."""
        if self._running is None:
            raise StoreError("the daemon is still loading the model and opening the index; try again shortly")
        return self._running

    def _mind_watcher(self) -> None:
        running = self._running
        if running is None:
            return
        running.watcher.renew_if_due()
        self._mind_roots(running)
        if not running.watcher.alive:
            logger.error("the file watcher stopped; restarting it and sweeping the roots")
            running.watcher = running.service.watcher(self.queue, on_overflow=self.request_sweep)
            running.watcher.start()
            self.request_sweep()

    def _mind_roots(self, running: _Running) -> None:
        """Once a second: a root whose watch is lost (its folder deleted and re-created, another
        one swapped in by a rename, a drive remounted) is watched afresh and reconciled, and a
        root that came back is reconciled, so only what changed meanwhile is indexed (index/roots.py)."""
        changed = running.service.roots_changed()
        for root in running.service.root_folders:
            if running.watcher.lost(root) and running.watcher.watch_root(root):
                logger.info("root {} is another folder than the one watched; watching it again", root)
                self.queue.add_directory(to_text(str(root)))  # after the watch: a change lands in either
        for root in changed:
            self.queue.add_directory(to_text(str(root)))
        running.watcher.poll_unwatched()  # folders the inotify watch limit left unwatched

    def feeds_watchdog(self) -> bool:
        """False once the writer has given up on a Milvus Lite index (down, every restart failing):
        the watchdog then goes unfed and systemd restarts the daemon."""
        return self._running is None or self._running.writer.state is not WriterState.UNHEALTHY

    def _writer_alive(self) -> bool:
        """False once the writer is silent past its limit: the watchdog then restarts the daemon."""
        stalled = self.writer_liveness.stalled_for()
        if stalled is not None:
            logger.error("the writer has shown no progress for {:.0f} s; the watchdog will restart", stalled)
        return stalled is None

    def request_sweep(self) -> None:
        self.queue.submit(Command("reconcile"))

    def indexing(self) -> ProgressSnapshot | None:
        """The run under way (notes and texts done of those known, rate, ETA), else None."""
        return self._running.writer.indexing() if self._running is not None else None

    def pending(self) -> bool:
        """Notes wait to be indexed: the first reconcile, a run under way, or changes queued."""
        running = self._running
        first = running is None or running.writer.state is WriterState.RECONCILING
        return first or self.queue.depth() > 0

    def _log_progress(self) -> None:
        if self._running is None:
            return
        indexing = self.indexing()
        meter = self._running.writer.meter
        if meter is not self._progress_logged_for:  # a new run: its first line after a while
            self._progress_logged_for = meter
            self._progress_logged_at = time.monotonic()
        interval = self.config.log_progress_interval_s
        if indexing is None or time.monotonic() - self._progress_logged_at < interval:
            return
        self._progress_logged_at = time.monotonic()
        logger.info(progress_line(indexing))

    def _status_line(self) -> str:
        running = self.running
        indexing = self.indexing()
        if indexing is not None:
            return progress_line(indexing)
        if running.writer.state is WriterState.RECONCILING:  # not begun: notes not yet listed
            return "reconciling: listing the notes"
        roots, notes = len(running.service.root_folders), running.service.note_count()
        line = f"watching {roots} root{'s' * (roots != 1)}, {notes} note{'s' * (notes != 1)}"
        away = running.service.unavailable_roots()
        if away:
            named = ", ".join(f"{root} ({why})" for root, why in away.items())
            line += f"; {len(away)} unavailable (notes kept): {named}"
        return line

    # ---- requests from the socket -----------------------------------------------------------------

    def handle(self, op: str, params: dict[str, Any]) -> Any:
        """One request of `params.OPERATIONS` (the server checked its name): the table says who
        answers it, whether it reads the store, and whether its answer says how fresh it is."""
        operation = OPERATIONS[op]
        if operation.answered_by == "daemon":  # ping
            pong: Pong = {
                "pong": True,
                "pid": os.getpid(),
                "state": self._running.writer.state if self._running is not None else WriterState.STARTING,
                "roots": list(self.config.roots),
            }
            return pong
        if op == "status" and not self._ready.is_set():
            return self.starting_status()  # at once: what it loads, not what the index holds
        if not self._ready.wait(STARTUP_WAIT_S) or self._running is None:
            raise StoreError("the daemon is still loading the model and opening the index; try again shortly")
        service = self._running.service
        if operation.reads_store:
            self._check_store()
        if operation.fresh:
            self.last_request_at = time.monotonic()  # a search waiting for freshness is activity too
            wait = params.pop("wait_fresh", None)  # checked by its kind, as every field (params.Field)
            if wait is not None:
                self.queue.wait_idle(float(wait))  # before the gate: a reopen may be what it waits for
            # Its answer says how fresh the index it read was (taken as the read begins).
            return self._read_store(op, params, fresh=True)
        if op == "status":
            status: StatusAnswer = {"daemon": self.daemon_status(), **service.status()}
            return status
        if operation.answered_by == "writer":  # reindex
            paths = params.get("paths") or None  # a list of strings, flags true or false (params.Field)
            command = self.queue.submit(
                Command("reindex", paths, force=flag(params, "force"), rebuild=flag(params, "rebuild"))
            )
            if flag(params, "stream"):
                return self._stream_progress(command)
            return command.wait()
        if not operation.reads_store:
            return service.handle(op, params)  # the gap log, not the store
        return self._read_store(op, params)

    def _stream_progress(self, command: Command) -> Generator[ProgressSnapshot, None, Any]:
        """The progress of whatever run is under way until `command` is done, then its result
        (the server sends each as a progress line before the answer)."""
        last: ProgressMeter | None = None  # the run last reported, until its end is reported too
        while True:
            finished = command.done.wait(PROGRESS_STREAM_S)
            meter = self.running.writer.meter
            if last is not None and (finished or meter is not last or not last.snapshot().pending):
                yield last.snapshot().to_dict()  # its last count: a bar that stops at 100%
                last = None
            if finished:
                break
            if meter is not None and meter.snapshot().pending:
                last = meter
                yield meter.snapshot().to_dict()
        return command.wait()

    def _read_store(self, op: str, params: dict[str, Any], fresh: bool = False) -> Any:
        """An operation that reads the store: it shares it, and counts as activity from its
        start to its end (a reopen waits for quiet); status and gap requests do neither."""
        running = self.running
        if running.writer.rebuilding_in_place:
            raise StoreError(
                "the index is being rebuilt (`reindex --rebuild`); search again when it is done "
                "(`mdrag status` shows its progress)"
            )
        self.last_request_at = time.monotonic()
        try:
            with self.gate.shared():
                self._check_store()  # a reopen it waited for may have failed
                live = Live(self.freshness(), self.indexing()) if fresh else None
                return running.service.handle(op, params, live)
        finally:
            self.last_request_at = time.monotonic()

    def _check_store(self) -> None:
        error = self.running.writer.store_error
        if error is not None:
            raise StoreError(
                f"the Milvus store at {self.config.milvus_uri} is unavailable ({error}); "
                "changes are queued and will be applied when it is back"
            )

    def freshness(self) -> Freshness:
        return {"queue_depth": self.queue.depth(), "last_change_applied_at": self.queue.last_applied_at}

    def daemon_status(self) -> DaemonStatus:
        running = self.running
        writer = running.writer
        return {
            "store_available": writer.store_error is None,
            "store_error": writer.store_error,
            "index_full": writer.index_full,  # no room to write: changes wait, searches go on
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "state": writer.state,
            "socket": str(self.server.path),
            "index_reopens": list(writer.reopens),
            # Folders past the inotify watch limit: polled, not watched (see Watcher.poll_unwatched).
            "unwatched_folders": running.watcher.unwatched,
            "indexing": self.indexing(),
            **self.freshness(),
        }

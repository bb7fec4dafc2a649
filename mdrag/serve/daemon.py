"""Daemon: its lifecycle: socket bound, lock taken, service opened, writer and watcher run, signals, stop."""

from __future__ import annotations

import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from loguru import logger

from mdrag.config import Config
from mdrag.errors import ConfigError, StoreLockedError
from mdrag.files import indexlock, trust
from mdrag.files.indexfiles import IndexFiles
from mdrag.index.workqueue import Command, WorkQueue
from mdrag.milvus import index_held
from mdrag.notes.pathtext import to_text
from mdrag.progress import ProgressMeter, progress_line
from mdrag.serve.gate import Gate
from mdrag.serve.liveness import Liveness, PulsingEvent
from mdrag.serve.notify import SystemdNotifier
from mdrag.serve.requests import Requests
from mdrag.serve.running import DaemonState, Running
from mdrag.serve.server import SocketServer
from mdrag.serve.writer import Writer, WriterState

if TYPE_CHECKING:  # imported when the service opens: `status` answers before pymilvus and the model load
    from mdrag.service import Service

INDEX_HOLD_WAIT_S = 60.0  # how long start-up waits for a command that holds the index
WRITER_THREAD = "mdrag-writer"
REQUESTS_STOP_WAIT_S = 5.0  # how long a stop waits for requests in hand before closing the index


class _StopDuringStartup(BaseException):
    """SIGTERM or SIGINT arrived before the service was up.

    A BaseException, like KeyboardInterrupt: raised from the signal handler wherever start-up
    is (opening the store, say), it must pass the `except Exception` of the code it interrupts.
    """


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
        # Its requests are answered by `self.requests` (requests.py), built below on the state
        # that names the socket's path.
        self.server = SocketServer(config.server_socket_path, lambda op, p: self.requests.handle(op, p))
        self.state = DaemonState(self.server.path)
        # Requests share the store; a reopen (see Writer) has it alone.
        self.gate = Gate()
        self.requests = Requests(config, self.queue, self.gate, self.state)
        self._progress_logged_at = 0.0
        self._progress_logged_for: ProgressMeter | None = None  # the run those log lines are about
        # The watchdog is fed only while the writer shows progress (see _main_loop).
        self.writer_liveness = Liveness()
        self._stop = PulsingEvent(self.writer_liveness, WRITER_THREAD)
        self._lock = lock

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
            # the index itself; its requests wait until the service is up (see Requests.handle).
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
                self.config, service, self.queue, self.gate, self._stop, lambda: self.requests.last_request_at
            )
            writer_.reconcile_first()
            self.state.current = Running(service, writer_, watcher)
            writer = threading.Thread(target=writer_.run, name=WRITER_THREAD, daemon=True)
            writer.start()
            # Only now: a request that waits for freshness must find the first reconcile queued.
            self.state.ready.set()
            self.notifier.ready(self._status_line())
            logger.info("serving on {}", self.server.path)
            self._main_loop()
            logger.info("stopping")
            self.notifier.stopping()
            self.server.stop()
            try:
                self.state.running.watcher.stop()
            except Exception:  # the watches may fail to end; the writer's batch must still be kept
                logger.opt(exception=True).warning("stopping the watches failed")
            writer.join(timeout=30)  # the writer finishes the batch in hand (or a reopen), then exits
            return 0
        except _StopDuringStartup:
            logger.info("stopped while starting")
            return 0
        finally:
            self.server.stop()
            if self.state.current is not None:
                # Never under a reopen or a request still running, but never held up for ever by
                # one that does not end (stopped for: a request may not keep the daemon alive).
                with self.gate.exclusive(timeout=REQUESTS_STOP_WAIT_S) as alone:
                    if not alone:
                        logger.warning("closing the index under requests still running after the stop")
                    self.state.current.service.close()
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
        self.state.loading = what
        self.notifier.status(what)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._stop.set()
        if not self.state.ready.is_set():
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

    def _mind_watcher(self) -> None:
        running = self.state.current
        if running is None:
            return
        running.watcher.renew_if_due()
        self._mind_roots(running)
        if not running.watcher.alive:
            logger.error("the file watcher stopped; restarting it and sweeping the roots")
            running.watcher = running.service.watcher(self.queue, on_overflow=self.request_sweep)
            running.watcher.start()
            self.request_sweep()

    def _mind_roots(self, running: Running) -> None:
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
        current = self.state.current
        return current is None or current.writer.state is not WriterState.UNHEALTHY

    def _writer_alive(self) -> bool:
        """False once the writer is silent past its limit: the watchdog then restarts the daemon."""
        stalled = self.writer_liveness.stalled_for()
        if stalled is not None:
            logger.error("the writer has shown no progress for {:.0f} s; the watchdog will restart", stalled)
        return stalled is None

    def request_sweep(self) -> None:
        self.queue.submit(Command("reconcile"))

    def pending(self) -> bool:
        """Notes wait to be indexed: the first reconcile, a run under way, or changes queued."""
        running = self.state.current
        first = running is None or running.writer.state is WriterState.RECONCILING
        return first or self.queue.depth() > 0

    def _log_progress(self) -> None:
        if self.state.current is None:
            return
        indexing = self.state.indexing()
        meter = self.state.current.writer.meter
        if meter is not self._progress_logged_for:  # a new run: its first line after a while
            self._progress_logged_for = meter
            self._progress_logged_at = time.monotonic()
        interval = self.config.log_progress_interval_s
        if indexing is None or time.monotonic() - self._progress_logged_at < interval:
            return
        self._progress_logged_at = time.monotonic()
        logger.info(progress_line(indexing))

    def _status_line(self) -> str:
        running = self.state.running
        indexing = self.state.indexing()
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

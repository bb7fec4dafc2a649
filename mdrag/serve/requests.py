"""Requests: which operation a request to the daemon names, who answers it, and the answer it gets back."""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

from mdrag.answers.search import Freshness, Live
from mdrag.answers.status import DaemonStatus, Pong, ProgressSnapshot, StartingAnswer, StatusAnswer
from mdrag.config import Config
from mdrag.errors import StoreError
from mdrag.index.workqueue import Command, WorkQueue
from mdrag.params.fields import flag
from mdrag.params.operations import OPERATIONS
from mdrag.progress import ProgressMeter
from mdrag.serve.gate import Gate
from mdrag.serve.running import STILL_LOADING, DaemonState
from mdrag.serve.writer import WriterState

STARTUP_WAIT_S = 120.0  # how long a request waits for a starting daemon
PROGRESS_STREAM_S = 0.5  # how often a client that asked for progress (reindex --stream) is sent it


class Requests:
    """The daemon's answers, each asked of its service, its writer or itself; the daemon's
    lifecycle (daemon.py) sets the state they read."""

    def __init__(self, config: Config, queue: WorkQueue, gate: Gate, state: DaemonState) -> None:
        self.config = config
        self.queue = queue
        self.gate = gate  # requests share the store; a reopen (see Writer) has it alone
        self.state = state
        # Monotonic time of the latest request's start or end: a reopen waits for quiet.
        self.last_request_at = time.monotonic()

    def handle(self, op: str, params: dict[str, Any]) -> Any:
        """One request of `params.OPERATIONS` (the server checked its name): the table says who
        answers it, whether it reads the store, and whether its answer says how fresh it is."""
        operation = OPERATIONS[op]
        state = self.state
        if operation.answered_by == "daemon":  # ping
            return self.pong()
        if op == "status" and not state.ready.is_set():
            return self.starting_status()  # at once: what it loads, not what the index holds
        if not state.ready.wait(STARTUP_WAIT_S) or state.current is None:
            raise StoreError(STILL_LOADING)
        service = state.current.service
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
            daemon = self.daemon_status()
            status: StatusAnswer = {"daemon": daemon, **service.status()}
            if daemon["indexing"] is not None:  # a root's first notes may not be written yet
                status["roots_without_notes"] = []
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

    def pong(self) -> Pong:
        current = self.state.current
        return {
            "pong": True,
            "pid": os.getpid(),
            "state": current.writer.state if current is not None else WriterState.STARTING,
            "roots": list(self.config.roots),
        }

    def starting_status(self) -> StartingAnswer:
        """`status` before the index is open: answered at once, never after the start."""
        return {
            "daemon": {
                "state": "loading",
                "loading": self.state.loading,
                "pid": os.getpid(),
                "uptime_s": self.state.uptime_s(),
                "socket": str(self.state.socket),
            },
            "starting": True,
        }

    def _stream_progress(self, command: Command) -> Generator[ProgressSnapshot, None, Any]:
        """The progress of whatever run is under way until `command` is done, then its result
        (the server sends each as a progress line before the answer)."""
        last: ProgressMeter | None = None  # the run last reported, until its end is reported too
        while True:
            finished = command.done.wait(PROGRESS_STREAM_S)
            meter = self.state.running.writer.meter
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
        running = self.state.running
        if running.writer.rebuilding_in_place:
            raise StoreError(
                "the index is being rebuilt (`reindex --rebuild`); search again when it is done "
                "(`mdrag status` shows its progress)"
            )
        self.last_request_at = time.monotonic()
        try:
            with self.gate.shared():
                self._check_store()  # a reopen it waited for may have failed
                # A rebuild beside the index leaves searches on the whole of the old one: none of
                # its answers is "so far" (status shows the rebuild's progress).
                rebuilding = running.writer.state is WriterState.REBUILDING
                live = (
                    Live(self.freshness(), None if rebuilding else self.state.indexing()) if fresh else None
                )
                return running.service.handle(op, params, live)
        finally:
            self.last_request_at = time.monotonic()

    def _check_store(self) -> None:
        error = self.state.running.writer.store_error
        if error is not None:
            raise StoreError(
                f"the Milvus store at {self.config.milvus_uri} is unavailable ({error}); "
                "changes are queued and will be applied when it is back"
            )

    def freshness(self) -> Freshness:
        return {"queue_depth": self.queue.depth(), "last_change_applied_at": self.queue.last_applied_at}

    def daemon_status(self) -> DaemonStatus:
        running = self.state.running
        writer = running.writer
        return {
            "store_available": writer.store_error is None,
            "store_error": writer.store_error,
            "index_full": writer.index_full,  # no room to write: changes wait, searches go on
            "pid": os.getpid(),
            "uptime_s": self.state.uptime_s(),
            "state": writer.state,
            "socket": str(self.state.socket),
            "index_reopens": list(writer.reopens),
            # Folders past the inotify watch limit: polled, not watched (see Watcher.poll_unwatched).
            "unwatched_folders": running.watcher.unwatched,
            "indexing": self.state.indexing(),
            **self.freshness(),
        }

"""Work queue: the one writer's inbox; file events debounced and coalesced per path, plus commands."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_FILES_PER_TAKE = 1000


@dataclass
class Command:
    """A request for the writer (a reconcile, a reindex, a rebuild); callers may wait for its result."""

    kind: str  # reconcile | reindex
    paths: list[str] | None = None
    force: bool = False
    rebuild: bool = False
    result: Any = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout: float | None = None) -> Any:
        if not self.done.wait(timeout):
            raise TimeoutError(f"{self.kind} did not finish in time")
        if self.error is not None:
            raise self.error
        return self.result


@dataclass
class FileChanges:
    """Paths whose quiet time has passed: files to refresh, folders to reconcile."""

    files: list[str]
    directories: list[str]


class WorkQueue:
    """Thread-safe; the watcher and the server put work in, the writer takes it out."""

    def __init__(
        self,
        debounce_s: float = 0.5,
        max_wait_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.debounce_s = debounce_s
        # A path saved more often than the debounce would never be due: past this wait from its
        # first event it is due all the same (None: no limit).
        self.max_wait_s = max_wait_s
        self._clock = clock
        self._cond = threading.Condition()
        self._files: dict[str, float] = {}  # path -> when it is due (its last event + debounce)
        self._directories: dict[str, float] = {}
        self._first: dict[tuple[str, str], float] = {}  # (kind, path) -> its first event still pending
        self._commands: deque[Command] = deque()
        self._busy = False
        self.last_applied_at: float | None = None

    def add_file(self, path: str) -> None:
        with self._cond:
            # Re-adding moves the due time: a burst of saves to one note becomes one job.
            self._files.pop(path, None)
            self._files[path] = self._due("file", path)
            self._cond.notify_all()

    def add_directory(self, path: str) -> None:
        with self._cond:
            self._directories[path] = self._due("directory", path)
            self._cond.notify_all()

    def _due(self, kind: str, path: str) -> float:
        """Its quiet time after this event, but never past max_wait_s after its first one."""
        now = self._clock()
        first = self._first.setdefault((kind, path), now)
        due = now + self.debounce_s
        return due if self.max_wait_s is None else min(due, first + self.max_wait_s)

    def submit(self, command: Command) -> Command:
        with self._cond:
            if command.kind == "reconcile" and any(c.kind == "reconcile" for c in self._commands):
                return next(c for c in self._commands if c.kind == "reconcile")  # one sweep queued is enough
            self._commands.append(command)
            self._cond.notify_all()
        return command

    def take(self, timeout: float) -> FileChanges | Command | None:
        """The next unit of work, waiting up to `timeout`; due file changes go before commands."""
        deadline = self._clock() + timeout
        with self._cond:
            while True:
                now = self._clock()
                due_files = [p for p, due in self._files.items() if due <= now][:MAX_FILES_PER_TAKE]
                due_dirs = [p for p, due in self._directories.items() if due <= now]
                if due_files or due_dirs:
                    for path in due_files:
                        del self._files[path]
                        self._first.pop(("file", path), None)
                    for path in due_dirs:
                        del self._directories[path]
                        self._first.pop(("directory", path), None)
                    self._busy = True
                    return FileChanges(due_files, due_dirs)
                if self._commands:
                    self._busy = True
                    return self._commands.popleft()
                pending = list(self._files.values()) + list(self._directories.values())
                wake = min([deadline, *pending])
                if now >= deadline:
                    return None
                self._cond.wait(max(0.0, wake - now))

    def others_waiting(self) -> bool:
        """Whether changes past their quiet time, or a reindex a client waits for, are queued:
        a long job may yield to them."""
        with self._cond:
            now = self._clock()
            return (
                any(due <= now for due in self._files.values())
                or any(due <= now for due in self._directories.values())
                or any(c.kind == "reindex" for c in self._commands)
            )

    def finish(self, applied: bool = True) -> None:
        """The writer is done with what it took."""
        with self._cond:
            self._busy = False
            if applied:
                self.last_applied_at = time.time()
            self._cond.notify_all()

    def depth(self) -> int:
        with self._cond:
            return len(self._files) + len(self._directories) + len(self._commands) + int(self._busy)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or in hand; False if `timeout` passed first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._files or self._directories or self._commands or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

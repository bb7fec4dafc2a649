"""Index lock: mdrag's own exclusive lock on an index, so one process at a time writes it.

An `flock` on a file of mdrag's own beside the index (for a Milvus server URI, one in the data
dir named after the URI: `IndexFiles.lock`), taken before Milvus is opened and held until
released or the process ends. The file holds the holder's pid, for the error a second writer gets. It is never
unlinked, by anyone: a lock file removed while held lets the next process lock a new file of
the same name, which is how a refused second writer used to corrupt a live index (milvus-lite's
own lock file is deleted by a failed open). The kernel drops the lock when its holder dies.

A holder writes its record just after taking the lock and empties it on release, so a process
refused in between reads an empty record, or a crashed holder's: it looks again, briefly, before
it names the holder (a daemon started beside a `status` must know it met a command).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from mdrag.errors import StoreLockedError
from mdrag.files import private

DAEMON = "daemon"
COMMAND = "command"
HOLDER_RECORD_WAIT_S = 1.0  # a holder writes its record microseconds after its flock


class IndexBusyError(StoreLockedError):
    """Another process holds the index's lock (it names that process's pid)."""

    def __init__(self, index: str, pid: int | None, role: str = "", socket: str = "") -> None:
        holder = f"mdrag process {pid}" if pid else "another mdrag process"
        if role == DAEMON:
            holder = f"the mdrag daemon (process {pid})" if pid else "an mdrag daemon"
        where = (
            f"its socket {socket} (server.socket_path)"
            if socket
            else "its socket (the same server.socket_path)"
        )
        super().__init__(
            f"the index {index} is in use by {holder}. Only one process may write an index: "
            f"if that is an mdrag daemon, talk to it through {where}, or stop it first"
        )
        self.pid = pid
        self.role = role  # DAEMON, or COMMAND for a short-lived command (the daemon waits for those)
        self.socket = socket  # the socket a daemon serves (or will serve once started); "" if unknown


class IndexLock:
    """A held lock; `release()` once for each `acquire()` that returned it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._holds = 1

    @property
    def held(self) -> bool:
        return self._holds > 0

    def release(self) -> None:
        with _guard:
            if self._holds == 0:
                return
            self._holds -= 1
            if self._holds == 0:
                _held.pop(self.path, None)
                try:
                    os.ftruncate(self._fd, 0)  # no record left to name a process that let go
                except OSError:
                    pass
                os.close(self._fd)  # closing the only descriptor drops the flock


_guard = threading.Lock()
_held: dict[Path, IndexLock] = {}  # locks this process holds: a second acquire shares the first


def acquire(path: Path, index: str | None = None, role: str = COMMAND, socket: str = "") -> IndexLock:
    """Take the lock at `path` (creating the file), or raise IndexBusyError naming its holder.

    The file says who holds it (pid and role, and a daemon's socket on a second line), so a
    starting daemon can tell a command it should wait for from another daemon it must not start
    beside, and a command can wait for a daemon that holds the index but has not bound its socket.

    Within one process the lock is shared: the daemon's reopens and a command's two layers
    (the backend and its service) each acquire and release it without ever dropping it between.
    """
    path = Path(path).absolute()
    # The whole take runs under the guard, its wait for a holder's record (≤ HOLDER_RECORD_WAIT_S)
    # included: a second thread of this process must find the lock in _held, never open a second
    # descriptor, whose flock would be refused by our own and name this process as the holder.
    with _guard:
        lock = _held.get(path)
        if lock is not None:
            lock._holds += 1
            return lock
        path.parent.mkdir(parents=True, exist_ok=True)
        # Never through a link: the record below would truncate whatever it points to.
        fd = private.open_file(path, os.O_RDWR | os.O_CREAT, "the index lock")
        try:
            holder = _lock_or_holder(fd)
        except BaseException:
            os.close(fd)
            raise
        if holder is not None:
            os.close(fd)
            raise IndexBusyError(index or str(path), *holder)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {role}\n{socket}\n".encode(), 0)
        lock = _held[path] = IndexLock(path, fd)
        return lock


def _lock_or_holder(fd: int) -> tuple[int | None, str, str] | None:
    """None once `fd` holds the lock; else its holder's record (pid, role, socket). A record that
    is empty or names a dead process is a holder caught before it wrote its own: look again, up
    to HOLDER_RECORD_WAIT_S, then name what is there."""
    deadline = time.monotonic() + HOLDER_RECORD_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            holder = _read_holder(fd)
            if (holder[0] is not None and _alive(holder[0])) or time.monotonic() >= deadline:
                return holder
            time.sleep(0.01)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process, alive
    return True


def _read_holder(fd: int) -> tuple[int | None, str, str]:
    """(pid, role, socket) as the holder wrote them; an older file holds the pid alone."""
    try:
        first, _, rest = os.pread(fd, 4096, 0).decode().partition("\n")
        words = first.split()
        pid = (int(words[0]) or None) if words else None
        return pid, words[1] if len(words) > 1 else "", rest.rstrip("\n")
    except (OSError, ValueError):
        return None, "", ""

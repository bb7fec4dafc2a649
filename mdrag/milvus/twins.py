"""Twins: a second Milvus Lite server of a database, loaded beside the running one, then in its place."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

from mdrag.errors import StoreError
from mdrag.files.indexfiles import lite_log
from mdrag.milvus.lite import guard_lock_files, replace_server, running_server, server_class

# A twin (start) starts only where the memory free is this many times what the running
# server holds: it loads as much, and the machine keeps some to spare rather than swap.
TWIN_ROOM = 1.5


def start(db: Path) -> Any:
    """A second Lite server of `db`, started beside the one that serves it, which keeps serving.

    Both read the same database file (SQLite's own locks let two processes read it; nothing
    writes meanwhile: the caller is the index's one writer). The twin shares the running
    server's lock: the same open lock file, so a process outside finds the index held
    throughout. Raises StoreError when the twin does not start.
    """
    guard_lock_files()
    running = running_server(db)
    if running is None or running._p is None:
        raise StoreError(f"no Milvus Lite server of this process serves {db}")
    needed, free = _resident_bytes(running._p.pid), _available_bytes()
    if needed is not None and free is not None and free < TWIN_ROOM * needed:
        raise StoreError(
            f"too little free memory for a second Milvus Lite server of {db.name} "
            f"({free >> 20} MB available, ~{needed >> 20} MB needed)"
        )
    twin = server_class()(str(db.absolute().resolve()))  # the key milvus-lite registers it by
    twin._mdrag_shared_lock = running._lock_fd
    twin._mdrag_beside = getattr(running, "_mdrag_home", None)  # its own home (lite.home_for)
    try:
        started = twin.init() and twin.start()
    except BaseException as exc:  # spawning can fail (no memory, no process slot): never drop the lock
        end(twin)
        raise StoreError(f"a second Milvus Lite server of {db} did not start: {exc}") from exc
    if not started:
        end(twin)
        raise StoreError(f"a second Milvus Lite server of {db} did not start; see {lite_log(db)}")
    return twin


def _resident_bytes(pid: int) -> int | None:
    """A process's resident memory (Linux), or None where it cannot be read."""
    return _proc_bytes(f"/proc/{pid}/status", "VmRSS:")


def _available_bytes() -> int | None:
    """Memory the kernel can give without swapping (Linux's MemAvailable), or None."""
    return _proc_bytes("/proc/meminfo", "MemAvailable:")


def _proc_bytes(path: str, field: str) -> int | None:
    """A figure in kB of a /proc file (`field` starts its line), in bytes; None where unreadable."""
    try:
        with open(path, encoding="ascii") as found:
            for line in found:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def hand_over(db: Path, twin: Any) -> Any:
    """Make `twin` (start) the server of `db`; returns the one that served it until now, which
    the caller ends (`end`) once requests are let through again."""
    old = replace_server(db, twin)
    if old is not None:
        twin._lock_fd = twin._lock_fd or old._lock_fd
        old._lock_fd = None  # the twin's now: see end()
    return old


def end(server: Any) -> None:
    """End a server that shares its lock descriptor with another (a twin, or the one a twin took
    over from), leaving the descriptor open and the lock held.

    A Lite server exits once its lock is free, and a POSIX lock belongs to the process: closing
    any descriptor of the lock file frees it for every server of this process (a twin with a
    lock file of its own, whose predecessor's descriptor was closed, died within a second). So
    the servers of a database share one descriptor, which only the last one's stop closes, and
    this one is told to end by a signal instead (it has no write in hand). Its own stop (and
    milvus-lite's __del__, which calls it) does nothing afterwards.
    """
    server._lock_fd = None
    server._mdrag_held = False
    process = server._p
    server._p = None
    if process is not None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(server._uds_path)

"""Twins: a second Milvus Lite server of a database, loaded beside the running one, then in its place."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

from mdrag.errors import StoreError
from mdrag.indexfiles import lite_log
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
    if not (twin.init() and twin.start()):
        _end_beside(twin, running)
        raise StoreError(f"a second Milvus Lite server of {db} did not start; see {lite_log(db)}")
    return twin


def _resident_bytes(pid: int) -> int | None:
    """A process's resident memory (Linux), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _available_bytes() -> int | None:
    """Memory the kernel can give without swapping (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def hand_over(db: Path, twin: Any) -> None:
    """Make `twin` (start) the server of `db`, and end the one that served it until now."""
    old = replace_server(db, twin)
    if old is not None:
        _end_beside(old, twin)


def discard(db: Path, twin: Any) -> None:
    """End a twin that will not take over (its load failed): the running server stays."""
    running = running_server(db)
    if running is not None:
        _end_beside(twin, running)
    else:  # nothing shares its lock: a plain stop
        twin.stop()


def _end_beside(ending: Any, staying: Any) -> None:
    """End `ending`'s process; the lock file they share stays open and locked, now `staying`'s.

    A Lite server exits once its lock is free, and a POSIX lock belongs to the process: closing
    any descriptor of the lock file frees it for every server of this process (a twin with a
    lock file of its own, whose predecessor's descriptor was closed, died within a second). So
    the two share one descriptor, which only the last server's stop closes, and `ending` is told
    to end by a signal instead (it has no write in hand).
    """
    staying._lock_fd = staying._lock_fd or ending._lock_fd
    ending._lock_fd = None
    ending._mdrag_held = False
    process = ending._p
    ending._p = None
    if process is not None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(ending._uds_path)

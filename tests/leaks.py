"""The leak guard: a test that leaves a thread or a process behind fails, and what it left is ended.

Compared before and after each test (and each test module, for module-scoped fixtures):
non-daemon Python threads, and this process's descendant processes (daemons, CLI runs,
Milvus Lite servers). Long-lived helpers of session fixtures are allowed by name or by PID.
A new child of a process that was already there (a module's daemon restarting the Lite server a
test killed) is that process's, not the test's: the guard of the fixture that owns it checks it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Threads a session fixture starts on first use and keeps for the session, by name prefix.
ALLOWED_THREADS: tuple[str, ...] = ()
_allowed_pids: set[int] = set()  # session-long processes (the Milvus standalone server)
GRACE_S = 5.0  # a thread or process that is on its way out gets this long to finish


def allow_process(pid: int) -> None:
    """A process a session fixture keeps for the whole session (and its children)."""
    _allowed_pids.add(pid)


def live_threads() -> set[threading.Thread]:
    """Running non-daemon threads other than the main one and the allowed ones."""
    return {
        t
        for t in threading.enumerate()
        if t.is_alive()
        and not t.daemon
        and t is not threading.main_thread()
        and not t.name.startswith(ALLOWED_THREADS)
    }


def _children() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group) of every live (not zombie) process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            table[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return table


def descendant_processes() -> set[int]:
    """PIDs of this process's live descendants, less the allowed ones and theirs.

    Also every other process of this process group: a child killed with SIGKILL leaves its own
    children (Milvus Lite servers) to init, but they stay in the group.
    """
    table = _children()
    found = {pid for pid, (_, group) in table.items() if group == os.getpgrp()} - {os.getpid()}
    roots = {os.getpid()}
    while roots:
        roots = {pid for pid, (parent, _) in table.items() if parent in roots and pid not in found}
        found |= roots
    allowed = set(_allowed_pids)
    grown = True
    while grown:  # an allowed process's own children are allowed too
        more = {pid for pid, (parent, _) in table.items() if parent in allowed} - allowed
        allowed |= more
        grown = bool(more)
    return found - allowed


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _new_processes(pids_before: set[int]) -> set[int]:
    """Descendants that are new since `pids_before`, less the children of processes from before
    that still run: a long-lived fixture's process (a daemon) may start its helpers again."""
    table = _children()
    return {
        pid for pid in descendant_processes() - pids_before if table.get(pid, (0, 0))[0] not in pids_before
    }


def left_behind(threads_before: set[threading.Thread], pids_before: set[int]) -> list[str]:
    """What is new since `before` after a grace time, named; the processes among it are killed."""
    deadline = time.monotonic() + GRACE_S
    while True:
        threads = live_threads() - threads_before
        pids = _new_processes(pids_before)
        if (not threads and not pids) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    found = [f"thread {t.name!r} ({t.__class__.__name__})" for t in threads]
    for pid in sorted(pids):
        found.append(f"process {pid}: {_command(pid)[:160]}")
        try:
            os.kill(pid, signal.SIGKILL)  # so the tests after this one start clean
        except OSError:
            pass
    return found


def _guard(what: str) -> Iterator[None]:
    threads, pids = live_threads(), descendant_processes()
    yield
    left = left_behind(threads, pids)
    if left:
        pytest.fail(f"{what} left behind:\n  " + "\n  ".join(left), pytrace=False)


@pytest.fixture(autouse=True)
def leak_guard() -> Iterator[None]:
    """Set up before any other function-scoped fixture, so it checks after they are torn down."""
    yield from _guard("this test")


@pytest.fixture(autouse=True, scope="module")
def module_leak_guard() -> Iterator[None]:
    """The same for module-scoped fixtures (a daemon shared by a module's tests)."""
    yield from _guard("this module's fixtures")

"""mdrag's own index lock: one writer per index, refused ones told who holds it, no lock file ever removed."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mdrag.files import indexlock
from mdrag.files.indexfiles import IndexFiles
from mdrag.files.indexlock import IndexBusyError


def held_by_anyone(path: Path) -> bool:
    """A probe through a descriptor of its own: flock conflicts across descriptors, even in one process."""
    with open(path, "a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


HOLD = (
    "import sys, time; from pathlib import Path; from mdrag.files import indexlock;"
    "indexlock.acquire(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)"
)


@pytest.mark.slow
def test_a_second_process_is_refused_with_the_holders_pid_and_the_file_stays(tmp_path):
    path = tmp_path / "milvus.db.mdrag.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        inode = path.stat().st_ino
        for _ in range(5):
            with pytest.raises(IndexBusyError, match=f"in use by mdrag process {holder.pid}") as refused:
                indexlock.acquire(path, "the notes index")
            assert refused.value.pid == holder.pid
            assert path.stat().st_ino == inode  # refused, and the holder's file untouched
        assert held_by_anyone(path)
    finally:
        holder.kill()
        holder.communicate(timeout=10)  # reaps it and closes its pipe
    lock = indexlock.acquire(path)  # the kernel dropped the dead holder's lock
    assert lock.held
    lock.release()


def test_one_process_shares_its_lock_until_its_last_release(tmp_path):
    path = tmp_path / "index.mdrag.lock"
    first = indexlock.acquire(path)
    second = indexlock.acquire(path)
    assert second is first
    first.release()
    assert held_by_anyone(path)
    second.release()
    assert not held_by_anyone(path)
    assert path.exists()  # released, never unlinked: a waiting process may hold its descriptor


def test_a_lite_index_is_locked_beside_it_and_a_server_index_in_the_data_dir(tmp_path):
    assert (
        IndexFiles.at(str(tmp_path / "milvus.db"), tmp_path / "data").lock
        == tmp_path / "milvus.db.mdrag.lock"
    )
    one = IndexFiles.at("http://localhost:19530", tmp_path / "data").lock
    other = IndexFiles.at("http://otherhost:19530", tmp_path / "data").lock
    assert one.parent == tmp_path / "data" and one != other


@pytest.mark.slow
def test_stopping_a_lite_server_twice_never_removes_a_lock_file_it_no_longer_holds(tmp_path):
    from milvus_lite.server import Server

    from mdrag.milvus import lite

    lite.guard_lock_files()
    db = tmp_path / "milvus.db"
    server = Server(str(db))
    assert server.init() and server.start()
    server.stop()
    lock = tmp_path / ".milvus.db.lock"
    lock.write_text("")  # meanwhile another process opened the database and holds this file
    server.stop()  # as __del__ does again later
    assert lock.exists()


# A holder caught between its flock and its record: it takes the lock, waits, then writes
# "PID command" over whatever the file held (nothing, or a crashed holder's record).
SLOW_WRITER = (
    "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
    "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); delay = float(sys.argv[2]);"
    "time.sleep(max(delay, 0))\n"
    "if delay >= 0: os.ftruncate(fd, 0); os.pwrite(fd, f'{os.getpid()} command\\n\\n'.encode(), 0)\n"
    "time.sleep(60)"
)


def refused_by_slow_writer(path: Path, delay: float) -> tuple[IndexBusyError, int]:
    with subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITER, str(path), str(delay)], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            with pytest.raises(IndexBusyError) as refused:
                indexlock.acquire(path, "the notes index", indexlock.DAEMON)
            return refused.value, holder.pid
        finally:
            holder.kill()


def dead_pid() -> int:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(gone.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("left_before", ["", "{dead} daemon\n/elsewhere.sock\n", "garbage"])
def test_a_holder_caught_before_it_wrote_its_record_is_named_once_it_has(tmp_path, left_before):
    # The window a starting daemon met beside a polled `status`: it read an empty record, took
    # the command for an unknown process and exited. Any record not naming a live process
    # (empty, a crashed holder's, unreadable) is looked at again until the holder has written.
    path = tmp_path / "milvus.db.mdrag.lock"
    path.write_text(left_before.format(dead=dead_pid()))
    busy, pid = refused_by_slow_writer(path, 0.3)
    assert (busy.pid, busy.role) == (pid, indexlock.COMMAND)


@pytest.mark.slow
def test_a_holder_that_never_writes_its_record_is_refused_as_unknown_within_the_bound(tmp_path):
    path = tmp_path / "milvus.db.mdrag.lock"
    started = time.monotonic()
    busy, _ = refused_by_slow_writer(path, -1)
    assert busy.pid is None and busy.role == "" and "another mdrag process" in str(busy)
    assert indexlock.HOLDER_RECORD_WAIT_S <= time.monotonic() - started < 10


def test_a_released_lock_leaves_no_record_behind(tmp_path):
    path = tmp_path / "index.mdrag.lock"
    lock = indexlock.acquire(path, role=indexlock.DAEMON, socket="/run/mdrag.sock")
    assert path.read_text().split() == [str(os.getpid()), "daemon", "/run/mdrag.sock"]
    lock.release()
    assert path.exists() and path.read_text() == ""

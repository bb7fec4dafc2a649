"""mdrag's own index lock: one writer per index, refused ones told who holds it, no lock file ever removed."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

from mdrag import indexlock
from mdrag.indexlock import IndexBusyError


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
    "import sys, time; from pathlib import Path; from mdrag import indexlock;"
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
        indexlock.lock_path(str(tmp_path / "milvus.db"), tmp_path / "data")
        == tmp_path / "milvus.db.mdrag.lock"
    )
    one = indexlock.lock_path("http://localhost:19530", tmp_path / "data")
    other = indexlock.lock_path("http://otherhost:19530", tmp_path / "data")
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

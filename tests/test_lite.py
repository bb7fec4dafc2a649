"""Milvus Lite servers: a command's early server is the one its store opens, a held database is
left to the store's own open (and its clear error), and each server keeps its engine's files to
itself."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from mdrag.milvus import lite, twins
from tests.conftest import stand_in_lite_server


def test_the_store_opens_to_the_server_started_early(tmp_path):
    from mdrag.milvus.store import Store

    uri = str(tmp_path / "index" / "milvus.db")
    threads = lite.start_early(uri)
    dbs = lite.database_files(uri)
    assert len(threads) == len(dbs) >= 2  # one server per shard, all started at once
    for thread in threads:
        thread.join(30)
    assert all(lite.started_here(db) and lite.lock_held(db) for db in dbs)
    store = Store(uri, dimension=384, model_id="m")
    try:
        assert store.count_vectors() == 0
    finally:
        store.close()
    for db in dbs:
        assert not lite.started_here(db) and not lite.lock_held(db)  # stopped by close, lock gone


def test_no_head_start_for_a_server_uri_or_a_database_another_process_holds(tmp_path):
    assert lite.start_early("http://localhost:19530") == []
    db = tmp_path / "milvus.db"
    (tmp_path / ".milvus.db.lock").write_text("")
    assert lite.start_early(str(db)) == []


def test_a_lite_server_slow_to_listen_is_waited_for(tmp_path, monkeypatch):
    # On a loaded machine a server may take longer than milvus-lite's fixed 0.5 s to listen:
    # CI once met "No such file or directory" on the first connect. Here one takes 1.5 s.
    from mdrag.milvus.store import Store

    monkeypatch.setenv("BIN_PATH", str(stand_in_lite_server(tmp_path / "bin", "sleep 1.5")))
    started = time.monotonic()
    store = Store(str(tmp_path / "index" / "milvus.db"), dimension=384, model_id="m")
    try:
        assert store.count_vectors() == 0
        assert time.monotonic() - started >= 1.5
    finally:
        store.close()


def test_a_lite_server_that_exits_at_once_is_reported_not_waited_for(tmp_path, monkeypatch):
    from mdrag.errors import StoreError
    from mdrag.milvus.store import Store

    monkeypatch.setenv("BIN_PATH", str(stand_in_lite_server(tmp_path / "bin", "exit 3")))
    started = time.monotonic()
    with pytest.raises(StoreError, match="cannot open the Milvus store"):
        Store(str(tmp_path / "index" / "milvus.db"), dimension=384, model_id="m")
    assert time.monotonic() - started < lite.SERVER_UP_S


def environment(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def glog_files(pid: int, since: float) -> list[Path]:
    """The log files glog names after a process (NAME.HOST.USER.log.LEVEL.DATE-TIME.PID), in the
    folders it writes them to when told nothing, written since a time: an older one is an earlier
    process's that had the same pid (CI met one from the day before)."""
    folders = {Path("/tmp"), Path(tempfile.gettempdir())}
    return [
        path
        for folder in folders
        for path in folder.glob(f"milvus.*.log.*.{pid}")
        if path.stat().st_mtime >= since
    ]


def test_each_lite_server_keeps_its_engines_files_in_a_home_of_its_own(tmp_path):
    # The engine keeps a scratch folder in $HOME/.cache/milvus and empties it when it sets up:
    # servers sharing the user's home broke each other's set-up (CI: "Mmap manager has not been
    # init" on every call of one server). Its glog also left two log files in /tmp per start.
    from mdrag.milvus.store import Store

    uri = str(tmp_path / "index" / "milvus.db")
    started = time.time() - 1  # file times are coarser than the clock
    store = Store(uri, dimension=384, model_id="m")
    try:
        dbs = lite.database_files(uri)
        servers = [lite.running_server(db) for db in dbs]
        twin = twins.start(dbs[0])  # a reopen's second server of a database, beside the first
        try:
            pids = [server._p.pid for server in [*servers, twin]]
            envs = [environment(pid) for pid in pids]
            homes = [Path(env["HOME"]) for env in envs]
            assert len(set(homes)) == len(pids) == len(dbs) + 1
            assert all(home.parent == tmp_path / "index" for home in homes)
            assert all((home / ".cache" / "milvus").is_dir() for home in homes[: len(dbs)])  # in use
            assert not (Path.home() / ".cache" / "milvus").exists()  # the user's: never touched
            assert [path for pid in pids for path in glog_files(pid, started)] == []
        finally:
            twins.end(twin)
    finally:
        store.close()


def thread_names(pid: int) -> set[str]:
    names = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended since the listing (gRPC's come and go)
            names.add((task / "comm").read_text().strip())
    return names


def test_each_lite_server_gives_back_what_it_frees(tmp_path, monkeypatch):
    # The engine's allocator is jemalloc, which without its background thread purges freed pages
    # only while the process allocates: an idle server kept what loading and bulk writes freed
    # (docs/design/milvus.md, "Engine"). The settings must reach every server, a twin's included,
    # and take effect: jemalloc names the purging thread it starts.
    from mdrag.milvus.store import Store

    monkeypatch.delenv("MALLOC_CONF", raising=False)
    uri = str(tmp_path / "index" / "milvus.db")
    store = Store(uri, dimension=384, model_id="m")
    try:
        servers = [lite.running_server(db) for db in lite.database_files(uri)]
        twin = twins.start(lite.database_files(uri)[0])
        try:
            pids = [server._p.pid for server in [*servers, twin]]
            assert [environment(pid).get("MALLOC_CONF") for pid in pids] == [lite.LITE_ALLOCATOR] * len(pids)
            assert all("jemalloc_bg_thd" in thread_names(pid) for pid in pids)
        finally:
            twins.end(twin)
    finally:
        store.close()


def test_a_users_own_allocator_settings_reach_the_lite_servers_as_they_are(tmp_path, monkeypatch):
    from mdrag.milvus.store import Store

    monkeypatch.setenv("MALLOC_CONF", "background_thread:false")
    uri = str(tmp_path / "index" / "milvus.db")
    store = Store(uri, dimension=384, model_id="m")
    try:
        pids = [lite.running_server(db)._p.pid for db in lite.database_files(uri)]
        assert {environment(pid).get("MALLOC_CONF") for pid in pids} == {"background_thread:false"}
        assert not any("jemalloc_bg_thd" in thread_names(pid) for pid in pids)
    finally:
        store.close()


def make_collections_at_once(clients) -> list[str]:
    """Each client makes its first collection at the same moment; the errors, if any."""
    together, failures = threading.Barrier(len(clients)), []

    def make_collection(client):
        together.wait()
        try:
            client.create_collection("vectors", dimension=4)
        except Exception as exc:  # noqa: BLE001 - collected for the test to assert
            failures.append(str(exc))

    threads = [threading.Thread(target=make_collection, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return failures


def test_a_server_started_past_a_stale_lock_file_runs_in_its_own_home_too(tmp_path):
    # A lock file nobody holds (left by a crash) sends the first database to milvus-lite's own
    # manager, which starts its own kind of server unless told ours: in a fresh process.
    index = tmp_path / "index"
    index.mkdir()
    (index / ".milvus.db.lock").write_text("")
    probe = (
        "import os\n"
        "from mdrag.milvus import lite\n"
        "from mdrag.milvus.store import Store\n"
        f"store = Store({str(index / 'milvus.db')!r}, dimension=384, model_id='m')\n"
        f"pid = lite.running_server(lite.database_path({str(index / 'milvus.db')!r}))._p.pid\n"
        "print(open(f'/proc/{pid}/environ', 'rb').read().split(b'HOME=')[1].split(b'\\0')[0].decode())\n"
        "store.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(index / ".milvus.db.home1")


def test_lite_servers_that_set_up_at_the_same_moment_all_work(tmp_path):
    # Four databases' servers making their first collection at once: with one shared scratch
    # folder, 12 rounds in 20 had a server whose every call failed from then on.
    from pymilvus import MilvusClient

    for round_ in range(5):
        dbs = [tmp_path / f"round{round_}" / f"db{i}.db" for i in range(4)]
        lite.start(dbs)
        clients = [MilvusClient(str(db)) for db in dbs]
        failures = make_collections_at_once(clients)
        for client in clients:
            client.close()
        lite.release(dbs)
        assert failures == []

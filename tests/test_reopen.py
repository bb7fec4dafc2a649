"""Reopening a Milvus Lite index: new servers load beside the running ones, which answer meanwhile;
a twin that fails leaves the running servers serving and the index held."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mdrag.config import Config
from mdrag.errors import StoreError
from mdrag.milvus import lite, twins
from mdrag.serve.gate import Gate
from tests.conftest import write

BREAD = "# Sourdough\n\nFeed the starter flour and water every day; it doubles in six hours.\n"
GIT = "# Git\n\nRebase your branch onto main before merging it.\n"


@pytest.fixture()
def lite_service(tmp_path, embedder, notes):
    from mdrag.service import Service

    write(notes / "bread.md", BREAD)
    write(notes / "git.md", GIT)
    config = Config().with_overrides(
        roots=(str(notes),),
        milvus_uri=str(tmp_path / "index" / "milvus.db"),
        server_socket_path=str(tmp_path / "s.sock"),
    )
    service = Service.open(config, embedder=embedder)
    service.reindex()
    yield service
    service.close()


def server_pids(service) -> list[int]:
    from milvus_lite.server_manager import server_manager_instance as manager

    return [manager._servers[str(Path(uri).resolve())]._p.pid for uri in service.store._db.uris]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def held_elsewhere(uri: str) -> bool:
    """Whether another process finds the index held (a POSIX lock never conflicts with its own process)."""
    probe = f"from mdrag.milvus import lite; print(lite.index_held({uri!r}))"
    return (
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "True"
    )


def lock_descriptors(uri: str) -> list[str]:
    """This process's open descriptors of the index's Lite lock files."""
    locks = {str(lite.lite_lock(db)) for db in lite.database_files(uri)}
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target in locks:
            found.append(target)
    return sorted(found)


def first_text(service, query: str) -> str:
    return service.search({"query": query, "threshold": 0.0})["results"][0]["section_text"]


def test_searches_are_answered_while_a_reopen_loads_and_the_new_servers_take_over(lite_service, notes):
    service, store, gate = lite_service, lite_service.store, Gate()
    old_pids = server_pids(service)
    loading, release = threading.Event(), threading.Event()
    load_twin = store._loading.load_twin

    def slow_load(shard, client):
        loading.set()
        assert release.wait(30)
        load_twin(shard, client)

    store._loading.load_twin = slow_load
    reopened: list[float] = []
    reopen = threading.Thread(target=lambda: reopened.append(store.reopen(gate.exclusive)))
    reopen.start()
    try:
        assert loading.wait(30)
        started = time.monotonic()
        with gate.shared():  # as a daemon's search asks: the gate is free while the twin loads
            assert "starter" in first_text(service, "how often do I feed my sourdough")
        assert time.monotonic() - started < 1.0
    finally:
        release.set()
        reopen.join(60)
    assert reopened and store.rows_written == 0
    new_pids = server_pids(service)
    assert set(new_pids).isdisjoint(old_pids) and all(gone(pid) for pid in old_pids)
    assert lite.servers_alive([Path(uri) for uri in store._db.uris])
    assert held_elsewhere(store.uri)  # the old servers' lock passed to the new ones, never freed
    store._loading.load_twin = load_twin
    locks = lock_descriptors(store.uri)
    assert len(locks) == store.shards  # one open lock file per shard, shared by its servers
    for _ in range(2):  # and on to the next servers, each time
        store.reopen(gate.exclusive)
        gc.collect()
    assert lock_descriptors(store.uri) == locks  # months of reopens open no more files
    time.sleep(1.5)  # a Lite server whose lock is freed exits within a second
    assert lite.servers_alive([Path(uri) for uri in store._db.uris])
    new_pids = server_pids(service)
    assert "Rebase" in first_text(service, "merge my git branch")
    write(notes / "git.md", GIT.replace("Rebase", "Squash"))  # and it takes writes again
    assert service.reindex().updated == 1
    assert "Squash" in first_text(service, "merge my git branch")
    uri = store.uri
    service.close()
    assert all(gone(pid) for pid in new_pids) and not held_elsewhere(uri)
    assert not any(lite.lite_lock(Path(db)).exists() for db in lite.database_files(uri))


def test_a_twin_that_fails_leaves_the_running_servers_serving(lite_service):
    service, store, gate = lite_service, lite_service.store, Gate()
    pids = server_pids(service)

    def failing_load(shard, client):
        raise StoreError("the twin ran out of memory")

    with pytest.raises(StoreError, match="out of memory"):
        store._db.reopen_beside(failing_load, gate.exclusive)
    time.sleep(1.5)  # a Lite server whose lock is freed exits within a second
    assert server_pids(service) == pids and not any(gone(pid) for pid in pids)
    assert held_elsewhere(store.uri)
    assert "starter" in first_text(service, "how often do I feed my sourdough")
    # Store.reopen then reopens in place, requests held back meanwhile.
    store._loading.load_twin = failing_load
    assert store.reopen(gate.exclusive) > 0
    assert all(gone(pid) for pid in pids) and store.rows_written == 0
    assert "starter" in first_text(service, "how often do I feed my sourdough")


def test_without_room_for_a_second_server_the_reopen_happens_in_place(lite_service, monkeypatch):
    service, store, gate = lite_service, lite_service.store, Gate()
    pids = server_pids(service)
    monkeypatch.setattr(twins, "_available_bytes", lambda: 1024)
    with pytest.raises(StoreError, match="too little free memory"):
        twins.start(Path(store._db.uris[0]))
    assert server_pids(service) == pids  # nothing started, nothing stopped
    assert store.reopen(gate.exclusive) > 0
    assert set(server_pids(service)).isdisjoint(pids) and all(gone(pid) for pid in pids)
    assert "starter" in first_text(service, "how often do I feed my sourdough")


def test_a_twin_whose_spawn_raises_leaves_the_running_servers_their_lock(lite_service, monkeypatch):
    service, store, gate = lite_service, lite_service.store, Gate()
    pids = server_pids(service)

    def no_memory(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    with monkeypatch.context() as patched:
        patched.setattr(subprocess, "Popen", no_memory)
        with pytest.raises(StoreError, match="did not start"):
            store._db.reopen_beside(store._loading.load_twin, gate.exclusive)
    gc.collect()  # milvus-lite's Server.__del__ stops a dropped server: it must not free the lock
    time.sleep(1.5)  # a Lite server whose lock is freed exits within a second
    assert server_pids(service) == pids and not any(gone(pid) for pid in pids)
    assert held_elsewhere(store.uri)
    assert "starter" in first_text(service, "how often do I feed my sourdough")


def test_an_index_closed_while_a_twin_loads_is_not_opened_again(lite_service, monkeypatch):
    service, store, gate = lite_service, lite_service.store, Gate()
    uri, pids = store.uri, server_pids(service)
    loading, release = threading.Event(), threading.Event()
    load_twin, started = store._loading.load_twin, []
    start = twins.start

    def recorded_start(db):
        twin = start(db)
        started.append(twin._p.pid)
        return twin

    def slow_load(shard, client):
        loading.set()
        assert release.wait(30)
        load_twin(shard, client)

    monkeypatch.setattr(twins, "start", recorded_start)
    store._loading.load_twin = slow_load
    failures: list[BaseException] = []

    def reopen() -> None:
        try:
            store.reopen(gate.exclusive)
        except BaseException as exc:  # noqa: BLE001 - what the reopen raised is what this test checks
            failures.append(exc)

    thread = threading.Thread(target=reopen)
    thread.start()
    assert loading.wait(30)
    with gate.exclusive():  # as the daemon stops: its requests done, then the service closed
        service.close()
    release.set()
    thread.join(60)
    assert len(failures) == 1 and isinstance(failures[0], StoreError), failures
    assert store.closed and all(gone(pid) for pid in pids + started)
    assert not held_elsewhere(uri)

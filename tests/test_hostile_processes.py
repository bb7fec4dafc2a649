"""Neighbour processes against a live daemon: second writers, a killed Lite server, idle sockets, rebuilds."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mdrag.client.connection import DaemonClient
from tests.conftest import write
from tests.daemon_process import DaemonProcess, mdrag_cli, started_over, stored_vector_ids, wait_until

pytestmark = pytest.mark.slow

NOTES = {
    "lighthouse.md": "# Lighthouse\n\nThe keeper trims the wick of the lamp every evening.\n",
    "bread.md": "# Sourdough\n\nFeed the starter with flour and water the night before baking.\n",
    "tides.md": "# Tides\n\nSpring tides come with the full and the new moon.\n",
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = started_over(tmp_path_factory.mktemp("hostile"), NOTES)
    yield process
    process.close()


def lock_is_held(path: Path) -> bool:
    with open(path, "a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def test_second_writers_are_refused_every_time_and_leave_the_index_as_a_rebuild_would(tmp_path):
    for name, text in NOTES.items():
        write(tmp_path / "notes" / name, text)
    # The fresh rebuild to compare with, in an index and on a socket of its own, meanwhile.
    fresh_db = tmp_path / "fresh" / "milvus.db"
    fresh_env = {
        **DaemonProcess(tmp_path / "notes", tmp_path / "fresh").env,
        "MDRAG_SERVER_SOCKET_PATH": str(tmp_path / "fresh.sock"),
    }
    fresh = subprocess.Popen(
        [sys.executable, "-m", "mdrag.cli.main", "reindex", "--rebuild"],
        env=fresh_env,
        stderr=subprocess.PIPE,
        text=True,
    )
    daemon = None
    try:
        daemon = started_over(tmp_path, NOTES)
        state = tmp_path / "state"
        lite_locks = {path: path.stat().st_ino for path in state.glob(".*.lock")}
        assert len(lite_locks) == 2  # one per shard
        elsewhere = {**daemon.env, "MDRAG_SERVER_SOCKET_PATH": str(daemon.socket_dir / "other.sock")}
        # Ten at once, half of them daemons: each must be refused, none may unlock another's way in.
        attempts = [
            subprocess.Popen(
                [sys.executable, "-m", "mdrag.cli.main", "reindex" if i % 2 else "serve"],
                env=elsewhere,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(10)
        ]
        for attempt in attempts:
            _, err = attempt.communicate(timeout=60)
            assert attempt.returncode == 1, err
            assert f"process {daemon.process.pid}" in err
        # And milvus-lite's own failed open, straight from this process, leaves the lock alone.
        from milvus_lite.server import Server

        from mdrag.milvus import lite

        lite.guard_lock_files()
        refused = Server(str(state / "milvus.db"))
        assert not refused.start()
        refused.stop()
        assert {path: path.stat().st_ino for path in state.glob(".*.lock")} == lite_locks
        assert lock_is_held(state / "milvus.db.mdrag.lock")
        assert len(daemon.search("lamp wick keeper")) > 0  # the daemon serves on
        daemon.stop_cleanly()
        assert not lock_is_held(state / "milvus.db.mdrag.lock")  # released with the process
        _, err = fresh.communicate(timeout=60)
        assert fresh.returncode == 0, err
        assert stored_vector_ids(str(state / "milvus.db")) == stored_vector_ids(str(fresh_db))
    finally:  # a daemon that failed to start leaves the rebuild beside it to end here too
        if daemon is not None:
            daemon.close()
        if fresh.poll() is None:
            fresh.kill()
        fresh.communicate(timeout=30)  # reaps it and closes its pipe


def test_a_killed_lite_server_is_restarted_and_a_note_saved_meanwhile_is_found(daemon):
    servers = daemon.lite_servers()
    assert servers, "no Milvus Lite server process found under the daemon"
    os.kill(servers[0], signal.SIGKILL)
    note = write(daemon.notes / "quagga.md", "# Quagga\n\nThe quagga was a zebra hunted to extinction.\n")

    def found() -> bool:
        return any(hit["file_path"] == str(note) for hit in daemon.search("extinct zebra", threshold=0.3))

    assert wait_until(found, 30, interval=0.2) < 30
    assert servers[0] not in daemon.lite_servers() and len(daemon.lite_servers()) == len(servers)
    assert daemon.status()["daemon"]["store_available"] is True


def test_a_search_answers_quickly_while_300_idle_connections_are_held_open(daemon):
    idle = []
    try:
        for _ in range(300):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(daemon.socket_path)
            idle.append(sock)
        started = time.monotonic()
        result = mdrag_cli(daemon.env, "search", "tides and the moon", "--json", timeout=30)
        elapsed = time.monotonic() - started
        assert result.returncode == 0, result.stderr
        assert "tides.md" in result.stdout
        assert elapsed < 2.0, f"mdrag search took {elapsed:.2f}s"
    finally:
        for sock in idle:
            sock.close()


def test_searches_during_a_rebuild_through_the_daemon_never_fail_or_come_back_empty(daemon):
    client = DaemonClient(daemon.socket_path, timeout=60)
    answers: list[int] = []
    so_far: list[object] = []  # a search's `indexing`: the old index is whole, so never "so far"
    errors: list[str] = []
    done = threading.Event()

    def search_in_a_loop() -> None:
        while not done.is_set():
            try:
                response = client.call("search", query="sourdough starter", threshold=0.0, top_k=5)
                answers.append(len(response["results"]))
                so_far.append(response.get("indexing"))
            except Exception as exc:  # noqa: BLE001 - every failure is what this test counts
                errors.append(repr(exc))

    searcher = threading.Thread(target=search_in_a_loop)
    searcher.start()
    try:
        wait_until(lambda: len(answers) >= 3, 10)
        before = len(answers)
        result = mdrag_cli(daemon.env, "reindex", "--rebuild", "--json", timeout=60)
        during = len(answers) - before
    finally:
        done.set()
        searcher.join(30)
    assert result.returncode == 0, result.stderr
    assert errors == []
    assert during >= 5, f"only {during} searches ran during the rebuild"
    assert min(answers) > 0, "a search came back empty"
    assert not any(so_far), "a search answered from the whole old index said its results were partial"
    assert any(h["file_path"].endswith("bread.md") for h in daemon.search("sourdough starter"))
    # The rebuild's keyword index came in with its databases.
    found = client.call("search", query="sourdough starter", threshold=0.0, mode="keyword")["results"]
    assert any(h["file_path"].endswith("bread.md") for h in found)

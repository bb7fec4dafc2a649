"""The start race: a daemon starting while short-lived commands open the index must win, never exit."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write
from tests.daemon_process import DaemonProcess

pytestmark = pytest.mark.slow

# A command that holds the index until the file argv[1] appears, then argv[2] seconds more.
HOLDER = """
import os, sys, time
from mdrag.client.route import LocalRoute
from mdrag.config import load_config
route = LocalRoute(load_config())
print("held", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
time.sleep(float(sys.argv[2]))
route.close()
"""


@pytest.fixture()
def indexed(tmp_path: Path):
    """Two notes, already indexed (a command only opens an index that exists), and a daemon not yet started."""
    notes = tmp_path / "notes"
    write(notes / "a.md", "# Sourdough\n\nFeed the starter the night before baking.\n")
    write(notes / "b.md", "# Wi-Fi\n\nMove the router to channel 1 when the calls drop.\n")
    daemon = DaemonProcess(notes, tmp_path / "state")
    done = subprocess.run(
        [sys.executable, "-m", "mdrag.cli.main", "reindex", "--json"],
        env=daemon.env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    yield daemon
    if daemon.process is not None and daemon.process.poll() is None:
        daemon.process.terminate()
        daemon.process.wait(timeout=30)
    daemon.close()  # and its socket folder


def wait_ready(daemon: DaemonProcess, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not daemon.client.alive():
        assert daemon.process is not None and daemon.process.poll() is None, daemon.log()
        assert time.monotonic() < deadline, daemon.log()
        time.sleep(0.05)
    while daemon.client.call("status").get("starting"):  # at once while it starts; then the index's
        assert time.monotonic() < deadline, daemon.log()
        time.sleep(0.05)


@contextlib.contextmanager
def holding(daemon: DaemonProcess, until: str, then_s: float) -> Iterator[subprocess.Popen[str]]:
    """A command (HOLDER) that holds the index until `until` exists, then `then_s` more; yielded
    once it holds it, killed on the way out if still running."""
    with subprocess.Popen(  # closes its pipes and reaps it on the way out
        [sys.executable, "-c", HOLDER, until, str(then_s)],
        env=daemon.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            yield holder
        finally:
            if holder.poll() is None:
                holder.kill()


def test_a_starting_daemon_waits_for_a_command_that_holds_the_index(indexed):
    # a command that looked for the socket just before the daemon bound it, done 2 s after
    with holding(indexed, indexed.socket_path, 2) as holder:
        indexed.launch()
        wait_ready(indexed)
        _, err = holder.communicate(timeout=30)
        assert holder.returncode == 0, err
    assert indexed.process is not None and indexed.process.poll() is None
    log = indexed.log()
    assert "the index is held by another process" in log and "waiting up to" in log
    assert "the index was let go after" in log
    assert indexed.status()["documents"] == {"indexed": 2}


def test_status_answers_at_once_while_the_daemon_cannot_open_the_index_yet(indexed, tmp_path):
    """A start slowed by a command that holds the index: `status` says what the daemon waits for
    within a second, rather than blocking until the index is open (once 34.6 s at 282k sections)."""
    release = tmp_path / "release"
    with holding(indexed, str(release), 0) as holder:
        indexed.launch()
        deadline = time.monotonic() + 60
        while not indexed.client.alive():  # the socket is bound before the index opens
            assert time.monotonic() < deadline, indexed.log()
            time.sleep(0.05)
        time.sleep(0.5)  # into the wait for the holder
        asked = time.monotonic()
        report = indexed.client.call("status")
        took = time.monotonic() - asked
        print(f"\nstatus while the daemon waits for the index: {took * 1000:.0f} ms")
        assert took < 1.0
        assert report["starting"] is True and report["daemon"]["state"] == "loading", report
        assert "waiting for another process" in report["daemon"]["loading"]
        shown = subprocess.run(
            [sys.executable, "-m", "mdrag.cli.main", "status"],
            env=indexed.env,
            capture_output=True,
            text=True,
        )
        assert shown.returncode == 0, shown.stderr
        assert "daemon:    starting" in shown.stdout and "waiting for another process" in shown.stdout
        release.touch()
        wait_ready(indexed)
        _, err = holder.communicate(timeout=30)
        assert holder.returncode == 0, err
    assert indexed.status()["documents"] == {"indexed": 2}


def test_a_status_polled_every_50_ms_while_the_daemon_starts_never_stops_it(indexed):
    answers: list[tuple[int, dict | None, str]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            done = subprocess.run(
                [sys.executable, "-m", "mdrag.cli.main", "status", "--json"],
                env=indexed.env,
                capture_output=True,
                text=True,
            )
            report = json.loads(done.stdout) if done.returncode == 0 else None
            answers.append((done.returncode, report, done.stderr))
            stop.wait(0.05)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        while not answers:  # the race needs a command in flight when the daemon comes
            time.sleep(0.05)
        write(indexed.notes / "c.md", "# Garden\n\nWater the tomatoes at dawn.\n")  # work for its reconcile
        indexed.launch()
        wait_ready(indexed)
        seen = len(answers)
        while len(answers) < seen + 2:  # and a couple more through the daemon
            time.sleep(0.05)
    finally:
        stop.set()
        poller.join(timeout=60)
    assert indexed.process is not None and indexed.process.poll() is None, indexed.log()
    failures = [(code, err) for code, _, err in answers if code != 0]
    assert not failures, failures
    direct = [r for _, r, _ in answers if r and r["daemon"] is None]
    served = [r for _, r, _ in answers if r and r["daemon"] is not None and not r.get("starting")]
    assert direct and served, f"the poll did not span the start: {len(direct)} direct, {len(served)} served"
    # From its first answer the daemon says `reconciling` until every note (c.md too) is in.
    for report in served:
        assert report["daemon"]["state"] == "reconciling" or report["documents"] == {"indexed": 3}, report
    assert "held by another process" not in indexed.log() or "let go" in indexed.log()


DAEMON_HOLDER = (
    "import sys, time; from pathlib import Path; from mdrag.files import indexlock;"
    "indexlock.acquire(Path(sys.argv[1]), None, indexlock.DAEMON, sys.argv[2]);"
    "print('held', flush=True); time.sleep(60)"
)


def refusal(tmp_path: Path, holder_socket: str) -> tuple[str, float, int]:
    """(the error a command gets, the seconds it took, the holder's pid) while a process holds
    the index as a daemon that will serve `holder_socket` and never answers there."""
    from mdrag.client import route
    from mdrag.client.connection import DaemonClient
    from mdrag.config import Config
    from mdrag.errors import StoreLockedError
    from mdrag.files.indexfiles import IndexFiles

    config = Config().with_overrides(
        milvus_uri=str(tmp_path / "milvus.db"), server_socket_path=str(tmp_path / "mdrag.sock")
    )
    lock = IndexFiles.of(config).lock
    socket = holder_socket or config.server_socket_path
    with subprocess.Popen(
        [sys.executable, "-c", DAEMON_HOLDER, str(lock), socket], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            started = time.monotonic()
            with pytest.raises(StoreLockedError) as refused:
                route._local_unless_daemon(config, DaemonClient(config.server_socket_path))
            return str(refused.value), time.monotonic() - started, holder.pid
        finally:
            holder.kill()


def test_a_command_waits_for_a_starting_daemon_then_says_it_never_answered(tmp_path, monkeypatch):
    from mdrag.client import route

    monkeypatch.setattr(route, "DAEMON_START_WAIT_S", 2.0)
    error, seconds, pid = refusal(tmp_path, "")
    assert 2.0 <= seconds < 10
    assert f"in use by the mdrag daemon (process {pid})" in error
    assert f"has not answered on {tmp_path / 'mdrag.sock'} for 2 s" in error


def test_a_command_is_refused_at_once_by_a_daemon_that_serves_another_socket(tmp_path):
    error, seconds, pid = refusal(tmp_path, str(tmp_path / "other.sock"))
    assert seconds < 5  # no wait: that daemon never answers on this command's socket
    assert f"in use by the mdrag daemon (process {pid})" in error
    assert f"talk to it through its socket {tmp_path / 'other.sock'}" in error


def test_the_daemon_answers_status_before_its_heavy_imports():
    """`mdrag serve` binds its socket once the daemon module is imported; the engine client and
    the model (~0.6 s of imports on 2 cores) load after that, while `status` already answers."""
    heavy = ("pymilvus", "torch", "sentence_transformers", "onnxruntime", "watchdog")
    code = f"import sys, mdrag.serve.daemon; print([m for m in {heavy!r} if m in sys.modules])"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]", found.stdout + found.stderr

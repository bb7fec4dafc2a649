"""systemd integration: the notify protocol over a real datagram socket, and the unit file."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from mdrag.serve.notify import SystemdNotifier
from tests.conftest import write
from tests.daemon_process import DaemonProcess, wait_until

UNIT = Path(__file__).resolve().parent.parent / "config" / "mdrag.service"


class NotifyRecorder:
    """A datagram socket standing in for systemd's $NOTIFY_SOCKET, recording each message."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="mdn", dir="/tmp")
        self.path = os.path.join(self.directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, str]] = []
        self._running = True
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        while self._running:
            try:
                data = self.sock.recv(4096)
            except (TimeoutError, OSError):
                continue
            self.messages.append((time.monotonic(), data.decode()))

    def lines(self) -> list[str]:
        return [line for _, message in self.messages for line in message.splitlines()]

    def close(self) -> None:
        self._running = False
        self._thread.join(2)
        self.sock.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture()
def recorder():
    instance = NotifyRecorder()
    yield instance
    instance.close()


def test_notifier_sends_each_message_as_one_datagram(recorder):
    notifier = SystemdNotifier(recorder.path)
    notifier.ready("watching 1 root, 3 notes")
    notifier.heartbeat()
    notifier.close()
    wait_until(lambda: len(recorder.messages) == 2, 5)
    assert recorder.messages[0][1] == "READY=1\nSTATUS=watching 1 root, 3 notes"
    assert recorder.messages[1][1] == "WATCHDOG=1"


def test_notifier_is_silent_outside_systemd(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    notifier = SystemdNotifier()
    assert not notifier.enabled
    notifier.ready("nothing listens")  # and nothing breaks


def test_daemon_reports_ready_status_heartbeats_and_stopping(tmp_path, recorder):
    write(tmp_path / "notes" / "a.md", "# A\n\nalpha\n")
    process = DaemonProcess(
        tmp_path / "notes", tmp_path / "state", {"NOTIFY_SOCKET": recorder.path, "WATCHDOG_USEC": "1000000"}
    )
    try:
        process.start()
        wait_until(lambda: "READY=1" in recorder.lines(), 30)
        assert process.client.alive()  # READY=1 came once the socket served
        wait_until(lambda: recorder.lines().count("WATCHDOG=1") >= 3, 10)
        wait_until(lambda: "STATUS=watching 1 root, 1 note" in recorder.lines(), 10)
        assert process.stop(signal.SIGTERM) == 0
        assert "STOPPING=1" in recorder.lines()
    finally:
        process.close()


def systemd_analyze(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """systemd-analyze on the unit file, for a user whose home and runtime dir are temporary."""
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is not installed; install systemd to verify the unit")
    home, runtime = tmp_path / "home", tmp_path / "run"
    (home / ".local" / "bin").mkdir(parents=True)
    runtime.mkdir(mode=0o700)
    # ExecStart names ~/.local/bin/mdrag (where pipx puts it); verify checks it exists.
    (home / ".local" / "bin" / "mdrag").symlink_to(Path(sys.executable).parent / "mdrag")
    return subprocess.run(
        ["systemd-analyze", *args, str(UNIT)],
        env={**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("mode", [[], ["--user"]])
def test_systemd_analyze_verify_accepts_the_unit_without_warnings(tmp_path, mode):
    result = systemd_analyze(tmp_path, "verify", *mode)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "" and result.stderr.strip() == ""


@pytest.mark.parametrize("mode", [[], ["--user"]])
def test_the_unit_is_sandboxed_to_an_exposure_of_5_or_less(tmp_path, mode):
    # systemd-analyze's scale runs from 0 (locked down) to 10 (UNSAFE); the unit's own dirs
    # stay writable, the rest of the system read-only, and only unix and IP sockets allowed.
    result = systemd_analyze(tmp_path, "security", "--offline=true", *mode)
    assert result.returncode == 0, result.stderr
    exposure = float(result.stdout.rsplit("Overall exposure level for mdrag.service:", 1)[1].split()[0])
    assert exposure <= 5.0, result.stdout


def test_the_sandbox_leaves_writable_exactly_the_data_cache_and_runtime_dirs():
    unit = UNIT.read_text()
    settings = [line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#")]
    values: dict[str, list[str]] = {}
    for key, value in settings:
        values.setdefault(key, []).append(value)
    assert values["ProtectSystem"] == ["strict"] and values["ProtectHome"] == ["read-only"]
    assert values["ReadWritePaths"] == ["%h/.local/share/mdrag"]
    assert values["CacheDirectory"] == ["mdrag"] and values["RuntimeDirectory"] == ["mdrag"]
    # Milvus Lite's servers and the socket are unix sockets; a Milvus server is TCP.
    assert values["RestrictAddressFamilies"] == ["AF_UNIX AF_INET AF_INET6"]
    assert "After" not in values  # After=default.target would order it after its own target

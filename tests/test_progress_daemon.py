"""A first index seen from outside: searches, status, the log, systemd and reindex's bar say how far it is."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, mdrag_cli, wait_until

NOTES = 320
TEXTS_PER_S = 25  # the daemon's model is held to this pace (see PACE): 320 texts take >= 13 s
NOISE = re.compile(r"pkg_resources|GOAWAY|too_many_pings|chttp2|grpc", re.IGNORECASE)
# 320 new notes: read ahead for keyword search, so the line says how many are found by their words
PROGRESS = re.compile(
    r"indexing \d+/320 notes( \((all )?\d+ searchable by their words\))?, \d+ of about \d+ passages (embedded|ready \(\d+ kept, \d+ embedded\)), ~\d+ (s|min) left"
)

# The real model, held to a fixed pace in the daemon only: on a quiet machine it embeds 320
# short notes in about a second, too fast to look at an index under way; on a busy one it is
# slower than this pace already. The pace makes the test's timing the same on both.
PACE = f"""
import pathlib, time
import mdrag.embedding.runners as runners
_encode = runners.OnnxRunner.encode
def paced(self, texts, batch_size):
    started = time.monotonic()
    vectors = _encode(self, texts, batch_size)
    time.sleep(max(0.0, len(texts) / {TEXTS_PER_S} - (time.monotonic() - started)))
    return vectors
runners.OnnxRunner.encode = paced
pathlib.Path(__file__).with_name("paced").touch()
"""


def write_notes(folder: Path, count: int) -> None:
    words = "backup restore garden compost kernel module invoice budget sourdough oven deploy".split()
    folder.mkdir(parents=True)
    for i in range(count):
        body = " ".join(words[(i + j) % len(words)] for j in range(40))
        (folder / f"note-{i:04d}.md").write_text(f"# Note {i}\n\n{body}.\n")


class Notifications:
    """A NOTIFY_SOCKET as systemd offers it: every datagram the daemon sends, kept."""

    def __init__(self, directory: Path) -> None:
        self.path = str(directory / "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.5)
        self.messages: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except TimeoutError:
                continue
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def run_in_pty(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], list[bytes]]:
    """Start a command on a terminal 120 columns wide; what it writes there is collected."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    output: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the command ended and closed the terminal
                break
            if not chunk:
                break
            output.append(chunk)
        os.close(master)

    threading.Thread(target=read, daemon=True).start()
    return process, output


@pytest.mark.slow
def test_a_first_index_says_how_far_it_is_everywhere_and_records_no_gap(tmp_path, short_tmp):
    notes, state = tmp_path / "notes", tmp_path / "state"
    write_notes(notes, NOTES)
    pace = tmp_path / "pace"
    pace.mkdir()
    (pace / "sitecustomize.py").write_text(PACE)
    plain_path = os.environ.get("PYTHONPATH", "")
    notifications = Notifications(short_tmp)
    daemon = DaemonProcess(
        notes,
        state,
        extra_env={
            "PYTHONPATH": os.pathsep.join(filter(None, [str(pace), plain_path])),
            "NOTIFY_SOCKET": notifications.path,
            "MDRAG_LOG_PROGRESS_INTERVAL_S": "1",
        },
    )
    env = {**daemon.env, "PYTHONPATH": plain_path}  # the commands run unpaced
    reindex = None
    try:
        daemon.start()
        assert (pace / "paced").exists(), "the pace was not applied: " + daemon.log()
        # reindex through the daemon, on a terminal: it waits behind the first index and shows its bar
        reindex, terminal = run_in_pty([sys.executable, "-m", "mdrag.cli.main", "reindex"], env)

        def under_way() -> bool:
            indexing = daemon.status()["daemon"]["indexing"]
            return bool(
                indexing
                and indexing["eta_s"] is not None
                and indexing["notes_done"] > 0
                and indexing["keyword_notes"] == NOTES  # every note is found by its words already
            )

        wait_until(under_way, timeout=60, interval=0.2)

        # a search answers from what is indexed so far and says so
        found = mdrag_cli(env, "search", "zebra migration across the antarctic ice")
        # no confident answer yet: exit 1, and the person reads why on stderr (stdout stays empty)
        assert found.returncode == 1 and found.stdout == "", found.stderr
        # one line says why, with the progress (no banner repeating it, no "nothing in your notes")
        assert re.search(
            r"^no confident answer in the \d+ of 320 notes indexed so far( \(all 320 searchable by their words\))?; "
            r"the rest are still being indexed "
            r"\(about \d+ (s|min) left\)",
            found.stderr,
        ), found.stderr
        assert "results so far" not in found.stderr
        assert not NOISE.search(found.stderr), found.stderr
        answer = json.loads(mdrag_cli(env, "search", "--json", "compost kernel budget").stdout)
        indexing = answer["indexing"]
        assert 0 < indexing["notes_done"] < indexing["notes_total"] == NOTES
        assert indexing["unit"] == "texts" and indexing["done"] <= indexing["total"]
        assert all(hit["file_path"].startswith(str(notes)) for hit in answer["results"])

        status = mdrag_cli(env, "status")
        assert re.search(r"^progress: +" + PROGRESS.pattern, status.stdout, re.MULTILINE), status.stdout
        assert "(all 320 searchable by their words)" in status.stdout, status.stdout
        assert not NOISE.search(status.stderr), status.stderr

        assert reindex.wait(120) == 0, b"".join(terminal).decode(errors="replace")
        shown = b"".join(terminal).decode(errors="replace")
        assert re.search(r"indexing +\d+%\|.*\| \d+/\d+ passages \[.*\d+/320 notes", shown), shown
        assert re.search(r"indexing 100%\|.*\| (\d+)/\1 passages \[.*320/320 notes, .*done\]", shown), shown
        assert "added 0, updated 0, unchanged 320" in shown
        assert not NOISE.search(shown), shown

        daemon.wait_fresh()
        assert daemon.client.call("gaps")["gaps"] == []  # nothing recorded while notes were pending
        assert daemon.status()["daemon"]["indexing"] is None
        # once the index is complete, a search nothing answers is a gap again
        mdrag_cli(env, "search", "zebra migration across the antarctic ice")
        assert [g["query"] for g in daemon.client.call("gaps")["gaps"]] == [
            "zebra migration across the antarctic ice"
        ]
        # systemd hears the note count of this folder once the index is complete
        wait_until(lambda: "STATUS=watching 1 root, 320 notes" in notifications.messages[-1], timeout=10)
        daemon.stop_cleanly()
    finally:
        if reindex is not None and reindex.poll() is None:  # a failed check must not leave it running
            reindex.kill()
            reindex.wait()
        daemon.close()
        notifications.close()
    log = daemon.log()
    assert PROGRESS.search(log), log
    assert not NOISE.search(log), log
    statuses = [line for m in notifications.messages for line in m.splitlines() if line.startswith("STATUS=")]
    ready = next(m for m in notifications.messages if "READY=1" in m)
    assert "STATUS=reconciling" in ready or "STATUS=indexing" in ready, ready  # not "0 notes"
    assert any(PROGRESS.search(s) for s in statuses), statuses
    assert any("(all 320 searchable by their words)" in s for s in statuses), statuses


@pytest.mark.slow
def test_a_command_that_opens_the_index_itself_prints_no_third_party_noise(tmp_path):
    notes, state = tmp_path / "notes", tmp_path / "state"
    write_notes(notes, 3)
    env = DaemonProcess(notes, state).env  # its index and socket; no daemon runs
    done = mdrag_cli(env, "reindex", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 3  # stdout is the answer alone
    assert not NOISE.search(done.stderr), done.stderr
    status = mdrag_cli(env, "status", "--json")
    assert json.loads(status.stdout)["documents"] == {"indexed": 3}
    assert not NOISE.search(status.stderr), status.stderr

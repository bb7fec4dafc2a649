"""A Milvus Lite engine in trouble under a live daemon: stuck (SIGSTOP), and its disk full."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mdrag.client.connection import DaemonClient
from mdrag.errors import RemoteError
from tests.conftest import write
from tests.daemon_process import DaemonProcess, started_over, wait_until

pytestmark = pytest.mark.slow

NOTES = {
    "lighthouse.md": "# Lighthouse\n\nThe keeper trims the wick of the lamp every evening.\n",
    "bread.md": "# Sourdough\n\nFeed the starter with flour and water the night before baking.\n",
    "tides.md": "# Tides\n\nSpring tides come with the full and the new moon.\n",
}
STUCK_REPORTED_S = 30.0  # a stuck engine is in status within this; a search fails within it too


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = started_over(tmp_path_factory.mktemp("engine"), NOTES)
    yield process
    process.close()


def test_a_stuck_lite_server_fails_searches_with_a_clear_error_is_reported_and_restarted(daemon):
    [stuck, *_] = daemon.lite_servers()
    mark = len(daemon.log())
    os.kill(stuck, signal.SIGSTOP)
    stopped_at = time.monotonic()
    outcome: dict[str, Any] = {}

    def search() -> None:  # a search already asked when the engine stopped answering
        try:
            DaemonClient(daemon.socket_path, timeout=120).call("search", query="lamp wick", threshold=0.0)
            outcome["error"] = None
        except RemoteError as exc:
            outcome["error"] = str(exc)
        outcome["seconds"] = time.monotonic() - stopped_at

    asking = threading.Thread(target=search)
    asking.start()
    try:
        reported = wait_until(lambda: daemon.status()["daemon"]["store_available"] is False, STUCK_REPORTED_S)
        # Meanwhile a new search fails at once, saying why.
        started = time.monotonic()
        with pytest.raises(RemoteError, match="unavailable"):
            daemon.search("lamp wick")
        refused = time.monotonic() - started
        asking.join(STUCK_REPORTED_S + 10)
        assert not asking.is_alive(), "a search waited past its deadline"
        assert (
            outcome["error"] is None
            or "did not answer" in outcome["error"]
            or "unavailable" in outcome["error"]
        )
        assert "did not answer" in daemon.log()[mark:]
        # The stuck server is restarted like a dead one, and searches work again.
        back = wait_until(lambda: len(daemon.search("lamp wick")) > 0, 60, interval=0.2)
        assert stuck not in daemon.lite_servers()
        assert daemon.status()["daemon"]["store_available"] is True
    finally:
        try:
            os.kill(stuck, signal.SIGCONT)
        except ProcessLookupError:
            pass
        asking.join(60)
    print(
        f"stuck engine: in status after {reported:.1f} s, a search asked meanwhile failed in "
        f"{refused:.2f} s, the one in flight ended after {outcome['seconds']:.1f} s "
        f"({outcome['error']!r}), searches back {back:.1f} s later"
    )


def mounted(where: Path) -> bool:
    return subprocess.run(["mountpoint", "-q", str(where)]).returncode == 0


def test_a_full_index_disk_is_reported_and_its_notes_are_indexed_once_space_is_freed(tmp_path):
    disk = Path(f"/tmp/mdrag-full-{os.getpid()}")
    disk.mkdir(exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(disk)]).returncode != 0:
        disk.rmdir()
        pytest.skip("mounting a tmpfs needs root (or CAP_SYS_ADMIN)")
    for name, text in NOTES.items():
        write(tmp_path / "notes" / name, text)
    env = {"MDRAG_MILVUS_URI": str(disk / "milvus.db"), "MDRAG_WATCH_SWEEP_INTERVAL_S": "600"}
    daemon = DaemonProcess(tmp_path / "notes", tmp_path / "state", extra_env=env)
    try:
        daemon.start().wait_fresh()
        before = daemon.status()["documents"]["indexed"]
        filler = disk / "filler"
        # Fill the index's disk but for 4 MB.
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        with open(filler, "wb") as out:
            out.write(b"\0" * max(free - 4 * 2**20, 0))
        note = write(daemon.notes / "quagga.md", "# Quagga\n\nThe quagga was a zebra hunted to extinction.\n")
        saved_at = time.monotonic()
        reported = wait_until(lambda: daemon.status()["daemon"].get("index_full") is not None, 15)
        status = daemon.status()
        assert "is full" in status["daemon"]["index_full"]
        assert status["documents"]["indexed"] == before  # not reported indexed: it is not on disk
        assert not any(hit["file_path"] == str(note) for hit in daemon.search("extinct zebra"))
        assert len(daemon.search("lamp wick keeper")) > 0  # searches go on meanwhile
        filler.unlink()
        freed_at = time.monotonic()
        caught_up = wait_until(
            lambda: any(hit["file_path"] == str(note) for hit in daemon.search("extinct zebra")), 15
        )
        assert daemon.status()["daemon"]["index_full"] is None
        # And it reached the disk: a restarted daemon finds it indexed and embeds nothing.
        daemon.stop_cleanly()
        mark = len(daemon.log())
        daemon.start().wait_fresh()
        assert "added 0, updated 0" in daemon.log()[mark:] and "0 sections embedded" in daemon.log()[mark:]
        assert any(hit["file_path"] == str(note) for hit in daemon.search("extinct zebra"))
    finally:
        daemon.close()
        while mounted(disk):
            subprocess.run(["umount", "-l", str(disk)], check=False)
        disk.rmdir()
    print(
        f"full disk: in status {reported:.1f} s after the save (of {freed_at - saved_at:.1f} s full), "
        f"indexed {caught_up:.1f} s after space was freed, and kept across a restart"
    )

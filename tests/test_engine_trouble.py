"""A Milvus Lite engine in trouble under a live daemon: stuck (SIGSTOP), and its disk full."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import Any

import pytest

from mdrag.client import DaemonClient
from mdrag.errors import RemoteError
from tests.conftest import write
from tests.daemon_process import DaemonProcess, wait_until

pytestmark = pytest.mark.slow

NOTES = {
    "lighthouse.md": "# Lighthouse\n\nThe keeper trims the wick of the lamp every evening.\n",
    "bread.md": "# Sourdough\n\nFeed the starter with flour and water the night before baking.\n",
    "tides.md": "# Tides\n\nSpring tides come with the full and the new moon.\n",
}
STUCK_REPORTED_S = 30.0  # a stuck engine is in status within this; a search fails within it too


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("engine")
    for name, text in NOTES.items():
        write(base / "notes" / name, text)
    process = DaemonProcess(base / "notes", base / "state").start()
    process.wait_fresh()
    yield process
    process.close()


def lite_servers(daemon: DaemonProcess) -> list[int]:
    assert daemon.process is not None
    found = subprocess.run(
        ["pgrep", "-P", str(daemon.process.pid), "-x", "milvus"], capture_output=True, text=True
    )
    return [int(pid) for pid in found.stdout.split()]


def test_a_stuck_lite_server_fails_searches_with_a_clear_error_is_reported_and_restarted(daemon):
    [stuck, *_] = lite_servers(daemon)
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
        assert stuck not in lite_servers(daemon)
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

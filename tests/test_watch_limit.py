"""More folders than the inotify watch limit allows, under a live daemon: the limit is lowered in
a user namespace of the daemon's own (`unshare`), never the machine's global setting."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time

import pytest

from tests.conftest import write
from tests.daemon_process import DaemonProcess, wait_until

pytestmark = pytest.mark.slow

FOLDERS = 30
LIMIT = 12  # inotify watches the daemon may hold: fewer than its folders


class LimitedDaemon(DaemonProcess):
    """`mdrag serve` in a user namespace whose inotify watch limit is LIMIT."""

    def launch(self) -> None:
        serve = f"{shlex.quote(sys.executable)} -m mdrag.cli.main serve"
        script = f"echo {LIMIT} > /proc/sys/user/max_inotify_watches && exec {serve}"
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                ["unshare", "--user", "--map-root-user", "sh", "-c", script],
                env=self.env,
                stdout=log,
                stderr=log,
                text=True,
            )


def user_namespaces_work() -> bool:
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c", "echo 5 > /proc/sys/user/max_inotify_watches"],
        capture_output=True,
    )
    return probe.returncode == 0


def test_folders_past_the_watch_limit_are_reported_once_and_their_saves_are_found_by_polling(tmp_path):
    if not user_namespaces_work():
        pytest.skip("no user namespaces here (unshare --user)")
    for i in range(FOLDERS):
        write(
            tmp_path / "notes" / f"shelf{i:02d}" / "index.md", f"# Shelf {i}\n\nBooks on shelf number {i}.\n"
        )
    daemon = LimitedDaemon(
        tmp_path / "notes", tmp_path / "state", extra_env={"MDRAG_WATCH_SWEEP_INTERVAL_S": "600"}
    ).start()
    try:
        daemon.wait_fresh()
        # Refused watches are counted by the writer's once-a-second poll: wait for all of them.
        unwatched = wait_until(lambda: daemon.status()["daemon"]["unwatched_folders"] >= FOLDERS - LIMIT, 10)
        assert daemon.log().count("the inotify watch limit is reached") == 1
        assert "fs.inotify.max_user_watches" in daemon.log()
        # A save in every folder, watched or not, is indexed well before the next sweep.
        saved_at = time.monotonic()
        for i in range(FOLDERS):
            write(
                tmp_path / "notes" / f"shelf{i:02d}" / "new.md", f"# New {i}\n\nA new book for shelf {i}.\n"
            )
        found = wait_until(
            lambda: daemon.status()["documents"].get("indexed") == 2 * FOLDERS, 40, interval=0.5
        )
        assert daemon.log().count("the inotify watch limit is reached") == 1  # said once, not per folder
    finally:
        daemon.close()
    print(
        f"watch limit {LIMIT}, {FOLDERS + 1} folders: reported after {unwatched:.1f} s; "
        f"saves in all {FOLDERS} folders indexed within {found:.1f} s (of {time.monotonic() - saved_at:.1f})"
    )

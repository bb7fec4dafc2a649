"""Roots that go away and come back under a live daemon: an unplugged drive (a tmpfs this test
mounts and unmounts), a root deleted and re-created, a root swapped in by one rename."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import write
from tests.daemon_process import DaemonProcess, wait_until

pytestmark = pytest.mark.slow

ANIMALS = ["otter", "heron", "badger", "lynx", "marten", "stoat", "plover", "curlew", "vole", "hare"]
PLACES = ["estuary", "moor", "birch wood", "salt marsh", "scree", "fen"]
DRIVE_NOTES = {
    f"field/{i:02d}.md": f"# Sighting {i}\n\nA {ANIMALS[i % 10]} was seen at the {PLACES[i % 6]} at dawn, count {i}.\n"
    for i in range(24)
}
PLAIN_NOTES = {
    f"kitchen{i}.md": f"# Recipe {i}\n\nSimmer the {['lentils', 'barley', 'beans'][i % 3]} for {10 + i} minutes.\n"
    for i in range(6)
}
SAVE_WITHIN_S = 20.0  # generous on a loaded machine; the sweep (the only other way in) is 600 s away


def mount_tmpfs(where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], check=True)


def mounted(where: Path) -> bool:
    return subprocess.run(["mountpoint", "-q", str(where)]).returncode == 0


def unmount_all(*places: Path) -> None:
    for place in places:
        while mounted(place):
            subprocess.run(["umount", "-l", str(place)], check=False)


def can_mount() -> bool:
    probe = Path(f"/tmp/mdrag-mount-probe-{os.getpid()}")
    try:
        mount_tmpfs(probe)
    except (OSError, subprocess.CalledProcessError):
        return False
    unmount_all(probe)
    probe.rmdir()
    return True


def exchange(a: Path, b: Path) -> None:
    """Swap two folders in one rename (renameat2 RENAME_EXCHANGE), as `mv --exchange` does."""
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, bytes(a), at_fdcwd, bytes(b), rename_exchange) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def searchable(daemon: DaemonProcess, query: str, path: Path) -> bool:
    return any(hit["file_path"] == str(path) for hit in daemon.search(query, top_k=5))


def indexed(daemon: DaemonProcess) -> int:
    return daemon.status()["documents"].get("indexed", 0)


def embedded_since(daemon: DaemonProcess, mark: int) -> int:
    """Sections the daemon embedded, by its log, since `mark` characters of it."""
    return sum(int(n) for n in re.findall(r"(\d+) sections embedded", daemon.log()[mark:]))


def reconciled_after(daemon: DaemonProcess, mark: int) -> None:
    """Until the daemon has reconciled a root that came back (its log says so after `mark`)."""
    wait_until(lambda: "folder change:" in daemon.log()[mark:], 15, interval=0.1)
    daemon.wait_fresh()


def timed_save(daemon: DaemonProcess, path: Path, text: str, query: str) -> float:
    write(path, text)
    try:
        return wait_until(lambda: searchable(daemon, query, path), SAVE_WITHIN_S, interval=0.2)
    except AssertionError:
        raise AssertionError(
            f"{path} not searchable; the daemon's log ends:\n{daemon.log()[-3000:]}"
        ) from None


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not can_mount():
        pytest.skip("mounting a tmpfs needs root (or CAP_SYS_ADMIN)")
    base = tmp_path_factory.mktemp("roots")
    drive, plain, staging = base / "drive", base / "plain", base / "staging"
    mount_tmpfs(drive)
    for name, text in DRIVE_NOTES.items():
        write(drive / name, text)
    for name, text in PLAIN_NOTES.items():
        write(plain / name, text)
    env = {"MDRAG_ROOTS": f"{drive}{os.pathsep}{plain}", "MDRAG_WATCH_SWEEP_INTERVAL_S": "600"}
    held = {"daemon": DaemonProcess(drive, base / "state", extra_env=env).start()}
    held["daemon"].wait_fresh()
    yield {"base": base, "drive": drive, "plain": plain, "staging": staging, "held": held, "env": env}
    held["daemon"].close()
    unmount_all(drive, staging)


def test_an_unplugged_drive_keeps_its_notes_searchable_and_its_return_embeds_nothing_again(setup):
    daemon, drive, staging = setup["held"]["daemon"], setup["drive"], setup["staging"]
    assert indexed(daemon) == len(DRIVE_NOTES) + len(PLAIN_NOTES)
    mark = len(daemon.log())
    unmount_all(drive)  # the drive is pulled: its folder is the bare mount point, empty
    report = daemon.client.call("reindex")  # what the next sweep does
    assert report["deleted"] == 0
    assert indexed(daemon) == len(DRIVE_NOTES) + len(PLAIN_NOTES)
    [away] = daemon.status()["unavailable_roots"]
    assert away["root"] == str(drive) and away["notes_kept"] == len(DRIVE_NOTES)
    assert searchable(daemon, "a lynx at the scree at dawn", drive / "field/03.md")
    assert f"root {drive} is unavailable" in daemon.log()[mark:]
    # Plugged in again (a new tmpfs holding the same notes, moved into place at once, as a mount
    # appears): reconciled, and nothing is embedded again.
    mount_tmpfs(staging)
    for name, text in DRIVE_NOTES.items():
        write(staging / name, text)
    subprocess.run(["mount", "--move", str(staging), str(drive)], check=True)
    reconciled_after(daemon, mark)
    assert daemon.status()["unavailable_roots"] == []
    assert indexed(daemon) == len(DRIVE_NOTES) + len(PLAIN_NOTES)
    assert embedded_since(daemon, mark) == 0
    # And it is watched again: a save is searchable in seconds, not at the next sweep.
    seconds = timed_save(
        daemon,
        drive / "field/new.md",
        "# Albatross\n\nAn albatross glided past the lighthouse.\n",
        "albatross",
    )
    print(
        f"unplugged and back: 0 notes dropped, 0 sections re-embedded; a save after the remount in {seconds:.1f} s"
    )


def test_a_root_deleted_and_re_created_is_watched_again(setup):
    daemon, plain = setup["held"]["daemon"], setup["plain"]
    mark = len(daemon.log())
    shutil.rmtree(plain)
    plain.mkdir()
    write(plain / "soup.md", "# Soup\n\nA leek and potato soup for cold evenings.\n")
    reconciled_after(daemon, mark)
    # The old notes went with the folder (a person deleted them); the new folder's note is in.
    assert searchable(daemon, "leek potato soup", plain / "soup.md")
    assert not searchable(daemon, "simmer the lentils", plain / "kitchen0.md")
    # And the new folder is watched: a later save is in within seconds, not at the next sweep.
    recreated = timed_save(
        daemon, plain / "stew.md", "# Stew\n\nA mutton stew with pearl barley and thyme.\n", "mutton stew"
    )
    print(f"a save after a re-create searchable in {recreated:.1f} s")


def test_a_root_swapped_in_by_one_rename_is_watched_again(setup):
    daemon, plain, base = setup["held"]["daemon"], setup["plain"], setup["base"]
    # A whole new version of the folder swapped in by one rename, as sync and deploy tools do.
    fresh = base / "plain.new"
    write(fresh / "bread.md", "# Bread\n\nKnead the rye dough and let it rise overnight.\n")
    mark = len(daemon.log())
    exchange(fresh, plain)
    reconciled_after(daemon, mark)
    assert searchable(daemon, "rye dough rise overnight", plain / "bread.md")
    assert not searchable(daemon, "leek potato soup", plain / "soup.md")
    swapped = timed_save(
        daemon, plain / "jam.md", "# Jam\n\nBoil the damsons with sugar until the jam sets.\n", "damson jam"
    )
    assert daemon.status()["daemon"]["state"] == "watching"
    print(f"a save after a swap by rename searchable in {swapped:.1f} s")


def test_a_root_missing_at_start_keeps_its_notes_until_a_reindex_names_it(setup):
    held, drive = setup["held"], setup["drive"]
    held["daemon"].stop_cleanly()
    unmount_all(drive)
    daemon = held["daemon"] = DaemonProcess(drive, setup["base"] / "state", extra_env=setup["env"]).start()
    try:
        daemon.wait_fresh()
        kept = len(DRIVE_NOTES) + 1  # and the note saved after the remount
        assert searchable(daemon, "a lynx at the scree at dawn", drive / "field/03.md")
        [away] = daemon.status()["unavailable_roots"]
        assert away["notes_kept"] == kept
        # Forgotten only when a person names it.
        report = daemon.client.call("reindex", paths=[str(drive)])
        assert report["deleted"] == kept
        assert daemon.status()["unavailable_roots"] == []
    finally:
        daemon.close()  # started here, so ended here (the leak guard checks each test)

"""The files beside an index: private whatever the umask, and never written through a symbolic link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.conftest import write
from tests.daemon_process import DaemonProcess, mdrag_cli

pytestmark = pytest.mark.slow

VICTIM = "# Diary\n\nNothing here may ever be overwritten by mdrag.\n"


def cli_env(base: Path) -> dict[str, str]:
    write(base / "notes" / "lamp.md", "# Lamp\n\nThe keeper trims the wick of the lamp every evening.\n")
    return {
        **os.environ,
        "MDRAG_CONFIG": str(write(base / "config.yaml", "{}\n")),
        "MDRAG_ROOTS": str(base / "notes"),
        "MDRAG_MILVUS_URI": str(base / "index" / "milvus.db"),
        "MDRAG_SERVER_SOCKET_PATH": str(base / "run" / "mdrag.sock"),
        "HF_HUB_OFFLINE": "1",
    }


def open_to_others(folder: Path) -> list[str]:
    """Every file or folder at or under `folder` that its group or other users may access."""
    return [
        f"{path} {stat.S_IMODE(path.lstat().st_mode):04o}"
        for path in [folder, *folder.rglob("*")]
        if not path.is_symlink() and path.lstat().st_mode & 0o077
    ]


def with_umask(mask: int, action):
    previous = os.umask(mask)
    try:
        return action()
    finally:
        os.umask(previous)


def test_everything_beside_the_index_is_private_under_umask_022_and_older_open_files_are_closed(tmp_path):
    env = cli_env(tmp_path)
    index = tmp_path / "index"
    result = with_umask(0o022, lambda: mdrag_cli(env, "reindex"))
    assert result.returncode == 0, result.stderr
    assert mdrag_cli(env, "search", "unheard of zebra quilts").returncode == 1  # a gap recorded
    assert len(list(index.iterdir())) >= 6  # databases, logs, lock, gap log
    assert open_to_others(index) == []

    # As an older mdrag left them: readable by all. The daemon, started under umask 022, closes them.
    for path in [index, *index.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    daemon = DaemonProcess(
        tmp_path / "notes", tmp_path / "daemon", extra_env={"MDRAG_MILVUS_URI": str(index / "milvus.db")}
    )
    with_umask(0o022, daemon.start)
    try:
        daemon.search("unheard of zebra quilts", threshold=0.99)
        assert open_to_others(index) == []  # with the Lite servers' locks and the crash marker in it
        assert open_to_others(Path(daemon.socket_path).parent) == []
        assert "closed" in daemon.log() and "to other users" in daemon.log()
        daemon.stop_cleanly()
        assert open_to_others(index) == []
    finally:
        daemon.close()


@pytest.mark.parametrize(
    "name",
    [
        "milvus.db.mdrag.lock",
        "milvus.db.dirty",
        "milvus.gaps.sqlite",
        "milvus.db.log",
        ".milvus.db.home1",
        "milvus.pending.keywords",
    ],
)
def test_a_file_of_mdrags_that_is_a_link_to_a_note_is_refused_and_the_note_is_untouched(tmp_path, name):
    env = cli_env(tmp_path)
    victim = write(tmp_path / "notes" / "diary.md", VICTIM)
    before = victim.stat()
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / name).symlink_to(victim)

    result = mdrag_cli(env, "reindex", timeout=300)

    assert result.returncode == 1, result.stderr
    assert f"{tmp_path / 'index' / name} is a symbolic link (to {victim})" in result.stderr
    assert "remove the link" in result.stderr
    assert "Traceback" not in result.stderr
    assert "not closed cleanly" not in result.stderr  # refused before anything is opened or repaired
    assert victim.read_text() == VICTIM
    assert victim.stat().st_mtime_ns == before.st_mtime_ns

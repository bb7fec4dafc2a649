"""The machine around a live daemon: its socket removed, a hang-up, a note saved nonstop, a rebuild killed midway."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write
from tests.daemon_process import DaemonProcess, mdrag_cli

pytestmark = pytest.mark.slow

NOTES = {
    "lighthouse.md": "# Lighthouse\n\nThe keeper trims the wick of the lamp every evening.\n",
    "bread.md": "# Sourdough\n\nFeed the starter with flour and water the night before baking.\n",
}


def start_daemon(base: Path, **env: str) -> DaemonProcess:
    for name, text in NOTES.items():
        write(base / "notes" / name, text)
    process = DaemonProcess(base / "notes", base / "state", extra_env=env).start()
    process.wait_fresh()
    return process


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = start_daemon(tmp_path_factory.mktemp("lifecycle"), MDRAG_WATCH_MAX_WAIT_MS="3000")
    yield process
    process.close()


def found(daemon: DaemonProcess, name: str) -> bool:
    return any(hit["file_path"].endswith(name) for hit in daemon.search("lamp keeper wick"))


def test_a_rebuild_killed_midway_leaves_nothing_beside_the_index_after_the_next_start(tmp_path):
    daemon = DaemonProcess(tmp_path / "notes", tmp_path / "state")  # its environment, not started
    for name, text in NOTES.items():
        write(tmp_path / "notes" / name, text)
    assert mdrag_cli(daemon.env, "reindex").returncode == 0
    state = tmp_path / "state"
    live = sorted(p.name for p in state.iterdir())
    # What a killed rebuild leaves: a complete Lite index of its own beside the live one.
    side = {**daemon.env, "MDRAG_MILVUS_URI": str(state / "milvus.rebuild.db")}
    assert mdrag_cli(side, "reindex").returncode == 0
    for path in [*state.glob("milvus.rebuild.*sqlite"), state / "milvus.rebuild.db.mdrag.lock"]:
        path.unlink()  # a command's, not a rebuild's: it keeps no gap log and no lock of mdrag's
    leftovers = sorted(p.name for p in state.glob("milvus.rebuild.*"))
    assert "milvus.rebuild.db" in leftovers and "milvus.rebuild.shard1.db.log" in leftovers

    result = mdrag_cli(daemon.env, "reindex")  # any command that opens the index to write it

    assert result.returncode == 0, result.stderr
    assert "removed what a rebuild that did not finish left beside the index" in result.stderr
    assert "milvus.rebuild.shard1.db" in result.stderr
    assert sorted(p.name for p in state.iterdir()) == live
    assert "unchanged 2" in result.stdout  # the live index as it was

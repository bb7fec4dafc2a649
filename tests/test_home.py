"""The suite leaves the user's home alone: it runs in a private home, and the real one stays as it was."""

from __future__ import annotations

import os
from pathlib import Path

from mdrag.config import default_config_path, default_data_dir, default_milvus_uri, default_socket_path
from mdrag.embedding.onnx_cache import onnx_cache_dir
from tests.conftest import TEST_HOME
from tests.home import REAL_HOME, REAL_HOME_SNAPSHOT, XDG_HOMES, HomeSnapshot


def test_the_suite_runs_with_home_and_every_xdg_dir_in_a_temporary_home(tmp_path):
    assert TEST_HOME != REAL_HOME
    assert Path.home() == TEST_HOME and Path(os.path.expanduser("~")) == TEST_HOME
    for variable in (*XDG_HOMES, "XDG_RUNTIME_DIR"):
        place = Path(os.environ[variable])
        # XDG_DATA_HOME is narrowed further to each test's own tmp_path by an autouse fixture.
        assert place.is_relative_to(TEST_HOME) or place.is_relative_to(tmp_path), variable
        assert not place.is_relative_to(REAL_HOME), variable


def test_mdrags_default_places_all_lie_in_the_temporary_home(monkeypatch, tmp_path):
    # The autouse fixture points XDG_DATA_HOME at the test's own tmp_path; the session's is the default.
    monkeypatch.setenv("XDG_DATA_HOME", str(TEST_HOME / ".local" / "share"))
    places = [default_data_dir(), Path(default_milvus_uri()), default_config_path(), onnx_cache_dir()]
    places.append(Path(default_socket_path()))
    for place in places:
        assert place.is_relative_to(TEST_HOME), place
        assert not place.is_relative_to(REAL_HOME), place


def test_nothing_of_mdrags_under_the_real_home_has_changed_since_the_session_began():
    # The session's end checks again (conftest's pytest_sessionfinish), after every test.
    assert REAL_HOME_SNAPSHOT.changes() == []


def test_the_home_watch_sees_a_file_added_changed_or_removed(tmp_path):
    data = tmp_path / ".local" / "share" / "mdrag"
    data.mkdir(parents=True)
    kept = data / "kept.db"
    kept.write_text("a")
    snapshot = HomeSnapshot(tmp_path)
    assert snapshot.changes() == []
    (data / "server-1.gaps.sqlite").write_text("")
    kept.write_text("longer")
    (tmp_path / ".cache" / "mdrag").mkdir(parents=True)
    changes = snapshot.changes()
    assert f"added {data / 'server-1.gaps.sqlite'}" in changes
    assert f"changed {kept}" in changes
    assert f"added {tmp_path / '.cache' / 'mdrag'}" in changes
    kept.unlink()
    assert f"removed {kept}" in snapshot.changes()

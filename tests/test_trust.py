"""The socket folder's check, fast: what the daemon makes, and what it and every client refuse."""

from __future__ import annotations

import os

import pytest

from mdrag.errors import UnsafePathError
from mdrag.files.trust import check_folder


def test_a_missing_folder_is_no_daemon_for_a_client_and_is_made_0700_by_the_daemon_whatever_the_umask(
    tmp_path,
):
    folder = tmp_path / "run" / "mdrag"
    assert check_folder(folder) is False
    previous = os.umask(0)
    try:
        assert check_folder(folder, create=True) is True
    finally:
        os.umask(previous)
    assert folder.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o755, 0o701])
def test_a_folder_with_any_access_for_group_or_others_is_refused_with_the_fix(tmp_path, mode):
    folder = tmp_path / "run"
    folder.mkdir()
    folder.chmod(mode)
    with pytest.raises(UnsafePathError, match=rf"open to other users \(mode {mode:04o}\).*chmod 700"):
        check_folder(folder, create=True)


def test_a_link_to_a_private_folder_is_refused_all_the_same(tmp_path):
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "run").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError, match="is a symbolic link"):
        check_folder(tmp_path / "run")


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder away")
def test_a_folder_owned_by_another_uid_is_refused_naming_the_uid_and_xdg_runtime_dir(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    with pytest.raises(UnsafePathError, match=r"owned by uid 65534.*XDG_RUNTIME_DIR"):
        check_folder(folder, create=True)


def test_only_mdrags_own_files_beside_an_index_are_tightened_never_a_note_named_like_it(tmp_path):
    from mdrag.files.indexfiles import IndexFiles

    for name in (
        "index.db", "index.db.log", ".index.db.lock", "index.shard1.db", "index.gaps.sqlite",
        "index.carried.sqlite", "index.rebuild.db", "index.md", "index-notes.md", "other.db",
    ):  # fmt: skip
        (tmp_path / name).write_text("x")
    found = sorted(p.name for p in IndexFiles.at(str(tmp_path / "index.db"), tmp_path).present())
    assert found == sorted(
        [".index.db.lock", "index.carried.sqlite", "index.db", "index.db.log", "index.gaps.sqlite",
         "index.rebuild.db", "index.shard1.db"]
    )  # fmt: skip
    assert (
        IndexFiles.at(str(tmp_path / ".db"), tmp_path).present() == []
    )  # a nameless index would match every dotfile

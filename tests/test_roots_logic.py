"""When a root counts as unavailable (roots.py), on plain folders: no daemon, no mounts."""

from __future__ import annotations

import shutil

import pytest

from mdrag.index.roots import EMPTY, Roots
from tests.conftest import write


def test_a_missing_root_with_notes_is_unavailable_and_its_return_is_a_change(tmp_path):
    root = tmp_path / "notes"
    write(root / "a.md", "# A\n")
    roots = Roots([root], lambda _: 3)
    assert roots.unavailable() == {}
    moved = tmp_path / "elsewhere"
    root.rename(moved)
    assert roots.unavailable() == {root: "missing"}
    assert roots.gone() == [root]
    assert [r["notes_kept"] for r in roots.report()] == [3]
    moved.rename(root)
    assert roots.unavailable() == {}
    assert roots.changes() == [(root, "back")]
    assert roots.changes() == []  # taken once


def test_a_root_emptied_in_place_is_available_and_one_re_created_empty_is_not(tmp_path):
    root = tmp_path / "notes"
    note = write(root / "a.md", "# A\n")
    roots = Roots([root], lambda _: 1)
    assert roots.unavailable() == {}
    note.unlink()  # a person deleted the last note: the same folder, empty
    assert roots.unavailable() == {}
    shutil.rmtree(root)
    write(tmp_path / "filler" / "x.md", "# X\n")  # so the new folder gets another inode number
    root.mkdir()
    if roots.check()[root].identity == roots.check()[root].seen:
        pytest.skip("this file system gave the new folder the old one's inode: nothing tells them apart")
    assert roots.unavailable() == {root: EMPTY}
    assert roots.gone() == []  # empty, not gone: a delete event there is still trusted


def test_an_empty_root_without_notes_is_simply_available(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    assert Roots([root], lambda _: 0).unavailable() == {}


def test_an_empty_root_at_start_where_the_index_holds_notes_is_unavailable(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()  # a drive's mount point before the drive is mounted, say
    assert Roots([root], lambda _: 5).unavailable() == {root: EMPTY}


def test_an_available_root_the_index_holds_no_note_of_is_named_and_an_unavailable_one_is_not(tmp_path):
    archives, notes, gone = tmp_path / "archives", tmp_path / "notes", tmp_path / "gone"
    write(archives / "vault.tar.gz", "not markdown")
    write(notes / "a.md", "# A\n")
    held = {notes: 1, gone: 3}
    roots = Roots([archives, notes, gone], lambda root: held.get(root, 0))
    assert roots.without_notes() == [archives]  # `gone` is missing: unavailable, its notes kept
    held[archives] = 1  # a note written there and indexed
    assert roots.without_notes() == []

"""Excludes the way users write them: .gitignore, .mdragignore and Obsidian's excluded files, with git's semantics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mdrag.notes.scanner import NoteFilter
from tests.conftest import write


def scanned(root: Path, exclude: tuple[str, ...] = ()) -> set[str]:
    return {p.relative_to(root.resolve()).as_posix() for p in NoteFilter([root], exclude).scan()}


def vault(root: Path, *names: str) -> None:
    for name in names:
        write(root / name, f"# {name}\n\ntext\n")


def test_gitignore_patterns_keep_notes_out_with_gits_semantics(tmp_path):
    vault(
        tmp_path,
        "a.md",
        "build/out.md",
        "docs/build/deep.md",
        "src/build.md",
        "drafts/x.md",
        "top.md",
        "sub/top.md",
    )
    write(tmp_path / ".gitignore", "# generated\nbuild/\n/top.md\ndrafts/**\n")
    # `build/` is a folder anywhere (not the file src/build.md); `/top.md` only at the root.
    assert scanned(tmp_path) == {"a.md", "src/build.md", "sub/top.md"}


def test_a_negated_pattern_brings_a_note_back_but_not_out_of_an_excluded_folder(tmp_path):
    vault(tmp_path, "keep.md", "drop.md", "old/keep.md", "old/drop.md")
    write(tmp_path / ".gitignore", "*.md\n!keep.md\nold/\n!old/keep.md\n")
    # As git: a file inside an excluded directory cannot be re-included.
    assert scanned(tmp_path) == {"keep.md"}


def test_mdragignore_is_read_after_gitignore_so_it_can_keep_a_git_ignored_note(tmp_path):
    vault(tmp_path, "journal/today.md", "journal/secret.md", "notes.md")
    write(tmp_path / ".gitignore", "journal/*.md\n")
    write(tmp_path / ".mdragignore", "!journal/today.md\nnotes.md\n")
    assert scanned(tmp_path) == {"journal/today.md"}


def test_the_config_exclude_uses_the_same_syntax(tmp_path):
    vault(tmp_path, "a.md", "archive/2019/x.md", "templates/t.md", "z.tmp.md", "deep/z.tmp.md")
    assert scanned(tmp_path, ("archive/", "/templates", "*.tmp.md")) == {"a.md"}
    # and a later ignore-file line can negate a config pattern
    write(tmp_path / ".mdragignore", "!z.tmp.md\n")
    assert scanned(tmp_path, ("*.tmp.md",)) == {
        "a.md",
        "archive/2019/x.md",
        "templates/t.md",
        "z.tmp.md",
        "deep/z.tmp.md",
    }


def test_obsidian_excluded_files_are_honoured_as_prefixes_and_regexes(tmp_path):
    vault(tmp_path, "Templates/daily.md", "Daily/2024-01-01.md", "Daily/index.md", "Ideas.md")
    write(
        tmp_path / ".obsidian" / "app.json",
        json.dumps({"userIgnoreFilters": ["Templates/", "/^Daily/\\d{4}-/", "/[/"]}),
    )
    assert scanned(tmp_path) == {"Daily/index.md", "Ideas.md"}


def test_a_folders_own_ignore_file_applies_under_it_and_overrides_the_roots(tmp_path):
    vault(
        tmp_path, "a.draft.md", "projects/b.draft.md", "projects/c.md", "projects/old/d.md", "other/old/e.md"
    )
    write(tmp_path / ".gitignore", "*.draft.md\n")
    # relative to its own folder: `/old/` is projects/old only; `!` beats the root's pattern
    write(tmp_path / "projects" / ".gitignore", "/old/\n!b.draft.md\n")
    assert scanned(tmp_path) == {"projects/b.draft.md", "projects/c.md", "other/old/e.md"}
    note_filter = NoteFilter([tmp_path])  # one file at a time (the watcher) agrees
    assert note_filter.accepts(tmp_path.resolve() / "projects" / "b.draft.md")
    assert not note_filter.accepts(tmp_path.resolve() / "projects" / "old" / "d.md")


def test_a_single_changed_file_is_judged_by_the_same_rules(tmp_path):
    """The watcher asks about one file at a time: the folder rule and negation hold there too."""
    vault(tmp_path, "old/keep.md", "new.md")
    write(tmp_path / ".gitignore", "old/\n!old/keep.md\n")
    note_filter = NoteFilter([tmp_path])
    assert not note_filter.accepts(tmp_path.resolve() / "old" / "keep.md")
    assert note_filter.accepts(tmp_path.resolve() / "new.md")


def test_an_edited_ignore_file_applies_to_the_next_scan(tmp_path, monkeypatch):
    import mdrag.notes.scanner

    monkeypatch.setattr(mdrag.notes.scanner, "RULES_CHECK_S", 0.0)
    vault(tmp_path, "a.md", "b.md")
    note_filter = NoteFilter([tmp_path])
    assert len(list(note_filter.scan())) == 2
    write(tmp_path / ".mdragignore", "b.md\n")
    assert [p.name for p in note_filter.scan()] == ["a.md"]


def test_unreadable_or_malformed_ignore_settings_exclude_nothing(tmp_path):
    vault(tmp_path, "a.md")
    write(tmp_path / ".obsidian" / "app.json", "{not json")
    (tmp_path / ".mdragignore").mkdir()  # a folder where a file was expected
    assert scanned(tmp_path) == {"a.md"}


def test_an_edited_ignore_file_makes_the_watcher_go_over_its_root_again(tmp_path):
    """So notes it now excludes leave the index, and notes it lets back in come."""
    from watchdog.events import FileCreatedEvent, FileModifiedEvent

    from mdrag.index.watcher import NoteEventHandler
    from mdrag.index.workqueue import WorkQueue

    root = tmp_path.resolve()
    queue = WorkQueue(debounce_s=0)
    handler = NoteEventHandler(NoteFilter([root]), queue)
    for event in (
        FileModifiedEvent(str(root / ".gitignore")),
        FileCreatedEvent(str(root / ".mdragignore")),
        FileModifiedEvent(str(root / ".obsidian" / "app.json")),
    ):
        handler.dispatch(event)
        work = queue.take(timeout=1)
        assert work is not None and work.directories == [str(root)], event
        queue.finish(True)
    handler.dispatch(FileModifiedEvent(str(root / "sub" / ".gitignore")))  # a folder's: that folder
    work = queue.take(timeout=1)
    assert work is not None and work.directories == [str(root / "sub")]
    queue.finish(True)
    handler.dispatch(FileCreatedEvent(str(root / "node_modules" / "pkg" / ".gitignore")))
    assert queue.take(timeout=0.2) is None


@pytest.mark.slow
def test_a_running_daemon_drops_a_note_once_an_ignore_file_excludes_it_and_takes_it_back(tmp_path):
    from tests.daemon_process import DaemonProcess, wait_until

    notes = tmp_path / "notes"
    write(notes / "keep.md", "# Lighthouse\n\nThe keeper climbs the lighthouse stairs at dusk.\n")
    write(notes / "drafts" / "otters.md", "# Otters\n\nSea otters hold hands while they sleep.\n")
    daemon = DaemonProcess(notes, tmp_path / "state").start()
    try:
        daemon.wait_fresh()
        otters = str((notes / "drafts" / "otters.md").resolve())

        def found() -> bool:
            return otters in {h["file_path"] for h in daemon.search("otters sleeping", threshold=0.3)}

        assert found()
        write(notes / ".mdragignore", "drafts/\n")
        wait_until(lambda: not found(), 15, interval=0.2)
        (notes / ".mdragignore").write_text("")
        wait_until(found, 15, interval=0.2)
    finally:
        daemon.close()

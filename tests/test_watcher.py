"""The watcher's event mapping and its overflow alarm, with real watchdog objects and no daemon."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
import warnings

from watchdog.events import DirCreatedEvent, DirMovedEvent, FileCreatedEvent, FileMovedEvent

from mdrag.index.watcher import RENEW_AFTER_S, Watcher
from mdrag.index.workqueue import FileChanges, WorkQueue
from mdrag.notes.scanner import NoteFilter
from tests.conftest import write


def queued_files(queue: WorkQueue) -> list[str]:
    work = queue.take(timeout=1)
    return sorted(work.files) if work else []


def test_an_inotify_overflow_asks_for_a_full_sweep(tmp_path):
    sweeps: list[float] = []
    watcher = Watcher(NoteFilter([tmp_path]), WorkQueue(), on_overflow=lambda: sweeps.append(time.time()))
    watcher.start()
    try:
        # What watchdog's inotify emitter logs when the kernel queue overflowed and events were lost.
        logging.getLogger("watchdog.observers.inotify_buffer").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        assert len(sweeps) == 1
    finally:
        watcher.stop()


def test_editor_temp_files_never_reach_the_queue_but_the_renamed_note_does(tmp_path):
    queue = WorkQueue(debounce_s=0)
    watcher = Watcher(NoteFilter([tmp_path]), queue, on_overflow=lambda: None)
    handler_events = [
        FileCreatedEvent(str(tmp_path / ".note.md.swp")),
        FileCreatedEvent(str(tmp_path / "note.md.tmp")),
        FileCreatedEvent(str(tmp_path / "4913")),
        FileMovedEvent(str(tmp_path / "note.md.tmp"), str(tmp_path / "note.md")),
    ]
    from mdrag.index.watcher import NoteEventHandler

    handler = NoteEventHandler(watcher.filter, queue)
    for event in handler_events:
        handler.dispatch(event)
    assert queued_files(queue) == [str(tmp_path / "note.md")]


def test_a_moved_folder_queues_both_its_old_and_new_place(tmp_path):
    from mdrag.index.watcher import NoteEventHandler

    queue = WorkQueue(debounce_s=0)
    NoteEventHandler(NoteFilter([tmp_path]), queue).dispatch(
        DirMovedEvent(str(tmp_path / "a"), str(tmp_path / "b"))
    )
    work = queue.take(timeout=1)
    assert sorted(work.directories) == [str(tmp_path / "a"), str(tmp_path / "b")]


def test_watchdogs_warning_about_a_folder_watched_twice_stays_out_of_the_log_and_others_do_not(tmp_path):
    watcher = Watcher(NoteFilter([tmp_path]), WorkQueue(), on_overflow=lambda: None)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # every warning shown, as in the daemon's log (not an error)
        watcher.start()
        try:
            # What watchdog's inotify emitter warns when cp -r or tar creates a subfolder it already watches.
            warnings.warn(
                "Callback with id '1' already exists for watch b'/n/a'. It will be Overwritten.",
                RuntimeWarning,
                stacklevel=1,
            )
            warnings.warn("something else went wrong", RuntimeWarning, stacklevel=1)
        finally:
            watcher.stop()
    assert [str(w.message) for w in shown] == ["something else went wrong"]


def _events_for(queue: WorkQueue, path: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        work = queue.take(timeout=0.2)
        if work is not None:
            queue.finish()
            if isinstance(work, FileChanges) and path in work.files:
                return True
    return False


def test_a_tree_renamed_as_it_arrives_keeps_every_subfolder_watched(tmp_path):
    # watchdog adds a new folder's subfolder watches by walking it; a tree renamed during that
    # walk lost them about half the time (its deep edits made no event). Renewing the watches
    # once folders stop arriving keeps every edit seen: six trees, each renamed at once.
    root, outside = tmp_path / "notes", tmp_path / "outside"
    root.mkdir()
    queue = WorkQueue(debounce_s=0)
    watcher = Watcher(NoteFilter([root]), queue, on_overflow=lambda: None)
    watcher.start()
    try:
        for i in range(6):
            tree = outside / f"t{i}"
            write(tree / "a" / "b" / "deep.md", "# Deep\n\nbefore\n")
            subprocess.run(["cp", "-r", str(tree), str(root / f"t{i}")], check=True)
            os.rename(root / f"t{i}", root / f"arrived{i}")
            deadline = time.monotonic() + 10
            while not watcher.renew_if_due():
                assert time.monotonic() < deadline, "the watches were never renewed"
                time.sleep(0.1)
            while queue.take(timeout=0.3) is not None:  # what the arrival itself queued
                queue.finish()
            deep = root / f"arrived{i}" / "a" / "b" / "deep.md"
            deep.write_text("# Deep\n\nafter\n")
            assert _events_for(queue, str(deep), 5), f"tree {i}: the edit of {deep} made no event"
    finally:
        watcher.stop()


def test_only_the_outermost_arrived_folders_are_queued_and_hidden_ones_never_count(tmp_path):
    queue = WorkQueue(debounce_s=0)
    watcher = Watcher(NoteFilter([tmp_path]), queue, on_overflow=lambda: None)
    handler = watcher._handler
    for folder in ("new", "new/a", "new/a/b", "newer", ".git/objects/ab"):
        handler.on_any_event(DirCreatedEvent(str(tmp_path / folder)))
    time.sleep(RENEW_AFTER_S + 0.1)
    watcher.start()
    try:
        assert watcher.renew_if_due()
        work = queue.take(timeout=1)
        assert isinstance(work, FileChanges)
        assert sorted(work.directories) == [str(tmp_path / "new"), str(tmp_path / "newer")]
        assert not watcher.renew_if_due()  # nothing arrived since
    finally:
        watcher.stop()


def _watch_group(watcher: Watcher):
    (emitter,) = watcher._observer.emitters
    return emitter._inotify  # watchdog's inotify watch group, which _watch_again adds watches to


def test_a_subfolder_whose_watch_was_lost_is_watched_again_once_folders_stop_arriving(tmp_path):
    # Deterministic form of the race above: the deep folder's watch is taken away as the race
    # would leave it, so its edit makes no event, until the renewal adds the watch again.
    deep = write(tmp_path / "arrived" / "a" / "b" / "deep.md", "# Deep\n\nbefore\n")
    queue = WorkQueue(debounce_s=0)
    watcher = Watcher(NoteFilter([tmp_path]), queue, on_overflow=lambda: None)
    watcher.start()
    try:
        group = _watch_group(watcher)
        with group._lock:
            lost = group._active_callbacks_by_path[os.fsencode(deep.parent)]
            group._remove_callbacks([lost])
        deep.write_text("# Deep\n\nunseen\n")
        assert not _events_for(queue, str(deep), 1), "the simulated loss left the folder watched"
        watcher._handler.on_any_event(DirCreatedEvent(str(tmp_path / "arrived")))
        time.sleep(RENEW_AFTER_S + 0.1)
        assert watcher.renew_if_due()
        deep.write_text("# Deep\n\nseen\n")
        assert _events_for(queue, str(deep), 5), "the renewal did not watch the folder again"
    finally:
        watcher.stop()


def test_no_change_goes_unseen_while_renewals_run(tmp_path):
    # The class of the bug a renewal must not bring: any change (a new note, an edit, a note
    # moved out of the roots) made while the watches are renewed, over and over, is seen.
    root, outside = tmp_path / "notes", tmp_path / "outside"
    write(root / "sub" / "keep.md", "# Keep\n")
    outside.mkdir()
    queue = WorkQueue(debounce_s=0)
    watcher = Watcher(NoteFilter([root]), queue, on_overflow=lambda: None)
    watcher.start()
    renewing = threading.Event()
    renewing.set()

    def renew_forever() -> None:
        while renewing.is_set():
            watcher._folder_arrived(str(root / "sub"))
            watcher._renew_at = time.monotonic()
            watcher.renew_if_due()
            time.sleep(0.002)

    renewer = threading.Thread(target=renew_forever)
    renewer.start()
    try:
        for i in range(12):
            note = write(root / ("sub" if i % 2 else "") / f"n{i}.md", f"# N{i}\n")
            assert _events_for(queue, str(note), 5), f"change {i}: the new {note.name} made no event"
            note.write_text(f"# N{i}\n\nedited\n")
            assert _events_for(queue, str(note), 5), f"change {i}: the edit of {note.name} made no event"
            os.rename(note, outside / note.name)
            assert _events_for(queue, str(note), 5), f"change {i}: moving {note.name} out made no event"
    finally:
        renewing.clear()
        renewer.join()
        watcher.stop()


def test_stopping_the_watches_after_a_folder_was_moved_away_and_another_came_and_went_ends_cleanly(tmp_path):
    # watchdog's inotify then loses track of the folder's watch and raised on stop: the daemon
    # skipped its writer's last batch and exited 1 with a traceback.
    root = tmp_path / "notes"
    write(root / "sub" / "s.md", "# x\n")
    watcher = Watcher(NoteFilter([root]), WorkQueue(), on_overflow=lambda: None)
    watcher.start()
    (root / "sub").rename(tmp_path / "out")
    time.sleep(0.5)
    (root / "sub").mkdir()
    time.sleep(0.5)
    (root / "sub").rmdir()
    time.sleep(0.5)
    started = time.monotonic()
    watcher.stop()
    assert time.monotonic() - started < 2  # every emitter and the dispatcher told to end
    assert not watcher._observer.is_alive()

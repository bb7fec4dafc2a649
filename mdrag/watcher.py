"""Watcher: watchdog observers on every root, turning file events into debounced index jobs."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path

from loguru import logger
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from mdrag.pathtext import to_text
from mdrag.scanner import NOTE_SUFFIXES, NoteFilter, ignore_settings_scope
from mdrag.workqueue import WorkQueue


class NoteEventHandler(FileSystemEventHandler):
    """Maps watchdog events to the paths whose index entries may have changed."""

    def __init__(self, note_filter: NoteFilter, queue: WorkQueue) -> None:
        self.filter = note_filter
        self.queue = queue

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # reads, not changes
        paths = [_text(event.src_path)]
        if event.event_type == "moved":
            paths.append(_text(event.dest_path))
        for path in paths:
            if event.is_directory:
                if event.event_type in ("moved", "deleted"):
                    # A renamed or removed folder: its old notes go, its new ones come.
                    self.queue.add_directory(path)
            elif self._ignore_scope(path) is not None:
                # A .gitignore, .mdragignore or Obsidian's excludes changed: go over its folder again.
                self.queue.add_directory(str(self._ignore_scope(path)))
            elif path.lower().endswith(NOTE_SUFFIXES):
                # Not only accepted paths: a note moved into a hidden or excluded folder must
                # leave the index, and the writer decides that when it takes the job.
                self.queue.add_file(path)

    def _ignore_scope(self, path: str) -> Path | None:
        root = self.filter.root_of(Path(path))
        return ignore_settings_scope(Path(path), root) if root is not None else None


def _text(path: str | bytes) -> str:
    return to_text(path)  # as the index stores it: valid UTF-8 for any name


DOUBLE_WATCH = r"Callback with id .* already exists for watch"


class _OverflowListener(logging.Handler):
    """watchdog rebuilds its watches after an inotify queue overflow but tells only its log;
    events were lost, so the overflow also asks for a full safety sweep."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(level=logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.on_overflow()


class Watcher:
    """Recursive observers on the roots; every relevant event becomes a queued path."""

    def __init__(self, note_filter: NoteFilter, queue: WorkQueue, on_overflow: Callable[[], None]) -> None:
        self.filter = note_filter
        self.queue = queue
        self._observer = Observer()
        self._overflow = _OverflowListener(on_overflow)

    def start(self) -> None:
        # A folder tree arriving at once (cp -r, tar, a move) has its subfolders watched twice:
        # by watchdog's walk of the new folder and by their own creation events. The second
        # watch replaces the first, so nothing is lost, yet watchdog warns about it each time.
        warnings.filterwarnings("ignore", message=DOUBLE_WATCH, category=RuntimeWarning)
        handler = NoteEventHandler(self.filter, self.queue)
        for root in self.filter.roots:
            self._observer.schedule(handler, str(root), recursive=True)
        logging.getLogger("watchdog").addHandler(self._overflow)
        self._observer.start()
        logger.info("watching {} root(s): {}", len(self.filter.roots), ", ".join(map(str, self.filter.roots)))

    @property
    def alive(self) -> bool:
        return self._observer.is_alive()

    def stop(self) -> None:
        logging.getLogger("watchdog").removeHandler(self._overflow)
        self._observer.stop()
        if self._observer.is_alive():
            self._observer.join(timeout=5)

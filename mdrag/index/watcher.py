"""Watcher: watchdog observers on every root, turning file events into debounced index jobs."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from queue import Full
from typing import Any

from loguru import logger
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import EventDispatcher

from mdrag.index.workqueue import WorkQueue
from mdrag.notes.pathtext import to_text
from mdrag.notes.scanner import NOTE_SUFFIXES, NoteFilter, hidden_text, ignore_settings_scope, walk

# Quiet time after the last folder arrived before the watches are renewed (see Watcher).
RENEW_AFTER_S = 1.0
# How often the folders inotify could not watch (its watch limit reached) are polled for changes.
POLL_UNWATCHED_S = 10.0


class NoteEventHandler(FileSystemEventHandler):
    """Maps watchdog events to the paths whose index entries may have changed."""

    def __init__(
        self, note_filter: NoteFilter, queue: WorkQueue, on_folder: Callable[[str], None] = lambda _: None
    ) -> None:
        self.filter = note_filter
        self.queue = queue
        self.on_folder = on_folder  # told of each folder created or moved in, where notes may be

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # reads, not changes
        paths = [_text(event.src_path)]
        if event.event_type == "moved":
            paths.append(_text(event.dest_path))
        if (
            event.is_directory
            and event.event_type in ("created", "moved")
            and self._may_hold_notes(paths[-1])
        ):
            self.on_folder(paths[-1])
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

    def _may_hold_notes(self, folder: str) -> bool:
        """A folder under a root and outside hidden and skipped ones (.git's churn is not ours);
        asked of every event, so of the path's text alone."""
        root = self.filter.root_of(folder)
        if root is None:
            return False
        return not hidden_text(folder[len(str(root)) :].lstrip("/"))


def _text(path: str | bytes) -> str:
    return to_text(path)  # as the index stores it: valid UTF-8 for any name


DOUBLE_WATCH = r"Callback with id .* already exists for watch"


class _Refusals:
    """Folders whose inotify watch the kernel refused for its watch limit (ENOSPC), as watched."""

    def __init__(self) -> None:
        self._folders: set[str] = set()
        self._lock = threading.Lock()

    def add(self, folder: str) -> None:
        with self._lock:
            self._folders.add(folder)

    def take(self) -> set[str]:
        with self._lock:
            folders, self._folders = self._folders, set()
        return folders


_REFUSED = _Refusals()


def _count_refusals() -> None:
    """Make watchdog's inotify tell us of each watch refused for the watch limit, and add a watch
    a folder already has without a word.

    watchdog adds a subfolder's watch and swallows its failure (only the root's reaches the
    caller): past fs.inotify.max_user_watches whole trees went unwatched without a word, their
    edits waiting for the next sweep. And a folder watched again (a tree arriving at once: see
    `Watcher.start`) built a warning holding the repr of the watch, whose callback's repr holds
    every watched path: in a tree 1,200 folders deep, watched folder by folder as it was made,
    the watcher's thread spent a minute building megabyte warnings that were then ignored, and
    saves elsewhere waited. The watch is added as watchdog adds it (the kernel returns the
    folder's own watch), its callback set, and no warning built. Patched once per process; no
    inotify (macOS): nothing to do.
    """
    try:
        from watchdog.observers.inotify_c import InotifyFD
    except ImportError:
        return
    if getattr(InotifyFD, "_mdrag_counted", False):
        return

    def add_callback(self: Any, path: bytes, mask: Any, callback: Any, id_: Any) -> Any:
        try:
            with self._lock:
                watch = self._get_or_create_watch(path, mask)
                watch.callbacks[id_] = callback
                return watch.wd
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                _REFUSED.add(os.fsdecode(path))
            raise

    setattr(InotifyFD, "add_callback", add_callback)  # noqa: B010 - a method replaced, as mypy allows
    setattr(InotifyFD, "_mdrag_counted", True)  # noqa: B010


def _walk_on_a_stack() -> None:
    """Give watchdog's inotify module an os whose walk keeps a stack of its own.

    watchdog walks each new folder with os.walk to watch its subfolders, and before Python 3.12
    os.walk recursed once a folder: a tree 1,200 folders deep overflowed it in watchdog's thread,
    which died, and no save anywhere under that root was seen again. Patched once per process.
    """
    try:
        from watchdog.observers import inotify
    except ImportError:
        return
    if not isinstance(getattr(inotify, "os"), types.SimpleNamespace):  # noqa: B009
        setattr(inotify, "os", types.SimpleNamespace(**{**vars(os), "walk": walk}))  # noqa: B010


def watch_limit() -> int | None:
    """This user's inotify watch limit (its user namespace's, where that is lower), if known."""
    limits = []
    for name in ("/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"):
        try:
            limits.append(int(Path(name).read_text()))
        except (OSError, ValueError):
            continue
    return min(limits, default=None)


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
    """Recursive observers on the roots; every relevant event becomes a queued path.

    watchdog adds the watches of a new folder's subfolders by walking it after the folder
    appears. A tree renamed while that walk runs (unpacked or copied, then renamed at once)
    loses them: its subfolders' later edits make no event at all (about half the time, measured).
    So once folders stop arriving for RENEW_AFTER_S, `renew_if_due` walks the folders that
    arrived again, adding the watches that are missing to the running observer, and queues
    those folders, so what changed in them meanwhile is indexed too. No watch is removed or
    replaced: replacing the observer left a moment in which a root's events were lost.
    """

    def __init__(self, note_filter: NoteFilter, queue: WorkQueue, on_overflow: Callable[[], None]) -> None:
        self.filter = note_filter
        self.queue = queue
        self._handler = NoteEventHandler(note_filter, queue, on_folder=self._folder_arrived)
        self._observer = Observer()
        self._overflow = _OverflowListener(on_overflow)
        self._lock = threading.Lock()
        self._arrived: set[str] = set()
        self._renew_at: float | None = None  # monotonic time the watches are due for renewal
        # Each root's watch and the folder it watches ((st_dev, st_ino)): a root re-created,
        # swapped in by a rename or remounted is another folder, and its old watch sees nothing.
        self._roots: dict[Path, tuple[Any, tuple[int, int] | None]] = {}
        self._unwatchable: dict[Path, str] = {}  # a root that cannot be watched, and why (said once)
        # Folders left unwatched by the inotify watch limit, polled instead (see poll_unwatched).
        self._unwatched: set[str] = set()
        self._polled: dict[str, tuple[int, int]] = {}  # their notes' (mtime_ns, size) at the last poll
        self._poll_at = 0.0
        self._limit_told = False

    def watch_root(self, root: Path) -> bool:
        """Watch the folder now at `root`'s path, in place of the one watched before (if any);
        False when there is none to watch (the root is missing: its return is watched then)."""
        with self._lock:
            old = self._roots.pop(root, None)
        if old is not None:
            try:
                self._observer.unschedule(old[0])
            except (KeyError, RuntimeError, OSError) as exc:  # its emitter may have stopped itself
                logger.debug("unwatching {}: {}", root, exc)
        try:
            identity = _identity(root)
            if identity is None:
                return False
            watch = self._observer.schedule(self._handler, str(root), recursive=True)
        except OSError as exc:
            # Asked again every second while the root stays unwatchable: said once per reason.
            if self._unwatchable.get(root) != str(exc):
                logger.warning("cannot watch root {}: {}; the sweeps cover it", root, exc)
                self._unwatchable[root] = str(exc)
            return False
        self._unwatchable.pop(root, None)
        with self._lock:
            self._roots[root] = (watch, identity)
        return True

    def lost(self, root: Path) -> bool:
        """True when the watch on `root` no longer sees the folder at its path: none was set,
        the folder was deleted (watchdog ends the watch) or unmounted (the kernel drops it), or
        another folder is there now (swapped in by a rename, or remounted). A folder re-created
        may reuse the old one's inode number, so the watch's own state is asked too."""
        with self._lock:
            entry = self._roots.get(root)
        if entry is None:
            return True
        watch, identity = entry
        if _identity(root) != identity:
            return True
        emitter = next((e for e in self._observer.emitters if e.watch == watch), None)
        if emitter is None or not emitter.is_alive():
            return True
        group = getattr(emitter, "_inotify", None)  # watchdog's inotify watch group (see _watch_again)
        if group is None:
            return not hasattr(emitter, "_inotify")  # another observer (macOS, Windows): alive is enough
        return os.fsencode(str(root)) not in group._active_callbacks_by_path

    def start(self) -> None:
        # A folder tree arriving at once (cp -r, tar, a move) has its subfolders watched twice:
        # by watchdog's walk of the new folder and by their own creation events. The second
        # watch replaces the first, so nothing is lost, yet watchdog warns about it each time.
        warnings.filterwarnings("ignore", message=DOUBLE_WATCH, category=RuntimeWarning)
        logging.getLogger("watchdog").addHandler(self._overflow)
        _count_refusals()
        _walk_on_a_stack()
        self._observer.start()
        for root in self.filter.roots:  # on the running observer: a root that fails is the only one lost
            self.watch_root(root)
        logger.info("watching {} root(s): {}", len(self.filter.roots), ", ".join(map(str, self.filter.roots)))

    def _folder_arrived(self, folder: str) -> None:
        with self._lock:
            self._arrived.add(folder)
            self._renew_at = time.monotonic() + RENEW_AFTER_S

    def renew_if_due(self) -> bool:
        """Watch the arrived folders afresh once folders have stopped arriving; True when it did."""
        with self._lock:
            if self._renew_at is None or time.monotonic() < self._renew_at:
                return False
            folders, self._arrived, self._renew_at = self._arrived, set(), None
        for folder in _outermost(folders):
            self._watch_again(folder)
            self.queue.add_directory(folder)  # after the watches: a change lands in one or the other
        logger.debug("watched {} arrived folder(s) afresh", len(folders))
        return True

    def _watch_again(self, folder: str) -> None:
        """Add the watches of `folder`'s subfolders that the running observer lacks.

        This reaches into watchdog's inotify watch group (not public API): it is the one way to
        add watches without removing any. Observers without one (macOS, Windows) watch trees in
        the kernel and miss nothing here; tests/test_watcher.py fails if a watchdog release
        moves the pieces.
        """
        for emitter in self._observer.emitters:
            group = getattr(emitter, "_inotify", None)
            if group is None or not Path(folder).is_relative_to(emitter.watch.path):
                continue
            with group._lock:
                if group.is_active:  # a watch already there is kept: inotify returns the same one
                    group._add_all_callbacks(os.fsencode(folder))

    @property
    def unwatched(self) -> int:
        """How many folders the inotify watch limit leaves unwatched (polled instead)."""
        return len(self._unwatched)

    def poll_unwatched(self) -> None:
        """Once a second: take the folders inotify refused to watch; every POLL_UNWATCHED_S try
        to watch them again (the limit may have been raised) and queue the notes changed in those
        still unwatched since the last poll (a stat of each, no read)."""
        refused = {f for f in _REFUSED.take() if self.filter.root_of(Path(f)) is not None}
        if refused and not self._limit_told:
            self._limit_told = True
            logger.error(
                "the inotify watch limit is reached (fs.inotify.max_user_watches = {}): {} folder(s) under "
                "the roots are not watched, and are polled every {:.0f} s instead. Raise the limit: "
                "`sudo sysctl fs.inotify.max_user_watches=524288`, and in /etc/sysctl.d/ to keep it",
                watch_limit(),
                len(refused),
                POLL_UNWATCHED_S,
            )
        self._unwatched |= refused
        if not self._unwatched or time.monotonic() < self._poll_at:
            return
        self._poll_at = time.monotonic() + POLL_UNWATCHED_S
        folders, self._unwatched = _outermost(self._unwatched), set()
        for folder in folders:
            self._watch_again(folder)  # a watch refused again is counted again
        self._unwatched = {f for f in _REFUSED.take() if self.filter.root_of(Path(f)) is not None}
        if not self._unwatched:
            logger.info("every folder under the roots is watched again")
        polled = _note_stats(folders)
        changed = {path for path in polled if self._polled.get(path) != polled[path]}
        for path in sorted(changed | (set(self._polled) - set(polled))):  # saved, added or deleted
            self.queue.add_file(_text(path))
        self._polled = polled if self._unwatched else {}

    @property
    def alive(self) -> bool:
        return self._observer.is_alive()

    def stop(self) -> None:
        logging.getLogger("watchdog").removeHandler(self._overflow)
        try:
            self._observer.stop()
        except (KeyError, RuntimeError, OSError) as exc:
            # watchdog's inotify loses track of a watch whose folder was moved away and another
            # made and removed in its place, and stopping it then raises (a KeyError): that skipped
            # the writer's last batch and ended the daemon with a traceback and exit status 1.
            # The other folders' emitters are stopped, and the dispatcher told to end, here.
            logger.debug("stopping the watches: {!r}", exc)
            for emitter in list(self._observer.emitters):
                with contextlib.suppress(KeyError, RuntimeError, OSError):
                    emitter.stop()
            with contextlib.suppress(Full):
                self._observer.event_queue.put_nowait(EventDispatcher.stop_event)
        if self._observer.is_alive():
            self._observer.join(timeout=5)


def _note_stats(folders: list[str]) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file named like a note under these folders."""
    found: dict[str, tuple[int, int]] = {}
    for folder in folders:
        for where, _, files in walk(folder):
            for name in files:
                if name.lower().endswith(NOTE_SUFFIXES):
                    path = os.path.join(where, name)
                    try:
                        info = os.stat(path)
                    except OSError:
                        continue
                    found[path] = (info.st_mtime_ns, info.st_size)
    return found


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(folder)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _outermost(folders: set[str]) -> list[str]:
    """The folders not inside another of them (a reconcile of a folder covers its subfolders)."""
    kept: list[Path] = []
    for folder in sorted(map(Path, folders), key=lambda p: p.parts):  # a folder, then those inside it
        if not kept or not folder.is_relative_to(kept[-1]):
            kept.append(folder)
    return [str(folder) for folder in kept]

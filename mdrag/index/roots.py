"""Roots: whether each root is there as it was; a root that went away is unavailable, never emptied."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from mdrag.answers.status import UnavailableRoot

Identity = tuple[int, int]  # (st_dev, st_ino) of the folder at a root's path
EMPTY = "empty where the index holds notes of it"


@dataclass
class RootState:
    """What the last look at one root found."""

    path: Path
    identity: Identity | None = None  # the folder at the path now; None while nothing is there
    reason: str | None = None  # why it is unavailable; None while it is available
    since: float | None = None  # wall time it became unavailable
    seen: Identity | None = None  # the folder last seen available at the path
    looked: bool = False  # False until the first look

    @property
    def available(self) -> bool:
        return self.reason is None


class Roots:
    """The roots' availability, looked at on demand (a stat or two per root).

    A root is *unavailable*, never emptied, when nothing is at its path (renamed away, deleted, a
    drive's folder unmounted), when it lies again on the file system its drive was mounted over
    (the bare mount point an unmount leaves), or when it is an empty folder where the index holds
    notes of it, other than the folder last seen there (a mount point; a folder re-created empty;
    any empty root at start, since nothing tells a drive not mounted yet from notes deleted). Its
    notes stay in the index and searchable; a root that returns is reconciled, so only what
    changed meanwhile is embedded.
    Nothing forgets an unavailable root's notes but a person: `mdrag reindex ROOT` naming it,
    `reindex --rebuild`, or taking it out of `roots` (a drive unplugged for a month is still a
    drive, and rebuilding its notes costs far more than keeping them).

    Every look records a root that came back; the daemon takes those (`changes`) and reconciles
    them, whoever looked first.
    """

    def __init__(self, roots: Iterable[Path], notes_under: Callable[[Path], int]) -> None:
        self._states = {Path(root): RootState(Path(root)) for root in roots}
        self._notes_under = notes_under  # how many indexed notes the catalog holds under a root
        self._below: dict[Path, int | None] = {}  # the device an unmount would leave the root on
        self._changes: list[tuple[Path, str]] = []
        self._lock = threading.Lock()

    def check(self) -> dict[Path, RootState]:
        """Look at every root now; log each change of availability once."""
        with self._lock:
            for root, state in self._states.items():
                identity, reason = self._look(root, state.seen)
                self._record(state, identity, reason)
            return dict(self._states)

    def unavailable(self, look: bool = True) -> dict[Path, str]:
        """The roots unavailable now, each with its reason (looked at afresh, unless `look` is
        False: then as the last look found them)."""
        if look:
            states = self.check()
        else:
            with self._lock:
                states = dict(self._states)
        return {root: state.reason for root, state in states.items() if state.reason is not None}

    def gone(self) -> list[Path]:
        """The roots unavailable now for a reason other than being empty: nothing at the path,
        or a bare mount point. A note's delete event there is its drive going, not the note; in
        an empty root it may be a person deleting its last note, and the event is trusted."""
        return [root for root, state in self.check().items() if state.reason not in (None, EMPTY)]

    def changes(self) -> list[tuple[Path, str]]:
        """What changed since the last call: (root, "back") for a root that became available."""
        with self._lock:
            changes, self._changes = self._changes, []
        return changes

    def without_notes(self, look: bool = True, scope: list[Path] | None = None) -> list[Path]:
        """The available roots (those inside `scope`, when named) from which the index holds no
        note: a folder with no markdown in it (a mistyped path, a folder of archives), or one not
        read yet (looked at afresh, unless `look` is False: then as the last look found them)."""
        away = self.unavailable(look)
        return [
            root
            for root in self._states
            if root not in away
            and (scope is None or any(root == target or root.is_relative_to(target) for target in scope))
            and self._notes_under(root) == 0  # last: it reads the catalog
        ]

    def identity(self, root: Path) -> Identity | None:
        with self._lock:
            return self._states[root].identity

    def report(self) -> list[UnavailableRoot]:
        """The unavailable roots for `status`: root, reason, since and the notes kept."""
        return [
            {
                "root": str(root),
                "reason": state.reason,
                "since": state.since,
                "notes_kept": self._notes_under(root),
            }
            for root, state in self.check().items()
            if state.reason is not None
        ]

    def _look(self, root: Path, seen: Identity | None) -> tuple[Identity | None, str | None]:
        try:
            found = os.stat(root)
        except (FileNotFoundError, NotADirectoryError):
            return None, "missing"
        except OSError as exc:  # a drive gone bad under its mount (EIO), a dead FUSE mount (ENOTCONN)
            return None, f"cannot be looked at: {exc.strerror or exc}"
        if not stat.S_ISDIR(found.st_mode):
            return None, "not a folder"
        identity = (found.st_dev, found.st_ino)
        below = self._below.get(root)
        if below is not None and found.st_dev == below:
            return identity, "unmounted (its folder is the bare mount point)"
        # Emptied in place (the folder last seen available): a person deleted every note.
        if identity != seen and _empty(root) and self._notes_under(root) > 0:
            return identity, EMPTY
        return identity, None

    def _record(self, state: RootState, identity: Identity | None, reason: str | None) -> None:
        root = state.path
        if reason is None and (not state.looked or identity != state.identity):
            self._below[root] = _device_below(root)
        if state.looked and state.reason is not None and reason is None:
            self._changes.append((root, "back"))
            logger.info("root {} is available again; reconciling it", root)
        if reason is not None and state.reason is None:
            notes = self._notes_under(root)
            logger.warning(
                "root {} is unavailable ({}): its {} indexed note{} stay searchable and are kept "
                "until it returns (`mdrag reindex {}` forgets them)",
                root,
                reason,
                notes,
                "" if notes == 1 else "s",
                root,
            )
            state.since = time.time()
        elif reason is None:
            state.since = None
        state.identity, state.reason, state.looked = identity, reason, True
        if reason is None:
            state.seen = identity


def _empty(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False  # unreadable: the scanner says why, and keeps its notes


def _device_below(root: Path) -> int | None:
    """The device of the folder the root's file system is mounted on, None for the root file
    system: the device the root's path falls back to once its drive is unmounted."""
    try:
        device = os.stat(root).st_dev
        mount = root
        while mount.parent != mount and os.stat(mount.parent).st_dev == device:
            mount = mount.parent
        return None if mount.parent == mount else os.stat(mount.parent).st_dev
    except OSError:
        return None


def under(path: str, roots: Iterable[Path]) -> bool:
    """True when a stored path lies in one of these roots."""
    return any(path == str(root) or path.startswith(str(root).rstrip("/") + "/") for root in roots)

"""Scanner: which files under the roots are notes (the include/exclude rules of reindex and watcher)."""

from __future__ import annotations

import errno
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import AnyStr

import pathspec

NOTE_SUFFIXES = (".md", ".markdown")
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__"})
# Read in every folder, as git reads .gitignore: patterns relative to that folder, a deeper
# folder's files over a shallower one's, and .mdragignore after .gitignore (so it can `!`-keep
# a git-ignored note).
IGNORE_FILES = (".gitignore", ".mdragignore")
OBSIDIAN_SETTINGS = (".obsidian", "app.json")  # its `userIgnoreFilters`: Settings > Files > Excluded
RULES_CHECK_S = 1.0  # how often a folder's ignore files are looked at again for changes
PATH_MAX = os.pathconf("/", "PC_PATH_MAX")  # the longest path the system opens, in bytes (4096)


class FolderRules:
    """One folder's excludes, with git's semantics (`dir/`, `/anchored`, `**`, `!negation`): its
    ignore files; at a root, the config's patterns first, and Obsidian's excluded paths
    (prefixes or /regex/)."""

    def __init__(self, folder: Path, exclude: tuple[str, ...] = (), is_root: bool = False) -> None:
        lines = list(exclude)
        for name in IGNORE_FILES:
            lines.extend(_read_lines(folder / name))
        self.spec = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        self.prefixes: list[str] = []
        self.regexes: list[re.Pattern[str]] = []
        self.active = self.spec is not None
        for entry in _obsidian_filters(folder.joinpath(*OBSIDIAN_SETTINGS)) if is_root else []:
            if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
                try:
                    self.regexes.append(re.compile(entry[1:-1]))
                except re.error:
                    continue  # Obsidian ignores a bad regex too
            else:
                self.prefixes.append(entry.lstrip("/"))
        self.active = bool(self.spec is not None or self.prefixes or self.regexes)

    def verdict(self, relative: str, is_dir: bool) -> bool | None:
        """True: excluded here; False: brought back by a `!pattern`; None: no rule here says.
        `relative` is a POSIX path under this folder."""
        shown = relative + "/" if is_dir else relative
        if any(shown.startswith(prefix) for prefix in self.prefixes):
            return True
        if any(regex.search(relative) for regex in self.regexes):
            return True
        return self.spec.check_file(shown).include if self.spec is not None else None


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _obsidian_filters(path: Path) -> list[str]:
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    filters = settings.get("userIgnoreFilters") if isinstance(settings, dict) else None
    return [f for f in filters if isinstance(f, str) and f.strip()] if isinstance(filters, list) else []


def hidden(parts: tuple[str, ...]) -> bool:
    """True when a relative path passes through a hidden or skipped name (.git, node_modules, ...)."""
    return any(part.startswith(".") or part in SKIPPED_DIRS for part in parts)


# `hidden` over a relative path's text, in one scan of it: the watcher asks it of every event.
_HIDDEN_TEXT = re.compile(
    r"(?:^|/)(?:\.|(?:" + "|".join(re.escape(d) for d in sorted(SKIPPED_DIRS)) + r")(?:/|$))"
)


def hidden_text(relative: str) -> bool:
    """`hidden` of a relative path given as text ("a/.git/b"): no Path is made of it."""
    return _HIDDEN_TEXT.search(relative) is not None


def ignore_settings_scope(path: Path, root: Path) -> Path | None:
    """The folder whose notes an edit of `path` may let in or keep out: an ignore file's own
    folder, the root for Obsidian's settings; None for any other file."""
    if path.name in IGNORE_FILES:
        # node_modules/**/.gitignore changes nothing
        return None if hidden(path.parent.relative_to(root).parts) else path.parent
    return root if path == root.joinpath(*OBSIDIAN_SETTINGS) else None


def _signature(folder: Path, is_root: bool) -> tuple[float, ...]:
    """When any of a folder's ignore files changes, its rules are read again."""
    stamps = []
    for parts in [(name,) for name in IGNORE_FILES] + ([OBSIDIAN_SETTINGS] if is_root else []):
        try:
            stamps.append(folder.joinpath(*parts).stat().st_mtime)
        except OSError:
            stamps.append(-1.0)
    return tuple(stamps)


class NoteFilter:
    """Decides whether a path is a note mdrag indexes, given the roots and exclude globs."""

    def __init__(self, roots: Iterable[str | Path], exclude: Iterable[str] = ()) -> None:
        self.roots = tuple(Path(r).expanduser().resolve() for r in roots)
        # Each root's text and the prefix of the paths under it: a path's root is found by
        # comparing text, not by making a Path of each of its parents (an event deep in a tree
        # 1,200 folders deep made 1,200, and a tree arriving at once sends events by the thousand).
        self._root_texts = tuple((root, str(root), str(root).rstrip("/") + "/") for root in self.roots)
        self.exclude = tuple(exclude)
        self._rules: dict[Path, tuple[float, tuple[float, ...], FolderRules]] = {}
        # Folders (or entries) the last scan could not read, with the reason: their notes are
        # neither listed nor gone, and the indexer keeps what it has of them.
        self.unreadable: dict[Path, str] = {}
        # The same, kept across scans until a scan of their place reads them (`status` lists them:
        # a folder past the system's path length holds notes nobody would otherwise hear of).
        self.unlisted: dict[Path, str] = {}
        # Notes the last scan found whose path is past the system's length, with the reason: no
        # call opens them, and no index row could name them (the indexer lists them as failed).
        self.unheld: dict[Path, str] = {}

    def rules(self, folder: Path, is_root: bool, fresh: bool = False) -> FolderRules:
        """A folder's rules, read again when one of its ignore files changed (checked once a
        second, and whenever a scan enters the folder)."""
        now = time.monotonic()
        cached = self._rules.get(folder)
        if cached is not None and not fresh and now - cached[0] < RULES_CHECK_S:
            return cached[2]
        signature = _signature(folder, is_root)
        if cached is None or cached[1] != signature:
            rules = FolderRules(folder, self.exclude if is_root else (), is_root)
            cached = (now, signature, rules)
        self._rules[folder] = (now, cached[1], cached[2])
        return cached[2]

    def _chain(self, root: Path, folders: tuple[str, ...]) -> tuple[tuple[int, FolderRules], ...]:
        """The rules with something to say at the root and in each of `folders` below it, in
        turn, each with its folder's depth (a folder's rules looked up once, not once an ancestor:
        a note 1,200 folders deep took a minute to be accepted)."""
        chain = []
        folder = root
        for depth in range(len(folders) + 1):
            rules = self.rules(folder, is_root=depth == 0)
            if rules.active:
                chain.append((depth, rules))
            if depth < len(folders):
                folder = folder / folders[depth]
        return tuple(chain)

    def _left_out(self, root: Path, parts: tuple[str, ...], is_dir: bool) -> bool:
        """As git: the path under `root` is excluded, or a folder above it is (whatever a later
        `!pattern` says of the path)."""
        chain = self._chain(root, parts[:-1])
        return any(_verdict(chain, parts[:end], True) for end in range(1, len(parts))) or _verdict(
            chain, parts, is_dir
        )

    def root_of(self, path: Path | str) -> Path | None:
        """The root `path` (absolute, normalised) is under, or is; None for none."""
        text = str(path)
        for root, exact, prefix in self._root_texts:
            if text == exact or text.startswith(prefix):
                return root
        return None

    def accepts(self, path: str | Path) -> bool:
        """True for a `.md`/`.markdown` file under a root, outside hidden and skipped dirs."""
        path = Path(path)
        if not path.name.lower().endswith(NOTE_SUFFIXES):
            return False
        root = self.root_of(path)
        if root is None:
            return False
        relative = path.relative_to(root)
        # Hidden names cover editor droppings too: .note.md.swp, .#note.md, .~lock files.
        return not hidden(relative.parts) and not self._left_out(root, relative.parts, is_dir=False)

    def accepts_dir(self, path: Path, root: Path) -> bool:
        if hidden((path.name,)):
            return False
        parts = path.relative_to(root).parts
        return not _verdict(self._chain(root, parts[:-1]), parts, is_dir=True)

    def scan(self, paths: Iterable[Path] | None = None) -> Iterator[Path]:
        """Every accepted note under `paths` (files or directories; default: the roots)."""
        self.unreadable, self.unheld = {}, {}
        for start in paths if paths is not None else self.roots:
            start = Path(start).expanduser().resolve()
            for place in [p for p in self.unlisted if p == start or start in p.parents]:
                del self.unlisted[place]  # this scan says again what it cannot read there
            if start.is_file():
                if self.accepts(start):
                    yield start
                continue
            root = self.root_of(start)
            if root is None or not start.is_dir():
                continue
            parts = start.relative_to(root).parts
            if parts and (hidden(parts) or self._left_out(root, parts, is_dir=True)):
                continue  # a folder left out (or inside one): none of its notes are
            # The rules of the folders above `start` (its own are read as the walk enters it).
            yield from self._walk(start, root, self._chain(root, parts[:-1]) if parts else ())

    def _walk(self, start: Path, root: Path, chain: tuple[tuple[int, FolderRules], ...]) -> Iterator[Path]:
        """Depth first in name order, on a stack of its own: a tree a thousand folders deep
        overflowed Python's recursion, and the scan with it. `chain`: the rules with something to
        say from the root down to `start`'s parent, each with its folder's depth; the walk carries
        them so a file costs no lookups."""
        stack = [self._enter(start, root, chain)]
        while stack:
            directory, chain, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            name, kind = entry
            path = directory / name
            if kind == "dir":
                if name not in SKIPPED_DIRS and not _said_out(chain, path, root, is_dir=True):
                    stack.append(self._enter(path, root, chain))
            elif not _said_out(chain, path, root, is_dir=False):
                size = len(bytes(path))
                if size < PATH_MAX:
                    yield path
                else:  # listed by its folder's descriptor, but no call can open it by its path
                    self.unheld[path] = too_long(size)

    def _enter(
        self, directory: Path, root: Path, chain: tuple[tuple[int, FolderRules], ...]
    ) -> tuple[Path, tuple[tuple[int, FolderRules], ...], Iterator[tuple[str, str]]]:
        rules = self.rules(directory, is_root=directory == root, fresh=True)  # edited since the last scan?
        if rules.active:
            chain = (*chain, (len(directory.relative_to(root).parts), rules))
        return directory, chain, iter(self._list(directory))

    def _list(self, directory: Path) -> list[tuple[str, str]]:
        """A folder's folders ("dir") and notes ("note"), in name order, hidden names left out. A
        folder whose path is past the system's length is listed through descriptors (its notes are
        found, to be named as failed: else nobody would hear of them)."""
        found: list[tuple[str, str]] = []
        try:
            fd = _open_folder(bytes(directory)) if len(bytes(directory)) >= PATH_MAX else None
        except FileNotFoundError:
            return found
        except OSError as exc:
            self._cannot_read(directory, exc)
            return found
        try:
            with os.scandir(directory if fd is None else fd) as listing:
                entries = sorted(listing, key=lambda e: e.name)
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue  # hidden names cover editor droppings too: .note.md.swp, .#note.md
                try:
                    if entry.is_dir(follow_symlinks=False):
                        found.append((name, "dir"))
                    elif name.lower().endswith(NOTE_SUFFIXES) and entry.is_file():
                        found.append((name, "note"))
                except FileNotFoundError:
                    continue
                except OSError as exc:  # a folder listed but not searchable (r-- permissions)
                    self._cannot_read(directory / name, exc)
        except FileNotFoundError:
            pass  # vanished meanwhile: its notes are gone
        except OSError as exc:
            self._cannot_read(directory, exc)
        finally:
            if fd is not None:
                os.close(fd)
        return found

    def _cannot_read(self, place: Path, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENAMETOOLONG:
            reason = (
                f"its path is longer than the system allows ({len(bytes(place))} bytes, at most {PATH_MAX})"
            )
        self.unreadable[place] = self.unlisted[place] = reason


def walk(top: AnyStr, followlinks: bool = False) -> Iterator[tuple[AnyStr, list[AnyStr], list[AnyStr]]]:
    """os.walk, top-down, on a stack: before Python 3.12 it recursed once a folder, and a tree a
    thousand folders deep overflowed it (a folder it cannot list is left out, as os.walk does)."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        folders: list[AnyStr] = []
        files: list[AnyStr] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (folders if is_dir else files).append(entry.name)
        yield folder, folders, files
        for name in reversed(folders):
            path = os.path.join(folder, name)
            if followlinks or not os.path.islink(path):
                stack.append(path)


def too_long(size: int) -> str:
    """Why a note whose path is `size` bytes is not indexed."""
    return (
        f"its path is longer than the system allows ({size:,} bytes, at most {PATH_MAX - 1:,}), so it is "
        "not indexed: move it to a shallower folder or shorten its folders' names"
    )


def _open_folder(path: bytes) -> int:
    """A descriptor of a folder whose path is too long to open at once: opened in hops, each a
    path under the system's length relative to the last."""
    fd: int | None = None
    try:
        while len(path) >= PATH_MAX:
            cut = path.rfind(b"/", 1, PATH_MAX - 1)
            if cut <= 0:
                raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
            hop = os.open(path[:cut], os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            if fd is not None:
                os.close(fd)
            fd, path = hop, path[cut + 1 :]
        last = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    finally:
        if fd is not None:
            os.close(fd)
    return last


def _verdict(chain: tuple[tuple[int, FolderRules], ...], parts: tuple[str, ...], is_dir: bool) -> bool:
    """Whether the last rule along the chain above the path `parts` (under the root) that speaks
    about it excludes it."""
    decision: bool | None = None
    for depth, rules in chain:
        if depth >= len(parts):
            break
        said = rules.verdict("/".join(parts[depth:]), is_dir)
        if said is not None:
            decision = said
    return bool(decision)


def _said_out(chain: tuple[tuple[int, FolderRules], ...], path: Path, root: Path, is_dir: bool) -> bool:
    """The last rule along the chain that speaks about `path` excludes it."""
    return bool(chain) and _verdict(chain, path.relative_to(root).parts, is_dir)

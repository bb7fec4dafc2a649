"""Scanner: which files under the roots are notes (the include/exclude rules of reindex and watcher)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pathspec

NOTE_SUFFIXES = (".md", ".markdown")
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__"})
# Read in each root, in this order (a later line wins, so .mdragignore can `!`-keep a git-ignored note).
IGNORE_FILES = (".gitignore", ".mdragignore")
OBSIDIAN_SETTINGS = (".obsidian", "app.json")  # its `userIgnoreFilters`: Settings > Files > Excluded
RULES_CHECK_S = 1.0  # how often a root's ignore files are looked at again for changes


class RootRules:
    """A root's excludes: the config's patterns, then its ignore files, with git's semantics
    (`dir/`, `/anchored`, `**`, `!negation`), plus Obsidian's excluded paths (prefixes or /regex/)."""

    def __init__(self, root: Path, exclude: tuple[str, ...]) -> None:
        lines = list(exclude)
        for name in IGNORE_FILES:
            lines.extend(_read_lines(root / name))
        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        self.prefixes: list[str] = []
        self.regexes: list[re.Pattern[str]] = []
        for entry in _obsidian_filters(root.joinpath(*OBSIDIAN_SETTINGS)):
            if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
                try:
                    self.regexes.append(re.compile(entry[1:-1]))
                except re.error:
                    continue  # Obsidian ignores a bad regex too
            else:
                self.prefixes.append(entry.lstrip("/"))

    def excludes(self, relative: str, is_dir: bool) -> bool:
        """`relative` is a POSIX path under the root."""
        shown = relative + "/" if is_dir else relative
        if any(shown.startswith(prefix) for prefix in self.prefixes):
            return True
        if any(regex.search(relative) for regex in self.regexes):
            return True
        return self.spec.match_file(shown)


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


def is_ignore_settings(path: Path, root: Path) -> bool:
    """A root's ignore file or Obsidian settings: a change to it changes which notes are in."""
    return path.parent == root and path.name in IGNORE_FILES or path == root.joinpath(*OBSIDIAN_SETTINGS)


def _signature(root: Path) -> tuple[float, ...]:
    """When any of a root's ignore files changes, its rules are read again."""
    stamps = []
    for parts in [(name,) for name in IGNORE_FILES] + [OBSIDIAN_SETTINGS]:
        try:
            stamps.append(root.joinpath(*parts).stat().st_mtime)
        except OSError:
            stamps.append(-1.0)
    return tuple(stamps)


class NoteFilter:
    """Decides whether a path is a note mdrag indexes, given the roots and exclude globs."""

    def __init__(self, roots: Iterable[str | Path], exclude: Iterable[str] = ()) -> None:
        self.roots = tuple(Path(r).expanduser().resolve() for r in roots)
        self.exclude = tuple(exclude)
        self._rules: dict[Path, tuple[float, tuple[float, ...], RootRules]] = {}

    def rules(self, root: Path, fresh: bool = False) -> RootRules:
        """The root's rules, read again when one of its ignore files changed (checked once a
        second, and at the start of every scan)."""
        now = time.monotonic()
        cached = self._rules.get(root)
        if cached is not None and not fresh and now - cached[0] < RULES_CHECK_S:
            return cached[2]
        signature = _signature(root)
        if cached is None or cached[1] != signature:
            cached = (now, signature, RootRules(root, self.exclude))
        self._rules[root] = (now, cached[1], cached[2])
        return cached[2]

    def root_of(self, path: Path) -> Path | None:
        for root in self.roots:
            if path == root or root in path.parents:
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
        if any(part.startswith(".") or part in SKIPPED_DIRS for part in relative.parts):
            return False
        rules = self.rules(root)
        # As git: a note in an excluded folder stays out, whatever a later `!pattern` says.
        for parent in reversed(relative.parents[:-1]):
            if rules.excludes(parent.as_posix(), is_dir=True):
                return False
        return not rules.excludes(relative.as_posix(), is_dir=False)

    def accepts_dir(self, path: Path, root: Path) -> bool:
        if path.name.startswith(".") or path.name in SKIPPED_DIRS:
            return False
        return not self.rules(root).excludes(path.relative_to(root).as_posix(), is_dir=True)

    def scan(self, paths: Iterable[Path] | None = None) -> Iterator[Path]:
        """Every accepted note under `paths` (files or directories; default: the roots)."""
        for start in paths if paths is not None else self.roots:
            start = Path(start).expanduser().resolve()
            if start.is_file():
                if self.accepts(start):
                    yield start
                continue
            root = self.root_of(start)
            if root is None or not start.is_dir():
                continue
            self.rules(root, fresh=True)
            yield from self._walk(start, root)

    def _walk(self, directory: Path, root: Path) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return  # unreadable or vanished directory: nothing to index there
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if self.accepts_dir(path, root):
                        yield from self._walk(path, root)
                elif entry.is_file() and self.accepts(path):
                    yield path
            except OSError:
                continue

"""Scanner: which files under the roots are notes (the include/exclude rules of reindex and watcher)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

NOTE_SUFFIXES = (".md", ".markdown")
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__"})


class NoteFilter:
    """Decides whether a path is a note mdrag indexes, given the roots and exclude globs."""

    def __init__(self, roots: Iterable[str | Path], exclude: Iterable[str] = ()) -> None:
        self.roots = tuple(Path(r).expanduser().resolve() for r in roots)
        self.exclude = tuple(exclude)
        # Folders (or entries) the last scan could not read, with the reason: their notes are
        # neither listed nor gone, and the indexer keeps what it has of them.
        self.unreadable: dict[Path, str] = {}

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
        return not self._excluded(relative)

    def accepts_dir(self, path: Path, root: Path) -> bool:
        if path.name.startswith(".") or path.name in SKIPPED_DIRS:
            return False
        return not self._excluded(path.relative_to(root), is_dir=True)

    def _excluded(self, relative: Path, is_dir: bool = False) -> bool:
        text = relative.as_posix()
        for pattern in self.exclude:
            pattern = pattern.rstrip("/")
            if fnmatch.fnmatchcase(text, pattern) or fnmatch.fnmatchcase(relative.name, pattern):
                return True
            if not is_dir and any(
                fnmatch.fnmatchcase(parent.as_posix(), pattern) for parent in relative.parents
            ):
                return True
        return False

    def scan(self, paths: Iterable[Path] | None = None) -> Iterator[Path]:
        """Every accepted note under `paths` (files or directories; default: the roots)."""
        self.unreadable = {}
        for start in paths if paths is not None else self.roots:
            start = Path(start).expanduser().resolve()
            if start.is_file():
                if self.accepts(start):
                    yield start
                continue
            root = self.root_of(start)
            if root is None or not start.is_dir():
                continue
            yield from self._walk(start, root)

    def _walk(self, directory: Path, root: Path) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except FileNotFoundError:
            return  # vanished meanwhile: its notes are gone
        except OSError as exc:
            self.unreadable[directory] = exc.strerror or str(exc)
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if self.accepts_dir(path, root):
                        yield from self._walk(path, root)
                elif entry.is_file() and self.accepts(path):
                    yield path
            except FileNotFoundError:
                continue
            except OSError as exc:  # a folder listed but not searchable (r-- permissions)
                self.unreadable[path] = exc.strerror or str(exc)

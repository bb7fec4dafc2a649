"""Targets: the folders and notes a `reindex` names, found on disk and checked to be under a root."""

from __future__ import annotations

import os
from pathlib import Path

from mdrag.errors import ConfigError
from mdrag.notes.pathtext import to_fs
from mdrag.notes.scanner import NoteFilter


def on_disk(path: str) -> str:
    """A path as given, or, when only its stored form names a file (a path copied from a hit,
    its undecodable bytes written as \\xHH), the file it stands for (see pathtext)."""
    if not os.path.lexists(path) and os.path.lexists(to_fs(path)):
        return to_fs(path)
    return path


def reindex_targets(paths: list[str] | None, note_filter: NoteFilter) -> list[Path] | None:
    """The resolved paths a reindex names, or None for every root; a ConfigError when there is no
    root to index or a path lies outside every root."""
    targets = [Path(on_disk(os.path.expanduser(p))).resolve() for p in paths] if paths else None
    if targets is None and not note_filter.roots:
        raise ConfigError("no roots configured: set `roots` in the config file, or pass the folders to index")
    if targets:
        outside = [str(t) for t in targets if note_filter.root_of(t) is None]
        if outside:
            raise ConfigError(
                f"{', '.join(outside)} is not under a configured root "
                f"({', '.join(map(str, note_filter.roots)) or 'none configured'}); add it to `roots`"
            )
    return targets

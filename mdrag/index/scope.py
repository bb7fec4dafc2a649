"""Scope: the notes a run reads, newest first, and those gone (an away root's or unreadable folder's stay)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from loguru import logger

from mdrag.catalog import Catalog
from mdrag.index.roots import Roots, under
from mdrag.notes.pathtext import to_fs, to_text


def away_roots(
    roots: Roots, catalog: Catalog, scope: list[Path] | None, forget: bool, failed: list[dict[str, str]]
) -> list[Path]:
    """The unavailable roots a run over `scope` (None: all roots) must leave alone, each reported
    in `failed`; `forget`: one a person named goes (`mdrag reindex ROOT`)."""
    away = []
    for root, reason in roots.unavailable().items():
        if scope is not None and forget and any(within(target, [root]) for target in scope):
            continue  # named by a person: what is not there goes
        if scope is not None and not any(
            within(target, [root]) or within(root, [target]) for target in scope
        ):
            continue
        away.append(root)
        kept = len(catalog.paths_under(to_text(root)))
        error = f"root unavailable ({reason}); its {kept} indexed note(s) are kept until it returns"
        failed.append({"file_path": to_text(root), "error": error})
    return away


def kept_while_away(roots: Roots, paths: list[str]) -> list[str]:
    """These paths, less those in an unavailable root: their files are not gone, their drive is."""
    if not paths:
        return paths
    away = roots.gone()
    return [p for p in paths if not under(p, away)] if away else paths


def keep_unreadable(unreadable: dict[Path, str], gone: list[str], failed: list[dict[str, str]]) -> list[str]:
    """A folder that cannot be read is a failure, not a delete: its notes stay as indexed."""
    kept: set[str] = set()
    for folder, reason in unreadable.items():
        where = to_text(folder)
        notes = [p for p in gone if p == where or p.startswith(where + "/")]
        kept.update(notes)
        error = f"cannot read: {reason}; its {len(notes)} indexed note(s) stay until it is readable or gone"
        failed.append({"file_path": where, "error": error})
        logger.warning("failed {}: {}", where, error)
    return [p for p in gone if p not in kept]


def newest_first(paths: list[str]) -> list[str]:
    """Paths as stored, the most recently modified first (ties keep their order; a path that
    cannot be looked at goes last, where reading it will say why)."""

    def modified(path: str) -> float:
        try:
            return os.stat(to_fs(path)).st_mtime
        except OSError:
            return float("-inf")

    return sorted(paths, key=modified, reverse=True)


def within(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def may_be_note(path: str) -> bool:
    """False only when the file is surely not there (gone, or not a file); a file that cannot
    be looked at (a folder without search permission) is kept, and fails with the reason."""
    try:
        return stat.S_ISREG(os.stat(to_fs(path)).st_mode)
    except PermissionError:
        return True
    except OSError:
        return False

"""Rebuild: a daemon's `reindex --rebuild` of a Lite index, built beside the live one, then switched in.

Dropping the collections in place left every search during the rebuild failing ("collection not
found") or answering from a half-filled index. Here the new index is built in databases of its
own beside the old one (`NAME.rebuild.db`, ...) while searches go on answering from the old;
once it is complete, the old databases are replaced by the new ones in one short pause, under
the caller's exclusive gate (searches wait for it, they never fail). What a rebuild killed
midway leaves beside the index is removed by the next process that opens it to write.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mdrag.files.indexfiles import IndexFiles


def switch_in(files: IndexFiles) -> None:
    """Replace the live index's databases and keyword index by the rebuild's. Both stores must be
    closed (their Lite servers stopped), so each database is a plain file, moved in one rename.
    The keyword index (a folder) moves last; a switch stopped before it is finished by the next
    writer's remove_leftovers."""
    for new, old in zip(files.rebuild_databases, files.databases, strict=True):
        os.replace(new, old)
    _move_keywords_in(files)


def _move_keywords_in(files: IndexFiles) -> None:
    if files.keyword_index.is_symlink():
        raise OSError(
            f"the keyword index {files.keyword_index} is a link; mdrag keeps a folder of its own there"
        )
    shutil.rmtree(files.keyword_index, ignore_errors=True)
    os.replace(files.rebuild_keyword_index, files.keyword_index)


def remove_leftovers(files: IndexFiles) -> list[Path]:
    """Remove the side index of a rebuild that did not finish (its databases, keyword index, and
    the logs and lock files of their Lite servers); returns what was there. A switch that
    stopped after the databases moved in is finished instead: its keyword index moves in too.
    Only for a process that holds the index's lock, so that no rebuild can be under way."""
    rebuilt_keywords = files.rebuild_keyword_index
    if files.is_lite and rebuilt_keywords.is_dir() and not any(db.exists() for db in files.rebuild_databases):
        # A switch stopped after the databases moved in: their keyword index follows them.
        _move_keywords_in(files)
        return [rebuilt_keywords]
    removed = []
    for path in files.rebuild_files():
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed

"""Index files: every file kept beside an index (databases, locks, marker, logs, side index), named once.

A Milvus Lite index `NAME.db` keeps, in its folder:

    NAME.db, NAME.shard1.db, ...         the databases, one per shard (mdrag.milvus knows the layout)
    NAME.db.log, .NAME.db.lock, ...      each database's Lite server log, and Milvus Lite's own lock
    .NAME.db.home1/, .NAME.db.home2/     a Lite server's own home (its engine's scratch folder)
    NAME.db.mdrag.lock                   mdrag's index lock: one writer (indexlock.py)
    NAME.db.dirty                        the crash marker: there while a writer has the index open
    NAME.keywords/                       the keyword index of the vector rows (milvus/keywords.py)
    NAME.pending.keywords/               notes read ahead of the model, while any wait (milvus/pending.py)
    NAME.carried.sqlite                  an older layout's vectors, kept across its rebuild
    NAME.gaps.sqlite                     the gap log: unanswered searches, kept across a rebuild
    NAME.roots.json                      the roots the index was last opened with (paths shown from them)
    NAME.rebuild.db, ... (and theirs)    a daemon's rebuild, built beside the live index
    NAME.rebuild.keywords/               its keyword index

For a Milvus server URI the files of mdrag's own lie in the data dir instead, named
`server-DIGEST` after the URI. Every path is normalised once (`normalized`): `~` expanded and
made absolute, a link left as the user named it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mdrag.config import is_lite_uri
from mdrag.files import private

if TYPE_CHECKING:
    from mdrag.config import Config

# What follows NAME. in the names of the files an index keeps (`present` finds them by it).
_KINDS = ("db", "shard", "rebuild.", "gaps.", "carried.", "keywords", "pending.", "roots.")


def normalized(path: str | Path) -> Path:
    """A path as every file of an index is named from: `~` expanded, made absolute."""
    return Path(path).expanduser().absolute()


def lite_log(db: Path) -> Path:
    """Where a Lite server's own output goes: beside its database, never a command's stdout."""
    return db.parent / f"{db.name}.log"


def lite_homes(db: Path) -> tuple[Path, Path]:
    """The two homes a Lite server of `db` may run in: the Milvus engine keeps its scratch folder
    under $HOME/.cache/milvus, empties it when it starts and removes it when it exits, so two
    servers sharing a home break each other (lite.py). Two, because a reopen's second server
    (milvus/twins.py) runs beside the first."""
    return db.parent / f".{db.name}.home1", db.parent / f".{db.name}.home2"


def lite_lock(db: Path) -> Path:
    """Milvus Lite's own lock on a database (milvus-lite names it `.NAME.lock`, beside it),
    held while a process has the database open."""
    return db.parent / f".{db.name}.lock"


@dataclass(frozen=True)
class IndexFiles:
    """Every file kept beside one index, built from its Milvus URI and mdrag's data dir."""

    uri: str
    is_lite: bool
    database: Path | None  # NAME.db, the named database (shard 0); None for a Milvus server
    lock: Path  # mdrag's index lock (indexlock.py)
    dirty_marker: Path  # exists while a writer has the index open; found at start, it means a crash
    carried_vectors: Path  # an older layout's vectors, waiting for its rebuild (milvus/carried.py)
    gap_log: Path  # outside Milvus on purpose: unanswered searches survive `reindex --rebuild`
    rebuild_uri: str  # where a daemon's rebuild builds the new index; "" for a Milvus server
    keyword_index: Path  # the keyword index's folder (milvus/keywords.py)
    rebuild_keyword_index: Path  # a rebuild's keyword index, switched in with its databases
    pending_keywords: Path  # notes read but not embedded yet, by their words (keywords.PendingKeywords)
    roots_record: Path  # the roots it was last opened with, for a command whose config names none

    @classmethod
    def of(cls, config: Config) -> IndexFiles:
        return cls.at(config.milvus_uri, config.data_dir)

    @classmethod
    def at(cls, uri: str, data_dir: Path) -> IndexFiles:
        if is_lite_uri(uri):
            db = normalized(uri)
            return cls(
                uri=uri,
                is_lite=True,
                database=db,
                lock=db.with_name(f"{db.name}.mdrag.lock"),
                dirty_marker=db.with_suffix(".db.dirty"),
                carried_vectors=db.with_suffix(".carried.sqlite"),
                gap_log=db.with_suffix(".gaps.sqlite"),
                rebuild_uri=str(db.with_name(f"{db.stem}.rebuild{db.suffix}")),
                keyword_index=db.with_suffix(".keywords"),
                rebuild_keyword_index=db.with_suffix(".rebuild.keywords"),
                pending_keywords=db.with_suffix(".pending.keywords"),
                roots_record=db.with_suffix(".roots.json"),
            )
        import hashlib  # here: only a server's index needs a name derived from its URI

        folder, name = normalized(data_dir), f"server-{hashlib.sha256(uri.encode()).hexdigest()[:12]}"
        return cls(
            uri=uri,
            is_lite=False,
            database=None,
            lock=folder / f"{name}.mdrag.lock",
            dirty_marker=folder / f"{name}.db.dirty",
            carried_vectors=folder / f"{name}.carried.sqlite",
            gap_log=folder / f"{name}.gaps.sqlite",
            rebuild_uri="",
            keyword_index=folder / f"{name}.keywords",
            rebuild_keyword_index=folder / f"{name}.rebuild.keywords",
            pending_keywords=folder / f"{name}.pending.keywords",
            roots_record=folder / f"{name}.roots.json",
        )

    def record_roots(self, roots: Sequence[str]) -> None:
        """Keep the roots the index is opened with (none: the record stays): a command run later
        with no roots configured (the daemon had them on its command line, `make run NOTES=…`)
        shows and takes paths from them as the daemon did."""
        if not roots:
            return
        text = json.dumps(sorted({os.path.realpath(os.path.expanduser(root)) for root in roots}))
        try:
            if not self.roots_record.exists() or self.roots_record.read_text(encoding="utf-8") != text:
                private.write_text(self.roots_record, text, "the roots record")
        except OSError:
            pass  # a convenience for paths shown later: never a reason to fail an open

    def recorded_roots(self) -> list[str]:
        """The roots `record_roots` kept, or none (no record, or one mdrag cannot read)."""
        try:
            roots = json.loads(self.roots_record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [root for root in roots if isinstance(root, str)] if isinstance(roots, list) else []

    @property
    def databases(self) -> list[Path]:
        """The Lite index's database files, the named one first (none for a server)."""
        return _database_files(str(self.database)) if self.is_lite else []

    @property
    def rebuild_databases(self) -> list[Path]:
        """The databases a rebuild builds beside the live ones, in the same order."""
        return _database_files(self.rebuild_uri) if self.is_lite else []

    def rebuild_files(self) -> list[Path]:
        """Everything a rebuild makes beside the index: its databases, and their Lite servers'
        logs, locks and homes (what a rebuild killed midway leaves)."""
        made = [
            path
            for db in self.rebuild_databases
            for path in (db, lite_log(db), lite_lock(db), *lite_homes(db))
        ]
        # The keyword index first: left without the databases, it can only be a switch cut
        # short between the two (index/rebuild.py), never a removal cut short.
        return [self.rebuild_keyword_index, *made] if self.is_lite else made

    def present(self) -> list[Path]:
        """The files mdrag and Milvus Lite keep beside this index that are there now (`NAME.*`
        and `.NAME.*`), and their folder when it holds nothing else (a folder of mdrag's own,
        never one of the user's that the index was put in)."""
        anchor = self.database if self.database is not None else self.dirty_marker
        folder = anchor.parent
        stem = anchor.name.split(".")[0]
        if not stem:  # `.db` alone: every dotfile would match
            return []
        try:
            entries = list(folder.iterdir())
        except OSError:
            return []
        # NAME.db*, NAME.shard1.db*, NAME.rebuild.db*, NAME.gaps.sqlite, NAME.carried.sqlite and the
        # dotted Lite locks: never a user's NAME.md beside an index put in their notes folder.
        ours = tuple(f"{dot}{stem}.{kind}" for dot in ("", ".") for kind in _KINDS)
        found = [p for p in entries if p.name.startswith(ours)]
        return [*found, folder] if len(found) == len(entries) else found


def _database_files(uri: str) -> list[Path]:
    return shard_paths(normalized(uri), LITE_SHARDS)


# Milvus Lite scans a collection on one core and runs one request at a time per database, so
# one database leaves every other core idle during a search. Each shard is a database of its own
# with its own server, and a search asks them all at once: on 2 cores two shards answer a few ms
# faster than one at 100k sections, for one more server's memory (~90 MB; docs/design/milvus.md, "Two
# shards on Milvus Lite").
LITE_SHARDS = 2


def shard_paths(db: Path, count: int) -> list[Path]:
    """The database files of an index: the named one (shard 0, which also holds the metadata
    collection), then `NAME.shard1.db`, ... beside it."""
    return [db] + [db.with_name(f"{db.stem}.shard{i}{db.suffix}") for i in range(1, count)]


def free_bytes(folder: Path) -> int | None:
    """Room left to a user on the file system holding `folder`; None when it cannot be told."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize

"""Lite: the embedded Milvus Lite server process of a database file, started early, stopped at once."""

from __future__ import annotations

import threading
from pathlib import Path

from mdrag.shards import LITE_SHARDS, shard_paths

_started: set[Path] = set()  # databases whose server this process started ahead of the store


def is_lite(uri: str) -> bool:
    """A file path means Milvus Lite; a URL (http://, tcp://, ...) means a Milvus server."""
    return "://" not in uri


def database_path(uri: str) -> Path:
    return Path(uri).expanduser()


def lock_held(db: Path) -> bool:
    """Milvus Lite keeps ".NAME.lock" beside a database while a process has it open."""
    return (db.parent / f".{db.name}.lock").exists()


def started_here(db: Path) -> bool:
    """True when the lock beside `db` is this process's own head start, not another process."""
    return db in _started


def databases(uri: str) -> list[Path]:
    """Every database file of a Milvus Lite index (one per shard), the named one first."""
    return shard_paths(database_path(uri), LITE_SHARDS)


def start_early(uri: str) -> list[threading.Thread]:
    """Start the Lite servers of `uri` in the background, so a command's imports hide their start.

    Milvus Lite waits a fixed 0.5 s after spawning its server; a command that calls this before
    its heavy imports (pymilvus alone takes ~0.5 s) opens the store to a server already up.
    The store's own open is unchanged: it finds this server, or starts one and reports errors.
    """
    if not is_lite(uri) or lock_held(database_path(uri)):
        return []  # a server, or another process has it: the store's open explains that
    threads = [
        threading.Thread(target=_start, args=(db,), name="mdrag-lite-start", daemon=True)
        for db in databases(uri)
    ]
    for thread in threads:
        thread.start()
    return threads


def _start(db: Path) -> None:
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        from milvus_lite.server_manager import server_manager_instance

        if server_manager_instance.start_and_get_uri(str(db)):
            _started.add(db)
    except Exception:  # noqa: BLE001 - only a head start: the store's open reports what is wrong
        return


def release(db: Path) -> None:
    """Stop a database's Lite server now: left to the interpreter's teardown, its stop added
    0.2-2.3 s to a short command's wall time (0.03 s when asked for here)."""
    from milvus_lite.server_manager import server_manager_instance

    _started.discard(db)
    server_manager_instance.release_server(str(db))

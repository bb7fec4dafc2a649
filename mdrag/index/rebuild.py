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
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from mdrag.catalog import Catalog
from mdrag.index.indexer import Indexer, IndexReport
from mdrag.indexfiles import IndexFiles
from mdrag.milvus import Store
from mdrag.progress import ProgressMeter

if TYPE_CHECKING:  # the service removes a killed rebuild's leftovers (below) when it opens
    from mdrag.service import Service


def rebuild_beside(
    service: Service,
    exclusive: Callable[[], AbstractContextManager[object]],
    progress: ProgressMeter | None = None,
    cancel: threading.Event | None = None,
) -> IndexReport:
    """Index every note of the roots into a new Lite index beside the live one, then switch to it.

    `exclusive` keeps every request out of the live store during the switch (the daemon's gate).
    Interrupted (cancel), the new index is discarded and the old one stays as it was.
    """
    config = service.config
    files = IndexFiles.of(config)
    side = files.rebuild_uri  # `NAME.rebuild.db` beside `NAME.db` (its shards beside it)
    remove_leftovers(files)  # left by a rebuild that was interrupted
    logger.info("rebuilding the index beside the live one, in {}", side)
    store = Store(side, config.milvus_token, service.embedder.dimension, service.embedder.model_id)
    try:
        indexer = Indexer(service.embedder, store, Catalog(), service.filter, config.sections_max_tokens)
        report = indexer.reconcile(None, progress=progress, cancel=cancel)
    finally:
        store.close()
    if cancel is not None and cancel.is_set():
        remove_leftovers(files)
        return report
    with exclusive():
        service.store.close()
        for new, old in zip(files.rebuild_databases, files.databases, strict=True):
            os.replace(new, old)  # both servers stopped: a plain file each
        service.store.reopen()
        service.catalog.reset(service.stored_records())
    logger.info("switched to the rebuilt index")
    return report


def remove_leftovers(files: IndexFiles) -> list[Path]:
    """Remove the side index of a rebuild that did not finish (its databases, and the logs and
    lock files of their Lite servers); returns what was there. Only for a process that holds
    the index's lock, so that no rebuild can be under way."""
    removed = []
    for path in files.rebuild_files():
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed

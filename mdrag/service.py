"""Service: the composition root: the wings built from config (embedder, store, catalog, indexer, searcher).

The daemon owns one Service for its lifetime; the CLI builds one for a single command when
no daemon runs. Both answer every read operation (`handle`) and `reindex` with the same code:
each operation's own logic lives in its wing (retrieval/operations.py, index/targets.py,
index/status.py); the service names who answers and hands it what it needs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from loguru import logger

from mdrag.answers.notes import ContextPack, DuplicatesAnswer, RelatedAnswer, ServiceAnswer, SimilarAnswer
from mdrag.answers.search import Live, SearchAnswer
from mdrag.answers.status import IndexStatus
from mdrag.catalog import RECORD_FIELDS, Catalog, FileRecord, records_from_rows
from mdrag.config import Config
from mdrag.embedding.embedder import Embedder
from mdrag.errors import IndexFullError, QueryError
from mdrag.files import indexlock, private
from mdrag.files.indexfiles import IndexFiles
from mdrag.index.indexer import Indexer, IndexReport
from mdrag.index.rebuild import remove_leftovers, switch_in
from mdrag.index.roots import Roots
from mdrag.index.status import index_status
from mdrag.index.targets import reindex_targets
from mdrag.index.watcher import Watcher
from mdrag.index.workqueue import WorkQueue
from mdrag.milvus import CarriedVectors, PendingKeywords, Store
from mdrag.notes.pathtext import to_fs, to_text
from mdrag.notes.scanner import NoteFilter
from mdrag.params.fields import text_param
from mdrag.params.operations import OPERATIONS
from mdrag.params.search import SearchParams
from mdrag.progress import ProgressMeter
from mdrag.retrieval.gaps import GapLog
from mdrag.retrieval.notetext import note_text
from mdrag.retrieval.operations import ReadOperations
from mdrag.retrieval.search import Searcher
from mdrag.retrieval.similarity import Similarity


class Service:
    """Everything needed to index and search, opened once and closed once."""

    @classmethod
    def open(
        cls,
        config: Config,
        lock: indexlock.IndexLock | None = None,
        embedder: Embedder | None = None,
        pending: Callable[[], bool] = lambda: False,
    ) -> Service:
        """The one place a service is built from config. `lock` is the index's lock, taken once by
        whoever opens the index (the daemon as such, a command as one); without it, a command's
        is taken here, before Milvus opens: a second writer is refused, touching nothing. The
        service owns the lock from here on and releases it when it closes (or fails to open)."""
        if lock is None:
            lock = indexlock.acquire(IndexFiles.of(config).lock, config.milvus_uri)
        try:
            return cls(config, lock, embedder, pending)
        except BaseException:
            lock.release()
            raise

    def __init__(
        self,
        config: Config,
        lock: indexlock.IndexLock,
        embedder: Embedder | None,
        pending: Callable[[], bool],
    ) -> None:
        """Use `Service.open`: it takes the lock this needs held."""
        self.config = config
        self._lock = lock
        self.files = files = IndexFiles.of(config)  # every file kept beside the index, named once
        # Before anything opens: a link there is refused with nothing started or repaired.
        private.refuse_link(files.dirty_marker, "the crash marker")
        private.refuse_link(files.gap_log, "the gap log")
        private.refuse_link(files.pending_keywords, "the pending keyword index")
        private.refuse_link(files.roots_record, "the roots record")
        if files.is_lite:
            removed = remove_leftovers(files)  # we hold the lock: no rebuild runs
            # Logs and locks alone: what the Lite servers of a rebuild that finished left behind.
            if removed:
                cut_short = {files.rebuild_keyword_index, *files.rebuild_databases} & set(removed)
                logger.log(
                    "WARNING" if cut_short else "DEBUG",
                    "removed what a rebuild {} left beside the index: {}",
                    "that did not finish" if cut_short else "that finished",
                    ", ".join(str(path) for path in removed),
                )
        # What an older mdrag or a umask of 022 left readable by others: the notes' text is in there.
        private.tighten(files.present())
        self.embedder = embedder or Embedder(
            config.embedding_model,
            config.embedding_device,
            config.embedding_batch_size,
            config.embedding_backend,
        )
        self._carried = CarriedVectors(files.carried_vectors)
        self.store = self._open_store(config.milvus_uri, carry_to=self._carried)
        self.catalog = Catalog(self.stored_records())
        # With none configured, the roots the index was last opened with (its daemon's --root).
        self.filter = NoteFilter(config.roots or tuple(files.recorded_roots()), config.exclude)
        files.record_roots(config.roots)
        self.roots = Roots(self.filter.roots, lambda root: len(self.catalog.paths_under(to_text(root))))
        # Notes a first index read ahead of the model: keyword search finds them meanwhile.
        self.waiting = PendingKeywords(files.pending_keywords)
        self.indexer = self._indexer(self.store, self.catalog, self._carried, self.roots, self.waiting)
        self.searcher = Searcher(
            self.embedder,
            self.store,
            self.catalog,
            self.waiting,
            lambda path: self.filter.accepts(to_fs(path)),
        )
        self.similarity = Similarity(self.store, self.catalog, self.embedder, self.indexer.sectioner)
        self.gaps = GapLog(files.gap_log)
        self.reads = ReadOperations(
            config,
            self.searcher,
            self.similarity,
            self.catalog,
            self.gaps,
            self.embedder.count_tokens,
            # True while notes wait to be indexed or read again (a queue, a run, lost keyword rows):
            # a search that finds nothing then may only be early, and is no gap.
            lambda: pending() or bool(self.indexer.unshown),
        )
        self.indexer.listeners.append(self.reads.notice_answered_gaps)
        self._marker = files.dirty_marker
        if self._marker.exists():
            logger.warning("the index was not closed cleanly last time; checking it for leftovers")
            self._repair()
        elif self.store.missing_keywords and self.store.keywords_outdated:
            logger.info(
                "the keyword index is written again {}: every note is read again, none embedded again",
                self.store.keywords_outdated,
            )
            self._repair()
        elif self.store.missing_keywords:
            logger.warning("the keyword index lacks rows (lost or unreadable); writing them again")
            self._repair()
        self._marker.parent.mkdir(parents=True, exist_ok=True)
        private.write_text(self._marker, f"{os.getpid()}\n", "the crash marker")

    def _repair(self) -> None:
        """Indexer.repair at the start; a full disk leaves it to a later start rather than stop
        the daemon (a restart loop): searches go on meanwhile, without the rows it lacks."""
        try:
            self.indexer.repair()
        except IndexFullError as exc:
            logger.error("{}; the index is repaired at a later start, once there is room", exc)

    def _open_store(self, uri: str, carry_to: CarriedVectors | None = None) -> Store:
        """A store of this service's model at `uri`: the live index, or a rebuild's side."""
        c = self.config
        files = self.files
        keywords = files.rebuild_keyword_index if uri == files.rebuild_uri else files.keyword_index
        return Store(
            uri,
            c.milvus_token,
            self.embedder.dimension,
            self.embedder.model_id,
            carry_to=carry_to,
            keywords=keywords,
        )

    def _indexer(
        self,
        store: Store,
        catalog: Catalog,
        carried: CarriedVectors | None = None,
        roots: Roots | None = None,
        waiting: PendingKeywords | None = None,
    ) -> Indexer:
        """An indexer with this configuration's limits: the live index's, and a rebuild's alike."""
        c = self.config
        return Indexer(
            self.embedder,
            store,
            catalog,
            self.filter,
            max_tokens=c.sections_max_tokens,
            max_file_bytes=int(c.index_max_file_mb * 1_000_000),
            carried=carried,
            roots=roots,
            waiting=waiting,
        )

    def stored_records(self) -> dict[str, FileRecord]:
        """The catalog as the store holds it (at open, and after the store comes back)."""
        return records_from_rows(self.store.metadata_rows(RECORD_FIELDS))

    def handle(self, op: str, params: dict[str, Any], live: Live | None = None) -> ServiceAnswer:
        """Answer one operation of `params.OPERATIONS` that the service answers (the daemon and
        a command's own process both call this); `live`: the daemon's view, for a fresh answer."""
        handlers: dict[str, Callable[[dict[str, Any]], ServiceAnswer]] = {
            "search": lambda p: self.search(p, live),
            "status": lambda _: self.status(),
            "similar": self.similar,
            "duplicates": self.duplicates,
            "related": self.related,
            "context": lambda p: self.context(p, live),
            "note": lambda p: note_text(self.reads.note_path(p), self.catalog, self.waiting),
            "gaps": lambda p: {"gaps": self.gaps.entries(p.get("status") or None)},
            "gap_status": lambda p: self.gaps.set_status(
                text_param(p, "query", 1000), p.get("status") or "addressed"
            ),
        }
        found = OPERATIONS.get(op)
        if found is None or found.answered_by != "service":
            raise QueryError(f"unknown operation {op!r}")
        return handlers[op](params)

    # ---- the read operations, answered by the read features (retrieval/operations.py) ----

    def search(self, params: SearchParams | dict[str, Any], live: Live | None = None) -> SearchAnswer:
        return self.reads.search(params, live)

    def similar(self, params: dict[str, Any]) -> SimilarAnswer:
        return self.reads.similar(params)

    def duplicates(self, params: dict[str, Any]) -> DuplicatesAnswer:
        return self.reads.duplicates(params)

    def related(self, params: dict[str, Any]) -> RelatedAnswer:
        return self.reads.related(params)

    def context(self, params: dict[str, Any], live: Live | None = None) -> ContextPack:
        return self.reads.context(params, live)

    def search_defaults(self) -> SearchParams:
        return self.reads.search_defaults()

    def reindex(
        self,
        paths: list[str] | None = None,
        force: bool = False,
        rebuild: bool = False,
        progress: ProgressMeter | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        if rebuild:
            logger.info("rebuilding the index from scratch")
            self.store.drop_all()
            self.catalog.reset()
        targets = reindex_targets(paths, self.filter)
        # Folders a person named are the truth, even a root that is gone: its notes go with it.
        return self.indexer.reconcile(
            targets, force=force, progress=progress, cancel=cancel, forget=targets is not None
        )

    # ---- the writer's and the daemon's questions about the index (they never reach past these) ----

    def load(self, step: Callable[[str], None] = lambda _: None) -> None:
        """The model and the vectors, loaded now rather than on first use: a daemon's first search
        is then fast, and a model that cannot load fails its start. `step` is told each part."""
        step(f"loading the model and the vectors of {self.catalog.section_count()} sections")
        # At once: the vectors load in the Milvus Lite servers (processes of their own), the model
        # in this one, so a restart waits for the longer of the two rather than their sum.
        with ThreadPoolExecutor(1, thread_name_prefix="mdrag-load") as pool:
            vectors = pool.submit(self.store.load_vectors)
            self.embedder.load()
            vectors.result()

    @property
    def is_lite(self) -> bool:
        """The index is Milvus Lite's (files of ours beside it), not a server's."""
        return self.store.is_lite

    def engine_alive(self) -> bool:
        """False once a Milvus Lite server of the index has died: only `reconnect` helps."""
        return self.store.engine_alive()

    def ping(self, deadline_s: float = 3.0) -> None:
        """Raises StoreError unless the engine answers within `deadline_s`."""
        self.store.ping(deadline_s)

    def check_room(self) -> None:
        """Raises IndexFullError while the index's file system has no room to write."""
        self.store.check_room()

    def reopen_due(self, after_rows: int) -> int | None:
        """The rows written since the open when a Milvus Lite index should be reopened (at least
        `after_rows`, and a share of the index: see Store.reopen_due), else None."""
        return self.store.rows_written if self.store.reopen_due(after_rows) else None

    def reopen(self, swap: Callable[[], AbstractContextManager[object]]) -> float:
        """Open the index again in fresh engine servers, loaded, while the running ones keep
        answering; `swap` holds requests back for the moment of the switch (Store.reopen)."""
        return self.store.reopen(swap)

    def reconnect(self, exclusive: Callable[[], AbstractContextManager[object]]) -> None:
        """Once the engine answers again: restart a server of ours that died or is stuck (under
        `exclusive`), then reload the catalog from the store and repair half-done writes (a write
        that failed midway may have landed in part: the store's metadata is the truth)."""
        store = self.store
        if store.closed or not store.engine_alive() or (store.is_lite and not store.answers()):
            logger.info("restarting the Milvus Lite server(s) and reopening the index")
            with exclusive():
                store.reopen()
        store.ping()
        self.catalog.reset(self.stored_records())
        self.indexer.repair()

    def index_folders(
        self,
        folders: list[Path],
        progress: ProgressMeter | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Bring the notes under `folders` in line (a folder created, moved or removed)."""
        return self.indexer.reconcile(folders, cancel=cancel, progress=progress)

    def index_files(
        self, files: list[str], progress: ProgressMeter | None = None, cancel: threading.Event | None = None
    ) -> IndexReport:
        """Index the notes at `files` (stored path forms) that changed; drop those gone."""
        return self.indexer.index_files(files, cancel=cancel, progress=progress)

    def watcher(self, queue: WorkQueue, on_overflow: Callable[[], None]) -> Watcher:
        """A watcher of this service's roots, by its include and exclude rules, feeding `queue`."""
        return Watcher(self.filter, queue, on_overflow=on_overflow)

    @property
    def root_folders(self) -> list[Path]:
        return list(self.filter.roots)

    def roots_changed(self) -> list[Path]:
        """Roots that went away or came back since the last look (each to be reconciled): a root
        that is away keeps its notes (index/roots.py)."""
        self.roots.check()
        return [root for root, _ in self.roots.changes()]

    def unavailable_roots(self) -> dict[Path, str]:
        """Each root away at the last look, with why (no new look)."""
        return self.roots.unavailable(look=False)

    def note_count(self) -> int:
        return len(self.catalog)

    def rebuild_beside(
        self,
        exclusive: Callable[[], AbstractContextManager[object]],
        progress: ProgressMeter | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Index every note of the roots into a new Lite index beside the live one, then switch to
        it (see index/rebuild.py). `exclusive` keeps every request out of the live store during the
        switch (the daemon's gate). Interrupted (cancel), the new index is discarded and the old one
        stays as it was."""
        remove_leftovers(self.files)  # left by a rebuild that was interrupted
        logger.info("rebuilding the index beside the live one, in {}", self.files.rebuild_uri)
        store = self._open_store(self.files.rebuild_uri)
        try:
            report = self._indexer(store, Catalog()).reconcile(None, progress=progress, cancel=cancel)
        finally:
            store.close()
        if cancel is not None and cancel.is_set():
            remove_leftovers(self.files)
            return report
        with exclusive():
            self.store.close()
            switch_in(self.files)
            self.store.reopen()
            self.catalog.reset(self.stored_records())
            if self.waiting is not None:
                self.waiting.discard()  # the rebuilt index holds every note
        logger.info("switched to the rebuilt index")
        return report

    def status(self) -> IndexStatus:
        return index_status(
            self.catalog,
            self.filter,
            self.roots,
            self.indexer.unshown,
            self.embedder.model_id,
            {"uri": self.config.milvus_uri, "shards": self.store.shards},
            self.reads.open_gaps(),
        )

    def close(self) -> None:
        try:
            self.searcher.close()
            self.gaps.close()
            self.store.close()
            self._marker.unlink(missing_ok=True)
        finally:
            self._lock.release()

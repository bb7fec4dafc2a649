"""Service: the embedder, store, catalog, indexer and searcher built from config, and their operations.

The daemon owns one Service for its lifetime; the CLI builds one for a single command when
no daemon runs. Both answer every read operation (`handle`) and `reindex` with the same code.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from mdrag import __version__
from mdrag.answers.notes import ContextPack, DuplicatesAnswer, RelatedAnswer, ServiceAnswer, SimilarAnswer
from mdrag.answers.search import Live, SearchAnswer
from mdrag.answers.status import FailedNote, IndexStatus
from mdrag.catalog import RECORD_FIELDS, Catalog, FileRecord, records_from_rows
from mdrag.config import Config
from mdrag.embedding.embedder import Embedder
from mdrag.errors import ConfigError, IndexFullError, QueryError
from mdrag.files import indexlock, private
from mdrag.files.indexfiles import IndexFiles
from mdrag.index.indexer import Indexer, IndexReport
from mdrag.index.rebuild import remove_leftovers, switch_in
from mdrag.index.roots import Roots
from mdrag.index.watcher import Watcher
from mdrag.index.workqueue import WorkQueue
from mdrag.milvus import CarriedVectors, PendingKeywords, Store
from mdrag.notes.pathtext import to_fs, to_text
from mdrag.notes.scanner import NoteFilter
from mdrag.params import MAX_DRAFT_CHARS, OPERATIONS, SearchParams, search_defaults, text_param, whole_number
from mdrag.progress import ProgressMeter, early_message
from mdrag.retrieval.context import CONTEXT_THRESHOLD, DEFAULT_MAX_TOKENS, SEARCH_DEPTH, build_context
from mdrag.retrieval.gaps import GapLog
from mdrag.retrieval.notetext import note_text
from mdrag.retrieval.related import related_notes
from mdrag.retrieval.search import Searcher
from mdrag.retrieval.similarity import SIMILAR_FLOOR, Similarity, duplicate_groups


def on_disk(path: str) -> str:
    """A path as given, or, when only its stored form names a file (a path copied from a hit,
    its undecodable bytes written as \\xHH), the file it stands for (see pathtext)."""
    if not os.path.lexists(path) and os.path.lexists(to_fs(path)):
        return to_fs(path)
    return path


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
        if files.is_lite:
            removed = remove_leftovers(files)  # we hold the lock: no rebuild runs
            if removed:
                logger.warning(
                    "removed what a rebuild that did not finish left beside the index: {}",
                    ", ".join(str(path) for path in removed),
                )
        # What an older mdrag or a umask of 022 left readable by others: the notes' text is in there.
        private.tighten(files.present())
        # True while notes wait to be indexed (the daemon's queue or a run under way): a search
        # that finds nothing then may only be early, and is no gap.
        self.pending = pending
        self.started_at = time.time()
        self.embedder = embedder or Embedder(
            config.embedding_model,
            config.embedding_device,
            config.embedding_batch_size,
            config.embedding_backend,
        )
        self._carried = CarriedVectors(files.carried_vectors)
        self.store = self._open_store(config.milvus_uri, carry_to=self._carried)
        self.catalog = Catalog(self.stored_records())
        self.filter = NoteFilter(config.roots, config.exclude)
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
        self.indexer.listeners.append(self._notice_answered_gaps)
        self._marker = files.dirty_marker
        if self._marker.exists():
            logger.warning("the index was not closed cleanly last time; checking it for leftovers")
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
            "note": lambda p: note_text(self._note(p), self.catalog, self.waiting),
            "gaps": lambda p: {"gaps": self.gaps.entries(p.get("status") or None)},
            "gap_status": lambda p: self.gaps.set_status(
                text_param(p, "query", 1000), p.get("status") or "addressed"
            ),
        }
        found = OPERATIONS.get(op)
        if found is None or found.answered_by != "service":
            raise QueryError(f"unknown operation {op!r}")
        return handlers[op](params)

    def search(self, params: SearchParams | dict[str, Any], live: Live | None = None) -> SearchAnswer:
        """One search, on parameters parsed once: by whoever asked, or here from a request's
        fields (the config filling what they leave out)."""
        if not isinstance(params, SearchParams):
            params = SearchParams.parse(params, self.search_defaults())
        found = self.searcher.search(params, indexing=live is not None and live.indexing is not None)
        response = found.to_dict()
        # A gap is a question the notes cannot answer at the usual bar: not a passage, not a
        # search narrowed by tags or a folder, not one asking for more than the configured
        # threshold, nor a search the asker says is not a question yet (the page's as-you-type).
        plain = params.record_gap and not (params.passage or params.tags or params.path_prefix)
        usual = plain and params.threshold <= self.config.search_threshold
        if not response["results"] and usual and not self.pending():
            self._record_gap(params.query, response["best_candidate_score"], found.query_vector)
        if live is None:  # no daemon, no queue: as fresh as the last reindex
            response["freshness"] = {
                "queue_depth": 0,
                "last_change_applied_at": self.catalog.last_indexed_at(),
            }
        else:
            response["freshness"] = live.freshness
            response["indexing"] = live.indexing
            if live.indexing is not None and not response["results"]:
                response["message"] = early_message(live.indexing, by_words=params.mode != "dense")
        return response

    def _record_gap(self, query: str, best: float | None, vector: np.ndarray | None) -> None:
        try:
            self.gaps.record(query, best, vector)
        except Exception as exc:  # the answer matters more than its bookkeeping
            logger.warning("could not record the unanswered query in {}: {}", self.gaps.path, exc)

    def _notice_answered_gaps(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        try:
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
            answered = self.gaps.notice_answers(
                [row["file_path"] for row in rows], vectors, self.config.search_threshold
            )
        except Exception as exc:
            logger.warning("could not check the recorded gaps against new notes: {}", exc)
            return
        for query in answered:
            logger.info("a new note may answer the recorded gap {!r}", query)

    def similar(self, params: dict[str, Any]) -> SimilarAnswer:
        k = whole_number(params, "k", 10, 1, 100)
        if params.get("text") is not None:
            target = self.similarity.of_text(text_param(params, "text", MAX_DRAFT_CHARS))
        else:
            target = self.similarity.of_note(self._note(params))
        # `floor`: the lowest score listed, so an empty answer can say what it left out.
        return {"note": target.path, "floor": SIMILAR_FLOOR, "results": self.similarity.similar(target, k)}

    def duplicates(self, params: dict[str, Any]) -> DuplicatesAnswer:
        # Below 50 nearly every pair qualifies: a list nobody can act on, at quadratic cost.
        min_score = whole_number(params, "min_score", 90, 50, 100)
        limit = whole_number(params, "limit", 1000, 1, 100000)
        pairs, complete = self.similarity.duplicates(min_score)
        return {
            "min_score": min_score,
            "total_pairs": len(pairs),
            "complete": complete,
            "pairs": pairs[:limit],
            "groups": duplicate_groups(pairs)[:limit],
        }

    def related(self, params: dict[str, Any]) -> RelatedAnswer:
        return related_notes(
            self._note(params), self.catalog, self.similarity, whole_number(params, "k", 10, 1, 100)
        )

    def context(self, params: dict[str, Any], live: Live | None = None) -> ContextPack:
        max_tokens = whole_number(params, "max_tokens", DEFAULT_MAX_TOKENS, 50, 100000)
        search = {k: v for k, v in params.items() if k != "max_tokens"}
        search.setdefault("top_k", SEARCH_DEPTH)
        search.setdefault("threshold", CONTEXT_THRESHOLD)
        found = self.search(search, live)  # while notes are being indexed, its reasons say "so far"
        pack = build_context(found, max_tokens, self.embedder.count_tokens, self.config.search_threshold)
        if live is not None:
            pack["freshness"] = live.freshness
            pack["indexing"] = live.indexing
        return pack

    def _note(self, params: dict[str, Any]) -> str:
        """The note's path as the catalog knows it: as written (a symlink stays one), else resolved."""
        text = text_param(params, "note", 4096)
        absolute = os.path.abspath(os.path.expanduser(text))
        if self.catalog.get(absolute) is not None:
            return absolute  # the stored form, as a result showed it
        # A path as the OS gives it (its undecodable bytes as surrogates): stored form (pathtext).
        absolute = to_text(absolute)
        if self.catalog.get(absolute) is not None:
            return absolute
        return to_text(Path(to_fs(absolute)).resolve())

    def search_defaults(self) -> SearchParams:
        return search_defaults(self.config)

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
        targets = [Path(on_disk(os.path.expanduser(p))).resolve() for p in paths] if paths else None
        if targets is None and not self.filter.roots:
            raise ConfigError(
                "no roots configured: set `roots` in the config file, or pass the folders to index"
            )
        if targets:
            outside = [str(t) for t in targets if self.filter.root_of(t) is None]
            if outside:
                raise ConfigError(
                    f"{', '.join(outside)} is not under a configured root "
                    f"({', '.join(map(str, self.filter.roots)) or 'none configured'}); add it to `roots`"
                )
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

    def _failed(self) -> list[FailedNote]:
        """Notes that failed, with their reasons, then places the scan could not read (a folder
        past the system's path length): their notes are on no list but this one."""
        failed: list[FailedNote] = [
            {"file_path": r.file_path, "error": r.error_message} for r in self.catalog.failed()
        ]
        for place, why in sorted(self.filter.unlisted.copy().items()):  # a copy: the writer scans
            failed.append(
                {"file_path": to_text(place), "error": f"cannot read: {why}; notes under it are not indexed"}
            )
        return failed

    def status(self) -> IndexStatus:
        unshown = sorted(self.indexer.unshown.copy())  # a copy is one step: the indexer may add to it
        return {
            "version": __version__,
            "documents": self.catalog.status_counts(),
            "sections": self.catalog.section_count(),
            "failed": self._failed(),
            "warnings": [
                {"file_path": r.file_path, "warning": r.warning} for r in self.catalog.records() if r.warning
            ],
            "last_indexed_at": self.catalog.last_indexed_at() or None,
            "model": self.embedder.model_id,
            "store": {
                "uri": self.config.milvus_uri,
                "shards": self.store.shards,
            },
            "roots": [str(r) for r in self.filter.roots],
            "unavailable_roots": self.roots.report(),
            "unshown": {"notes": len(unshown), "example": unshown[0]} if unshown else None,
            "open_gaps": self._open_gaps(),
        }

    def _open_gaps(self) -> int | None:
        try:
            return self.gaps.count_open()
        except Exception as exc:  # the status report must not fail over its least important line
            logger.warning("could not read the gap log {}: {}", self.gaps.path, exc)
            return None

    def close(self) -> None:
        try:
            self.searcher.close()
            self.gaps.close()
            self.store.close()
            self._marker.unlink(missing_ok=True)
        finally:
            self._lock.release()

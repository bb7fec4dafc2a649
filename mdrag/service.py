"""Service: the embedder, store, catalog, indexer and searcher built from config, and their operations.

The daemon owns one Service for its lifetime; the CLI builds one for a single command when
no daemon runs. Both answer every read operation (`handle`) and `reindex` with the same code.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from mdrag import __version__, indexlock, private
from mdrag.catalog import RECORD_FIELDS, Catalog, FileRecord, records_from_rows
from mdrag.config import Config
from mdrag.embedding.embedder import Embedder
from mdrag.errors import ConfigError, QueryError
from mdrag.index.indexer import Indexer, IndexReport
from mdrag.index.rebuild import remove_leftovers
from mdrag.index.roots import Roots
from mdrag.indexfiles import IndexFiles
from mdrag.milvus import CarriedVectors, Store
from mdrag.notes.pathtext import to_fs, to_text
from mdrag.notes.scanner import NoteFilter
from mdrag.params import MAX_DRAFT_CHARS, SearchParams, text_param, whole_number
from mdrag.progress import ProgressMeter
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

    def __init__(
        self,
        config: Config,
        embedder: Embedder | None = None,
        pending: Callable[[], bool] = lambda: False,
    ) -> None:
        # mdrag's own lock before Milvus opens: a second writer is refused here, touching nothing.
        self._lock = indexlock.acquire(IndexFiles.of(config).lock, config.milvus_uri)
        try:
            self._open(config, embedder, pending)
        except BaseException:
            self._lock.release()
            raise

    def _open(self, config: Config, embedder: Embedder | None, pending: Callable[[], bool]) -> None:
        self.config = config
        # Before anything opens: a link there is refused with nothing started or repaired.
        files = IndexFiles.of(config)
        private.refuse_link(files.dirty_marker, "the crash marker")
        private.refuse_link(files.gap_log, "the gap log")
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
        carried = CarriedVectors(files.carried_vectors)
        self.store = Store(
            config.milvus_uri,
            config.milvus_token,
            self.embedder.dimension,
            self.embedder.model_id,
            carry_to=carried,
        )
        self.catalog = Catalog(self.stored_records())
        self.filter = NoteFilter(config.roots, config.exclude)
        self.roots = Roots(self.filter.roots, lambda root: len(self.catalog.paths_under(to_text(root))))
        self.indexer = Indexer(
            self.embedder,
            self.store,
            self.catalog,
            self.filter,
            config.sections_max_tokens,
            carried,
            self.roots,
        )
        self.indexer.max_file_bytes = int(config.index_max_file_mb * 1_000_000)
        self.searcher = Searcher(self.embedder, self.store, self.catalog)
        self.similarity = Similarity(self.store, self.catalog, self.embedder, self.indexer.sectioner)
        self.gaps = GapLog(files.gap_log)
        self.indexer.listeners.append(self._notice_answered_gaps)
        self._marker = files.dirty_marker
        if self._marker.exists():
            logger.warning("the index was not closed cleanly last time; checking it for leftovers")
            self.indexer.repair()
        self._marker.parent.mkdir(parents=True, exist_ok=True)
        private.write_text(self._marker, f"{os.getpid()}\n", "the crash marker")

    def stored_records(self) -> dict[str, FileRecord]:
        """The catalog as the store holds it (at open, and after the store comes back)."""
        return records_from_rows(self.store.metadata_rows(RECORD_FIELDS))

    def handle(self, op: str, params: dict[str, Any]) -> Any:
        """Answer one read operation of the protocol (the daemon and the direct CLI both call this)."""
        handlers = {
            "search": self.search,
            "status": lambda _: self.status(),
            "similar": self.similar,
            "duplicates": self.duplicates,
            "related": self.related,
            "context": self.context,
            "note": lambda p: note_text(self._note(p), self.catalog),
            "gaps": lambda p: {"gaps": self.gaps.entries(p.get("status") or None)},
            "gap_status": lambda p: self.gaps.set_status(
                text_param(p, "query", 1000), p.get("status") or "addressed"
            ),
        }
        if op not in handlers:
            raise QueryError(f"unknown operation {op!r}")
        return handlers[op](params)

    def search(self, raw: dict[str, Any]) -> dict[str, Any]:
        params = SearchParams.parse(raw, self.search_defaults())
        found = self.searcher.search(params)
        response = found.to_dict()
        # A gap is a question the notes cannot answer at the usual bar: not a passage, not a
        # search narrowed by tags or a folder, not one asking for more than the configured
        # threshold, nor a search the asker says is not a question yet (the page's as-you-type).
        asked = raw.get("record_gap") is not False
        plain = asked and not (params.passage or params.tags or params.path_prefix)
        usual = plain and params.threshold <= self.config.search_threshold
        if not response["results"] and usual and not self.pending():
            self._record_gap(params.query, response["best_candidate_score"], found.query_vector)
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

    def similar(self, params: dict[str, Any]) -> dict[str, Any]:
        k = whole_number(params, "k", 10, 1, 100)
        if params.get("text") is not None:
            target = self.similarity.of_text(text_param(params, "text", MAX_DRAFT_CHARS))
        else:
            target = self.similarity.of_note(self._note(params))
        # `floor`: the lowest score listed, so an empty answer can say what it left out.
        return {"note": target.path, "floor": SIMILAR_FLOOR, "results": self.similarity.similar(target, k)}

    def duplicates(self, params: dict[str, Any]) -> dict[str, Any]:
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

    def related(self, params: dict[str, Any]) -> dict[str, Any]:
        return related_notes(
            self._note(params), self.catalog, self.similarity, whole_number(params, "k", 10, 1, 100)
        )

    def context(self, params: dict[str, Any]) -> dict[str, Any]:
        max_tokens = whole_number(params, "max_tokens", DEFAULT_MAX_TOKENS, 50, 100000)
        search = {k: v for k, v in params.items() if k != "max_tokens"}
        search.setdefault("top_k", SEARCH_DEPTH)
        search.setdefault("threshold", CONTEXT_THRESHOLD)
        return build_context(
            self.search(search), max_tokens, self.embedder.count_tokens, self.config.search_threshold
        )

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
        c = self.config
        return SearchParams(query="-", top_k=c.search_top_k, threshold=c.search_threshold, mode=c.search_mode)

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

    def status(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "documents": self.catalog.status_counts(),
            "sections": self.catalog.section_count(),
            "failed": [{"file_path": r.file_path, "error": r.error_message} for r in self.catalog.failed()],
            "warnings": [
                {"file_path": r.file_path, "warning": r.warning} for r in self.catalog.records() if r.warning
            ],
            "last_indexed_at": self.catalog.last_indexed_at() or None,
            "model": self.embedder.model_id,
            "store": {
                "uri": self.config.milvus_uri,
                "shards": self.store.shards,
                "full_text_search": self.store.full_text,
            },
            "roots": [str(r) for r in self.filter.roots],
            "unavailable_roots": self.roots.report(),
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

"""Service: the embedder, store, catalog, indexer and searcher built from config, and their operations.

The daemon owns one Service for its lifetime; the CLI builds one for a single command when
no daemon runs. Both answer `search`, `status` and `reindex` with the same code.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from loguru import logger

from mdrag import __version__
from mdrag.catalog import Catalog
from mdrag.config import Config
from mdrag.embedder import Embedder
from mdrag.errors import ConfigError
from mdrag.indexer import Indexer, IndexReport, Progress
from mdrag.protocol import SearchParams
from mdrag.scanner import NoteFilter
from mdrag.search import Searcher
from mdrag.store import Store


def dirty_marker(config: Config) -> Path:
    """A file that exists while a writer has the index open; found at start, it means a crash."""
    if "://" not in config.milvus_uri:
        return Path(config.milvus_uri).expanduser().resolve().with_suffix(".db.dirty")
    digest = hashlib.sha256(config.milvus_uri.encode()).hexdigest()[:12]
    return config.data_dir / f"server-{digest}.dirty"


class Service:
    """Everything needed to index and search, opened once and closed once."""

    def __init__(self, config: Config, embedder: Embedder | None = None) -> None:
        self.config = config
        self.started_at = time.time()
        self.embedder = embedder or Embedder(
            config.embedding_model, config.embedding_device, config.embedding_batch_size
        )
        self.store = Store(
            config.milvus_uri, config.milvus_token, self.embedder.dimension, self.embedder.model_id
        )
        self.catalog = Catalog(self.store.load_catalog())
        self.filter = NoteFilter(config.roots, config.exclude)
        self.indexer = Indexer(
            self.embedder, self.store, self.catalog, self.filter, config.sections_max_tokens
        )
        self.searcher = Searcher(self.embedder, self.store, self.catalog)
        self._marker = dirty_marker(config)
        if self._marker.exists():
            logger.warning("the index was not closed cleanly last time; checking it for leftovers")
            self.indexer.repair()
        self._marker.parent.mkdir(parents=True, exist_ok=True)
        self._marker.write_text(f"{os.getpid()}\n")

    def search(self, raw: dict[str, Any]) -> dict[str, Any]:
        params = SearchParams.parse(raw, self.search_defaults())
        return self.searcher.search(params).to_dict()

    def search_defaults(self) -> SearchParams:
        c = self.config
        return SearchParams(query="-", top_k=c.search_top_k, threshold=c.search_threshold, mode=c.search_mode)

    def reindex(
        self,
        paths: list[str] | None = None,
        force: bool = False,
        rebuild: bool = False,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        if rebuild:
            logger.info("rebuilding the index from scratch")
            self.store.drop_all()
            self.catalog.reset()
        targets = [Path(p).expanduser().resolve() for p in paths] if paths else None
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
        return self.indexer.reconcile(targets, force=force, progress=progress, cancel=cancel)

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
            "store": {"uri": self.config.milvus_uri, "full_text_search": self.store.full_text},
            "roots": [str(r) for r in self.filter.roots],
        }

    def close(self) -> None:
        self.store.close()
        self._marker.unlink(missing_ok=True)

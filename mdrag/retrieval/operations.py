"""Read operations: a request's fields parsed, the read feature asked, its answer shaped (freshness, gaps)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from mdrag.answers.notes import ContextPack, DuplicatesAnswer, RelatedAnswer, SimilarAnswer
from mdrag.answers.search import Live, SearchAnswer
from mdrag.catalog import Catalog
from mdrag.config import Config
from mdrag.notes.pathtext import to_fs, to_text
from mdrag.params.fields import MAX_DRAFT_CHARS, text_param, whole_number
from mdrag.params.search import SearchParams, search_defaults
from mdrag.progress import early_message
from mdrag.retrieval.context import CONTEXT_THRESHOLD, DEFAULT_MAX_TOKENS, SEARCH_DEPTH, build_context
from mdrag.retrieval.gaps import GapLog
from mdrag.retrieval.related import related_notes
from mdrag.retrieval.search import Searcher
from mdrag.retrieval.similarity import SIMILAR_FLOOR, Similarity, duplicate_groups


class ReadOperations:
    """The read features behind the operations a request names (search, similar, duplicates,
    related, context), on what `Service.open` built; the service answers each through these."""

    def __init__(
        self,
        config: Config,
        searcher: Searcher,
        similarity: Similarity,
        catalog: Catalog,
        gaps: GapLog,
        count_tokens: Callable[[Sequence[str]], list[int]],
        pending: Callable[[], bool],
    ) -> None:
        """`pending`: true while notes wait to be indexed; a search that finds nothing then may
        only be early, and is no gap."""
        self.config = config
        self.searcher = searcher
        self.similarity = similarity
        self.catalog = catalog
        self.gaps = gaps
        self._count_tokens = count_tokens
        self._pending = pending

    def search_defaults(self) -> SearchParams:
        return search_defaults(self.config)

    def search(self, params: SearchParams | dict[str, Any], live: Live | None = None) -> SearchAnswer:
        """One search, on parameters parsed once: by whoever asked, or here from a request's
        fields (the config filling what they leave out)."""
        if not isinstance(params, SearchParams):
            params = SearchParams.parse(params, self.search_defaults())
        # A note being indexed, a saved change still queued, or a note whose keyword rows wait to
        # be read again may hold a word no indexed note does: the reason then says "so far"
        # rather than "no note mentions".
        early = self._pending() or (
            live is not None and (live.indexing is not None or live.freshness["queue_depth"] > 0)
        )
        found = self.searcher.search(params, indexing=early)
        response = found.to_dict()
        # A gap is a question the notes cannot answer at the usual bar: not a passage, not a
        # search narrowed by tags or a folder, not one asking for more than the configured
        # threshold, nor a search the asker says is not a question yet (the page's as-you-type),
        # nor one with no word in it at all ("?", "*", an emoji: a slip, not a question).
        plain = params.record_gap and not (params.passage or params.scope.narrows)
        plain = plain and any(char.isalnum() for char in params.query)
        usual = plain and params.threshold <= self.config.search_threshold
        if not response["results"] and usual and not self._pending():
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
                shown = bool(response["closest"] or response["related"])
                response["message"] = early_message(live.indexing, params.mode != "dense", shown)
        return response

    def _record_gap(self, query: str, best: float | None, vector: np.ndarray | None) -> None:
        try:
            self.gaps.record(query, best, vector)
        except Exception as exc:  # the answer matters more than its bookkeeping
            logger.warning("could not record the unanswered query in {}: {}", self.gaps.path, exc)

    def open_gaps(self) -> int | None:
        """The gaps still open, for `status`; None when the gap log cannot be read."""
        try:
            return self.gaps.count_open()
        except Exception as exc:  # the status report must not fail over its least important line
            logger.warning("could not read the gap log {}: {}", self.gaps.path, exc)
            return None

    def notice_answered_gaps(self, rows: list[dict[str, Any]]) -> None:
        """The indexer's listener: the vector rows it just wrote, checked against the open gaps."""
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
            target = self.similarity.of_note(self.note_path(params))
        # `floor`: the lowest score listed, so an empty answer can say what it left out.
        return {"note": target.path, "floor": SIMILAR_FLOOR, "results": self.similarity.similar(target, k)}

    def duplicates(self, params: dict[str, Any]) -> DuplicatesAnswer:
        # Below 50 nearly every pair qualifies: a list nobody can act on, at quadratic cost.
        min_score = whole_number(params, "min_score", 90, 50, 100)
        limit = whole_number(params, "limit", 1000, 1, 100000)
        pairs, complete = self.similarity.duplicates(min_score)
        groups = duplicate_groups(pairs)
        return {
            "min_score": min_score,
            "total_pairs": len(pairs),
            "total_groups": len(groups),
            "complete": complete,
            "pairs": pairs[:limit],
            "groups": groups[:limit],
        }

    def related(self, params: dict[str, Any]) -> RelatedAnswer:
        return related_notes(
            self.note_path(params), self.catalog, self.similarity, whole_number(params, "k", 10, 1, 100)
        )

    def context(self, params: dict[str, Any], live: Live | None = None) -> ContextPack:
        max_tokens = whole_number(params, "max_tokens", DEFAULT_MAX_TOKENS, 50, 100000)
        search = {k: v for k, v in params.items() if k != "max_tokens"}
        search.setdefault("top_k", SEARCH_DEPTH)
        search.setdefault("threshold", CONTEXT_THRESHOLD)
        found = self.search(search, live)  # while notes are being indexed, its reasons say "so far"
        pack = build_context(found, max_tokens, self._count_tokens, self.config.search_threshold)
        if live is not None:
            pack["freshness"] = live.freshness
            pack["indexing"] = live.indexing
        return pack

    def note_path(self, params: dict[str, Any]) -> str:
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

"""Search: embed the query, ask the store (dense, BM25 or both), score each candidate, keep what passes."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from mdrag.catalog import Catalog
from mdrag.embedding.embedder import Embedder
from mdrag.milvus import NoteScope, PendingKeywords, Store, note_scope
from mdrag.params.search import SearchParams
from mdrag.retrieval import ahead, ranking, relevance
from mdrag.retrieval.baseline import VaultBaseline
from mdrag.retrieval.candidate import MODE_LISTS, Candidate, SectionKey, as_candidate, section_key
from mdrag.retrieval.described import attach_descriptions
from mdrag.retrieval.hittext import attach_texts
from mdrag.retrieval.query import keyword_query
from mdrag.retrieval.response import SearchResponse, respond

CANDIDATE_FACTOR = 2  # rows asked per wanted hit: windows and swapped versions collapse


class Searcher:
    """Answers similarity queries over the index; safe to call from many threads.

    A hybrid search asks two indexes: the keyword one (BM25) while the query is embedded, then
    Milvus for the dense candidates and, at once, for the keyword rows' cosines; Milvus answers
    ids and distances, and what each candidate shows is read from the keyword index by id (one
    lookup of a millisecond or two), so the threshold is applied on whole candidates.
    """

    def __init__(
        self,
        embedder: Embedder,
        store: Store,
        catalog: Catalog,
        waiting: PendingKeywords | None = None,
        accepts: Callable[[str], bool] = lambda _: True,
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.catalog = catalog
        self.waiting = waiting  # notes a first index read ahead of the model (index/prepass.py)
        self.accepts = accepts  # whether a path is a note of the vault (as the scanner says)
        self.baseline = VaultBaseline(store, catalog)
        self._keyword_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mdrag-keyword")

    def close(self) -> None:
        self._keyword_pool.shutdown(wait=False, cancel_futures=True)

    def search(
        self,
        params: SearchParams,
        leave_out: Callable[[str], bool] | None = None,
        pool: int = 0,
        indexing: bool = False,
        as_scored: bool = False,
    ) -> SearchResponse:
        """Answer one query. `indexing`: notes are still being indexed, so a word no indexed note
        holds may be in one not read yet (the reason says "so far"). For the eval:
        `leave_out(file_path)` drops notes before scoring (each query asked again without its
        relevant notes, as if they were not in the index), and `pool` sets the rows asked of each
        list (default: from top_k) to see every candidate a default search scores, and
        `as_scored` shows each as scored (readable.py leaves a note's names in place), so what the
        order is fitted on is the sections it ordered."""
        started = time.perf_counter()
        vector, ranked, unheard = self._candidates(params, leave_out, pool)
        lists = dict(zip(MODE_LISTS[params.mode], ranked, strict=False))
        # After the catalog dropped other versions' rows: only the candidates scored are read.
        attach_texts((row for rows in ranked for row in rows), self.store.window_texts)
        if params.explain or relevance.weighs("description", params.mode):
            attach_descriptions(
                (row for rows in ranked for row in rows), vector, self.store.description_vectors
            )
        ordered, evidence = ranking.scored(
            params,
            lists.get("dense", []),
            lists.get("keyword", []),
            self._baseline(params, vector),
            unheard,
        )
        # Nothing found under a filter: is it the filter, holding no note at all? (Asked only then.)
        empty_scope = not ordered and params.scope.narrows and not self._paths_within(params)
        return respond(params, ordered, ranked, evidence, vector, started, indexing, empty_scope, as_scored)

    def _candidates(
        self, params: SearchParams, leave_out: Callable[[str], bool] | None, pool: int
    ) -> tuple[np.ndarray, list[list[Candidate]], tuple[str, ...]]:
        """The query's vector; the engine's candidate lists, one per list the mode asks for
        (MODE_LISTS), each one candidate per section in the engine's order, with the notes
        waiting for the model placed among them; and the query's words no note holds."""
        # Never fewer rows than a default search asks: a hit's ranks, its "both lists agree" and
        # its lead are read from the candidates, so a smaller -k would change its score.
        wanted = max(params.top_k, relevance.AGREE_DEPTH)
        limit = pool or min(16384, wanted * CANDIDATE_FACTOR + 10)
        pending: list[futures.Future[Any]] = []
        keyword_hits = scored = None
        words = keyword_query(params.query)  # the query's words the keyword index reads
        if params.mode in ("keyword", "hybrid") and self.catalog.has_sections():
            # The keyword index finds its rows while the query is embedded.
            keyword_hits = self._keyword_pool.submit(self.store.keyword_hits, words, limit, params.scope)
            pending.append(keyword_hits)
        waiting = None
        if params.mode in ("keyword", "hybrid") and self.waiting is not None and self.waiting.active:
            # Notes not embedded yet are found by their words meanwhile.
            waiting = self._keyword_pool.submit(self.waiting.rows, words, limit, params.scope)
            pending.append(waiting)
        # A passage is no question: its every word need not be a note's. Among the notes the
        # search may give: a word only notes outside its filters hold is unheard. Looked up
        # meanwhile too (a filtered lookup reads every row of the notes kept).
        unheard = None if params.passage else self._keyword_pool.submit(self._unheard, words, params)
        if unheard is not None:
            pending.append(unheard)
        ranked: list[list[Candidate]] = []
        try:
            vector = self._query_vector(params)
            if keyword_hits is not None:
                # Their shards score them against the query while the dense search runs.
                scored = self._keyword_pool.submit(self.store.keyword_rows, keyword_hits.result(), vector)
                pending.append(scored)
            floor = -1.0  # the lowest cosine the dense search returned, had it all it asked for
            if params.mode in ("dense", "hybrid"):
                nearest = self.store.search_dense(vector, limit, self._note_scope(params))
                floor = nearest.floor
                dense = [as_candidate(row) for row in nearest.rows]
                for row in dense:
                    row["cosine"] = row["distance"]
                dense = [row for row in dense if not (leave_out and leave_out(row["file_path"]))]
                ranked.append(self._sections(dense, params))
        except BaseException:
            # The keyword search must not outlive its request (the daemon may reopen the store
            # once the request is over).
            for future in pending:
                if not future.cancel():
                    futures.wait([future])
            raise
        unheard_words = () if unheard is None else unheard.result()
        if scored is not None:
            found = [as_candidate(row) for row in scored.result()]
            found = [row for row in found if not (leave_out and leave_out(row["file_path"]))]
            ranked.append(self._sections(found, params))
        elif waiting is not None:
            ranked.append([])  # no indexed note has sections yet: the waiting ones are the keyword list
        lists = dict(zip(MODE_LISTS[params.mode], ranked, strict=False))
        if waiting is not None:
            found_ahead = ahead.candidates(
                waiting.result(), vector, self.embedder, self.catalog, self.accepts
            )
            ahead.merged(lists.get("dense", []), lists["keyword"], found_ahead, floor)
        return vector, ranked, unheard_words

    def _note_scope(self, params: SearchParams) -> NoteScope | None:
        """The notes a filtered dense search searches among (None: every note). A path alone is
        matched on the catalog's paths (reading 12,352 of them from Milvus took ~120 ms at 5x);
        tags are read from the notes' metadata rows."""
        if not params.scope.narrows:
            return None
        return note_scope(self._paths_within(params), self.catalog.paths())

    def _paths_within(self, params: SearchParams) -> list[str]:
        """The indexed notes within the search's filter, by their metadata rows or, for a path
        alone, the catalog's paths (a note with no sections, or one that failed, counts)."""
        if params.scope.tags:
            return self.store.paths_within(params.scope)
        return [path for path in self.catalog.paths() if params.scope.holds(path)]

    def _unheard(self, words: str, params: SearchParams) -> tuple[str, ...]:
        """The query's words no note holds: neither an indexed one nor one waiting for the model."""
        unheard = self.store.unheard(words, params.scope)
        if unheard and self.waiting is not None and self.waiting.active:
            waiting = self.waiting.unheard(words, params.scope)
            unheard = tuple(word for word in unheard if word in waiting)
        return unheard

    def _baseline(self, params: SearchParams, vector: np.ndarray) -> tuple[float, float] | None:
        """The vault's cosine scale for this query, when the score weighs it or --explain shows
        it: otherwise its sample is never drawn (an engine call) and nothing is computed."""
        if params.explain or relevance.weighs("vault_z", params.mode):
            return self.baseline.stats(vector)
        return None

    def _query_vector(self, params: SearchParams) -> np.ndarray:
        """A question embeds as it is; a long passage as the mean of its windows, so none is cut off."""
        if not params.passage:
            return self.embedder.embed_query(params.query)
        windows = self.embedder.windows("", params.query)
        mean: np.ndarray = np.mean([self.embedder.embed_query(w) for w in windows], axis=0)
        return (mean / (np.linalg.norm(mean) or 1.0)).astype(np.float32)

    def _sections(self, rows: list[Candidate], params: SearchParams) -> list[Candidate]:
        """Windows -> one candidate per section, in the engine's order, as its best-cosine window."""
        sections: dict[SectionKey, Candidate] = {}
        for row in rows:
            if self.catalog.visible_hash(row["file_path"]) != row["file_hash"]:
                continue  # a version being swapped out or in: never mix two versions of a note
            if not params.scope.holds(row["file_path"], row["tags"] or ()):
                continue  # a note added since the dense search's list of notes was drawn
            key = section_key(row)
            if key not in sections or row["cosine"] > sections[key]["cosine"]:
                sections[key] = row
        return list(sections.values())

"""Search: embed the query, ask the store (dense, BM25 or both), score each candidate, keep what passes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, cast

import numpy as np

from mdrag.answers import search as answers
from mdrag.catalog import Catalog
from mdrag.embedding.embedder import Embedder
from mdrag.milvus import NoteScope, PendingKeywords, Store, note_scope
from mdrag.params.search import SearchParams
from mdrag.retrieval import ahead, relevance
from mdrag.retrieval.baseline import VaultBaseline
from mdrag.retrieval.candidate import MODE_LISTS, Candidate, section_key
from mdrag.retrieval.confidence import NO_ANSWER, RELATED_BAND, RELATED_MAX, confidence_level, outcome_of
from mdrag.retrieval.hittext import attach_texts
from mdrag.retrieval.query import keyword_query
from mdrag.retrieval.snippets import snippet

CANDIDATE_FACTOR = 2  # rows asked per wanted hit: windows and swapped versions collapse
CLOSEST = 3  # notes shown when nothing passes the threshold, so an answer is never a bare "nothing"


def source_reference(row: Candidate) -> answers.SourceReference:
    """Where a hit lives: path, lines, heading path and a `path#slug` link an editor can open."""
    path = row["file_path"]
    return {
        "path": path,
        "start_line": row["start_line"],
        "end_line": row["end_line"],
        "heading_path": row["heading_path"],
        "anchor": f"{path}#{row['anchor']}" if row.get("anchor") else path,
    }


@dataclass
class Hit:
    """One section that matched, with where to find it."""

    file_path: str
    section_heading: str
    heading_level: int
    chunk_index: int
    confidence_score: float  # relevance score in [0, 1]: how likely it answers (see relevance.py)
    section_text: str
    snippet: answers.Snippet  # the window that matched: text, lines, the query's words in it
    start_line: int
    end_line: int
    heading_path: str
    source: answers.SourceReference
    metadata: answers.HitMetadata
    explain: answers.Evidence | None = None  # with --explain: dense score and the ranks behind it
    similarity: float | None = None  # raw cosine of the section's best-matching window

    def to_dict(self) -> answers.Hit:
        # Shallow on purpose: every dict in a hit is built for it alone, and asdict's deep copy
        # cost a measurable share of each answer.
        return cast(answers.Hit, {f.name: getattr(self, f.name) for f in fields(self)})


@dataclass
class SearchResponse:
    query: str
    results: list[Hit]
    search_parameters: answers.SearchParameters
    execution_time_ms: float
    confidence: answers.Confidence
    best_candidate_score: float | None = None  # the best score seen, passing or not
    closest: list[answers.ClosestNote] = field(default_factory=list)  # when nothing passes: the nearest notes
    related: list[Hit] = field(default_factory=list)  # when nothing passes: hits close under the bar
    message: str = ""
    explain: answers.SearchExplain | None = None  # with --explain: the candidates the threshold dropped
    query_vector: np.ndarray | None = None  # not part of the answer: kept for the gap log

    def to_dict(self) -> answers.SearchAnswer:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "query_vector"}
        data["results"] = [hit.to_dict() for hit in self.results]
        data["related"] = [hit.to_dict() for hit in self.related]
        return cast(answers.SearchAnswer, data)


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
    ) -> SearchResponse:
        """Answer one query. `indexing`: notes are still being indexed, so a word no indexed note
        holds may be in one not read yet (the reason says "so far"). For the eval:
        `leave_out(file_path)` drops notes before scoring (each query asked again without its
        relevant notes, as if they were not in the index), and `pool` sets the rows asked of each
        list (default: from top_k) to see every candidate a default search scores."""
        started = time.perf_counter()
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
                dense, floor = cast(list[Candidate], nearest.rows), nearest.floor
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
            found = cast(list[Candidate], scored.result())
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
        # After the catalog dropped other versions' rows: only the candidates scored are read.
        attach_texts((row for rows in ranked for row in rows), self.store.window_texts)
        ordered, evidence = _score(
            params,
            lists.get("dense", []),
            lists.get("keyword", []),
            self._baseline(params, vector),
            unheard_words,
        )
        chosen, best, dropped = _pass_threshold(ordered, params)
        marked = "" if params.passage else params.query
        hits = [_hit(c, marked) for c in chosen]
        top = max((hit.confidence_score for hit in hits), default=None)
        level = confidence_level(top, len(hits))
        message = ""
        closest: list[answers.ClosestNote] = []
        related: list[Hit] = []
        reason = ""
        if not hits:
            floor = params.threshold - RELATED_BAND
            close = [c for c in dropped if c["score"] >= floor]
            related = [_hit(c, marked) for c in close[: min(RELATED_MAX, params.top_k)]]
            if best is None and (params.scope.narrows or not evidence.unheard):
                # Nothing to score: a filter that leaves no note says so, rather than blame a word;
                # unfiltered, a word no note holds is why (a keyword search for such words alone).
                message = "nothing matched" + params.scope.words()
            else:
                if evidence.unheard:
                    so_far = " indexed so far" if indexing else ""
                    reason = f"no note{so_far} mentions " + _either(evidence.unheard) + params.scope.words()
                elif evidence.absent:
                    reason = "no note found mentions " + _either(evidence.absent)
                message = reason or f"no section scored {params.threshold:g} or more"
            closest = _closest(ordered)  # also beside related hits: a context pack may keep neither
        if level == "none":
            message = NO_ANSWER + (f": {message}" if message else "")
        explain = None
        if params.explain:
            explain = _explain(hits, chosen, dropped, ordered, ranked, params)
        return SearchResponse(
            query=params.query,
            results=hits,
            search_parameters={
                "top_k": params.top_k,
                "threshold": params.threshold,
                "metric": "IP",  # inner product of unit vectors: the cosine
                "mode": params.mode,
                **params.scope.shown(),
            },
            execution_time_ms=round((time.perf_counter() - started) * 1000, 2),
            best_candidate_score=None if best is None else round(best, 4),
            closest=closest,
            related=related,
            confidence={
                "level": level,
                "best_score": top,
                "hits": len(hits),
                "outcome": outcome_of(len(hits), len(related)),
                "reason": reason,
            },
            message=message,
            explain=explain,
            query_vector=vector,
        )

    def _note_scope(self, params: SearchParams) -> NoteScope | None:
        """The notes a filtered dense search searches among (None: every note). A path alone is
        matched on the catalog's paths (reading 12,352 of them from Milvus took ~120 ms at 5x);
        tags are read from the notes' metadata rows."""
        scope = params.scope
        if not scope.narrows:
            return None
        every = self.catalog.paths()
        if scope.tags:
            within = self.store.paths_within(scope)
        else:
            within = [path for path in every if scope.holds(path)]
        return note_scope(within, every)

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
        sections: dict[tuple[str, str, int], Candidate] = {}
        for row in rows:
            if self.catalog.visible_hash(row["file_path"]) != row["file_hash"]:
                continue  # a version being swapped out or in: never mix two versions of a note
            if not params.scope.holds(row["file_path"], row["tags"] or ()):
                continue  # a note added since the dense search's list of notes was drawn
            key = section_key(row)
            if key not in sections or row["cosine"] > sections[key]["cosine"]:
                sections[key] = row
        return list(sections.values())


def _either(words: Sequence[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _score(
    params: SearchParams,
    dense: list[Candidate],
    keyword: list[Candidate],
    baseline: tuple[float, float] | None,
    unheard: tuple[str, ...] = (),
) -> tuple[list[Candidate], relevance.QueryEvidence]:
    """Every distinct candidate with its relevance `score` and `features`, best first (ties keep
    the dense-then-keyword order the engine gave), and what the pool says of the query."""
    scored = []
    candidates, pool = relevance.score_candidates(
        params.query,
        dense,
        keyword,
        section_key,
        baseline,
        keyword_searched=params.mode != "dense",
        unheard=unheard,
    )
    for (row, values), score in zip(
        candidates, relevance.scores([values for _, values in candidates], params.mode), strict=True
    ):
        row["score"] = score
        row["features"] = values
        scored.append(row)
    scored.sort(key=lambda row: -row["score"])
    return scored, pool


def _pass_threshold(
    ordered: list[Candidate], params: SearchParams
) -> tuple[list[Candidate], float | None, list[Candidate]]:
    """The first top_k candidates whose score passes the threshold, the best score seen,
    and the candidates looked at that the threshold dropped."""
    chosen: list[Candidate] = []
    dropped: list[Candidate] = []
    best: float | None = None
    for candidate in ordered:
        if len(chosen) >= params.top_k or len(chosen) + len(dropped) >= max(params.top_k, 10):
            break
        best = candidate["score"] if best is None else max(best, candidate["score"])
        if candidate["score"] < params.threshold:
            dropped.append(candidate)
        else:
            chosen.append(candidate)
    return chosen, best, dropped


def _closest(ordered: list[Candidate]) -> list[answers.ClosestNote]:
    """The best-scored section of each of the first few notes, for an answer that kept nothing."""
    closest: list[answers.ClosestNote] = []
    seen: set[str] = set()
    for row in ordered:
        if row["file_path"] in seen:
            continue
        seen.add(row["file_path"])
        closest.append(
            {
                "path": row["file_path"],
                "heading_path": row["heading_path"],
                "score": round(row["score"], 4),
                "similarity": round(row["cosine"], 4),
                "source": source_reference(row),
            }
        )
        if len(closest) >= CLOSEST:
            break
    return closest


def _explain(
    hits: list[Hit],
    chosen: list[Candidate],
    dropped: list[Candidate],
    ordered: list[Candidate],
    ranked: list[list[Candidate]],
    params: SearchParams,
) -> answers.SearchExplain:
    """Per hit: its similarity, score, the evidence behind it and its ranks; and what the threshold cut."""
    fused_rank = {section_key(c): rank for rank, c in enumerate(ordered, start=1)}
    lists = dict(zip(MODE_LISTS[params.mode], ranked, strict=False))
    ranks = {
        name: {section_key(c): rank for rank, c in enumerate(rows, start=1)} for name, rows in lists.items()
    }
    by_id = {c["id"]: c for c in chosen}

    def ranks_of(candidate: Candidate) -> answers.Evidence:
        key = section_key(candidate)
        return {
            "similarity": None if candidate["cosine"] is None else round(candidate["cosine"], 4),
            "score": round(candidate["score"], 4),
            "evidence": dict(
                zip(relevance.FEATURES, (round(v, 4) for v in candidate["features"]), strict=True)
            ),
            "dense_rank": ranks.get("dense", {}).get(key),
            "keyword_rank": ranks.get("keyword", {}).get(key),
            "score_rank": fused_rank.get(key),
        }

    for hit in hits:
        candidate = by_id.get(hit.metadata["row_id"])
        if candidate is not None:
            hit.explain = ranks_of(candidate)
    return {
        "mode": params.mode,
        "threshold": params.threshold,
        "candidates": len(ordered),
        "dropped_by_threshold": [
            {"file_path": c["file_path"], "section_id": c["section_id"], **ranks_of(c)} for c in dropped
        ],
    }


def _hit(row: Candidate, query: str = "") -> Hit:
    """A candidate row (display fields and its `cosine`) as the hit a response shows; its snippet
    marks the query's words (none for a passage: every word of it would be marked)."""
    return Hit(
        file_path=row["file_path"],
        section_heading=row["section_heading"],
        heading_level=row["heading_level"],
        chunk_index=row["chunk_index"],
        confidence_score=round(row["score"], 4),
        similarity=round(row["cosine"], 4),
        section_text=row["section_text"],
        snippet=snippet(row, query),
        start_line=row["start_line"],
        end_line=row["end_line"],
        heading_path=row["heading_path"],
        source=source_reference(row),
        metadata={
            "title": row["title"],
            "tags": list(row["tags"] or []),
            "section_type": row["section_type"],
            "token_count": row["token_count"],
            "start_position": row["start_position"],
            "end_position": row["end_position"],
            "section_id": row["section_id"],
            "row_id": row["id"],
            "waiting": bool(row.get("pending")),
        },
    )

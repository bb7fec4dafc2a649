"""Search: embed the query, ask the store (dense, BM25 or both fused), keep what passes the threshold."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from mdrag.catalog import Catalog
from mdrag.embedder import Embedder
from mdrag.protocol import SearchParams
from mdrag.store import Store, quote

RRF_K = 60  # the usual reciprocal-rank-fusion constant; rank 1 scores 1/61
CANDIDATE_FACTOR = 4  # rows asked per wanted hit: windows and swapped versions collapse


@dataclass
class Hit:
    """One section that matched, with where to find it."""

    file_path: str
    section_heading: str
    heading_level: int
    chunk_index: int
    confidence_score: float  # cosine similarity of the section's best-matching window
    section_text: str
    start_line: int
    end_line: int
    heading_path: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResponse:
    query: str
    results: list[Hit]
    search_parameters: dict[str, Any]
    execution_time_ms: float
    best_candidate_score: float | None = None  # the best score seen, passing or not
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["results"] = [hit.to_dict() for hit in self.results]
        return data


class Searcher:
    """Answers similarity queries over the index; safe to call from many threads."""

    def __init__(self, embedder: Embedder, store: Store, catalog: Catalog) -> None:
        self.embedder = embedder
        self.store = store
        self.catalog = catalog

    def search(self, params: SearchParams) -> SearchResponse:
        started = time.perf_counter()
        vector = self.embedder.embed_query(params.query)
        limit = min(16384, max(params.top_k * CANDIDATE_FACTOR, 40))
        expr = _filter(params)
        ranked: list[list[dict[str, Any]]] = []
        if params.mode in ("dense", "hybrid"):
            ranked.append(self._sections(self.store.search_dense(vector, limit, expr), params, vector))
        # BM25 over an empty collection is an engine error, not an empty answer.
        if params.mode in ("keyword", "hybrid") and self.catalog.has_sections():
            ranked.append(
                self._sections(self.store.search_keyword(params.query, limit, expr), params, vector)
            )
        fused = _fuse(ranked) if len(ranked) > 1 else ranked[0]
        best = max((row["cosine"] for row in fused), default=None)
        hits = [_hit(row) for row in fused if row["cosine"] >= params.threshold][: params.top_k]
        message = ""
        if not hits:
            message = f"no section scored at or above the threshold {params.threshold:.2f}" + (
                f"; the best candidate scored {best:.3f}"
                if best is not None
                else "; the index has no candidates"
            )
        return SearchResponse(
            query=params.query,
            results=hits,
            search_parameters={
                "top_k": params.top_k,
                "threshold": params.threshold,
                "metric": "COSINE",
                "mode": params.mode,
                "tags": list(params.tags),
                "path_prefix": params.path_prefix,
            },
            execution_time_ms=round((time.perf_counter() - started) * 1000, 2),
            best_candidate_score=None if best is None else round(best, 4),
            message=message,
        )

    def _sections(
        self, rows: list[dict[str, Any]], params: SearchParams, query: np.ndarray
    ) -> list[dict[str, Any]]:
        """Rows -> one entry per section, in the engine's order, scored by its best window's cosine."""
        sections: dict[tuple[str, str, int], dict[str, Any]] = {}
        for row in rows:
            if self.catalog.visible_hash(row["file_path"]) != row["file_hash"]:
                continue  # a version being swapped out or in: never mix two versions of a note
            if params.path_prefix and not row["file_path"].startswith(params.path_prefix):
                continue
            cosine = float(np.dot(query, row.pop("embedding"))) if "embedding" in row else row["distance"]
            key = (row["file_path"], row["section_id"], row["start_position"])
            if key in sections:
                sections[key]["cosine"] = max(sections[key]["cosine"], cosine)
            else:
                row["cosine"] = cosine
                sections[key] = row
        return list(sections.values())


def _fuse(lists: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Reciprocal rank fusion: order by the sum of 1/(k + rank) over the lists a section is in."""
    fused: dict[tuple[str, str, int], tuple[float, dict[str, Any]]] = {}
    for ranked in lists:
        for rank, row in enumerate(ranked, start=1):
            key = (row["file_path"], row["section_id"], row["start_position"])
            score, kept = fused.get(key, (0.0, row))
            kept["cosine"] = max(kept["cosine"], row["cosine"])
            fused[key] = (score + 1.0 / (RRF_K + rank), kept)
    return [row for _, row in sorted(fused.values(), key=lambda item: -item[0])]


def _filter(params: SearchParams) -> str:
    clauses = []
    if params.tags:
        clauses.append(f"array_contains_any(tags, [{', '.join(quote(t) for t in params.tags)}])")
    if (
        params.path_prefix
        and params.path_prefix.isprintable()
        and not any(c in params.path_prefix for c in "%_")
    ):
        # LIKE narrows the candidates in the engine (its wildcards would widen the match,
        # so prefixes holding them skip it); the exact prefix test runs on the rows.
        clauses.append(f"file_path like {quote(params.path_prefix + '%')}")
    return " and ".join(clauses)


def _hit(row: dict[str, Any]) -> Hit:
    return Hit(
        file_path=row["file_path"],
        section_heading=row["section_heading"],
        heading_level=row["heading_level"],
        chunk_index=row["chunk_index"],
        confidence_score=round(row["cosine"], 4),
        section_text=row["section_text"],
        start_line=row["start_line"],
        end_line=row["end_line"],
        heading_path=row["heading_path"],
        metadata={
            "title": row["title"],
            "tags": list(row["tags"] or []),
            "section_type": row["section_type"],
            "token_count": row["token_count"],
            "start_position": row["start_position"],
            "end_position": row["end_position"],
            "section_id": row["section_id"],
        },
    )

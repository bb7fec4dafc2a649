"""Similarity: the notes most like a note or a draft, and near-duplicate pairs, scored 0-100.

Document vectors (the mean of a note's windows) find the candidates; section matches
confirm them: the score is how well each note's windows are matched by the other's, both
ways, so a copy scores near 100 and a note that merely shares a topic does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from loguru import logger

from mdrag.answers.notes import DuplicateGroup, DuplicatePair, SimilarNote
from mdrag.catalog import Catalog
from mdrag.embedding.embedder import Embedder
from mdrag.errors import NotFoundError, QueryError
from mdrag.milvus import Store
from mdrag.notes.document import parse_document
from mdrag.notes.pathtext import to_fs, to_text
from mdrag.notes.sections import Sectioner, embedding_inputs

# What a score means to a reader, and the floor under which a note is not listed as a neighbour.
# Measured with all-MiniLM-L6-v2 (the README gives the figures): notes that link to each other
# almost all score 40 or more, notes on unrelated topics mostly less (their windows still share
# common words), and pairs on unrelated topics stayed under 70, where "closely related" begins.
TIERS = ((90, "near-duplicate"), (70, "closely related"), (0, "related"))
SIMILAR_FLOOR = 40
CANDIDATES_PER_RESULT = 4  # document-vector neighbours confirmed per note wanted
PREFILTER_MARGIN = 0.10  # a pair whose document cosine is this far under the bar is not checked
PAIR_BATCH = 400  # pairs whose notes' windows are loaded at once during the duplicate scan
MAX_CANDIDATE_PAIRS = 200_000  # bounds the scan's memory whatever the corpus and the bar
ROW_BLOCK = 256  # document-vector rows compared at once: a block x n float32 matrix


def tier(score: int) -> str:
    return next(name for lowest, name in TIERS if score >= lowest)


def duplicate_groups(pairs: list[DuplicatePair]) -> list[DuplicateGroup]:
    """The notes joined by the pairs, each group once: a folder of 365 near-identical stubs is
    one group of 365 notes, not 66,000 pairs to read. Best pair first, then the larger group."""
    parent: dict[str, str] = {}

    def root(path: str) -> str:
        while parent.setdefault(path, path) != path:
            parent[path] = parent[parent[path]]  # halve the way up for the next look
            path = parent[path]
        return path

    for pair in pairs:
        parent[root(pair["a"])] = root(pair["b"])
    groups: dict[str, _Group] = {}
    for pair in pairs:
        group = groups.setdefault(root(pair["a"]), _Group())
        group.notes |= {pair["a"], pair["b"]}
        group.best_score = max(group.best_score, pair["score"])
        group.pairs += 1
    ordered: list[DuplicateGroup] = [
        {"notes": sorted(g.notes), "best_score": g.best_score, "pairs": g.pairs} for g in groups.values()
    ]
    return sorted(ordered, key=lambda g: (-g["best_score"], -len(g["notes"]), g["notes"][0]))


@dataclass
class _Group:
    """A duplicate group while the pairs are read: its notes as a set."""

    notes: set[str] = field(default_factory=set)
    best_score: int = 0
    pairs: int = 0


def match_score(a: np.ndarray, b: np.ndarray) -> float:
    """0-100: the mean best cosine of each window of one note against the other's, both ways."""
    if not len(a) or not len(b):
        return 0.0
    cosines = np.clip(a @ b.T, 0.0, 1.0)
    return float(50.0 * (cosines.max(axis=1).mean() + cosines.max(axis=0).mean()))


@dataclass
class NoteVectors:
    """A note (or a draft) as its document vector and the vectors of its windows."""

    path: str | None
    doc: np.ndarray
    windows: np.ndarray


class Similarity:
    """Similar notes and duplicate pairs over the indexed notes; reads only."""

    def __init__(self, store: Store, catalog: Catalog, embedder: Embedder, sectioner: Sectioner) -> None:
        self.store = store
        self.catalog = catalog
        self.embedder = embedder
        self.sectioner = sectioner

    # ---- what to compare ---------------------------------------------------------------------

    def of_note(self, path: str) -> NoteVectors:
        if self.catalog.get(path) is None:  # a path as typed, not as the index stores it
            path = to_text(Path(to_fs(path)).expanduser().resolve())
        visible = self.catalog.visible_hash(path)
        if visible is None:
            raise NotFoundError(f"{path} is not an indexed note")
        windows = self._windows([path]).get(path)
        if windows is None or not len(windows):
            raise NotFoundError(f"{path} has no text to compare")
        return NoteVectors(path, _unit(windows.mean(axis=0)), windows)

    def of_text(self, text: str) -> NoteVectors:
        """A draft, sectioned and embedded as indexing would, but never stored."""
        document = parse_document("draft", text.encode("utf-8", "surrogateescape"))
        _, _, inputs = embedding_inputs(self.sectioner, document)
        texts = [w for prefix, body in inputs for w in self.embedder.windows(prefix, body)]
        if not texts:
            raise QueryError("the draft has no text to compare")
        windows = self.embedder.embed_for_request(texts)  # a request: ahead of indexing, not behind
        return NoteVectors(None, _unit(windows.mean(axis=0)), windows)

    # ---- operations --------------------------------------------------------------------------

    def similar(self, target: NoteVectors, k: int = 10, min_score: int = SIMILAR_FLOOR) -> list[SimilarNote]:
        """The k notes most like `target` scoring at least `min_score`, best first, with score and tier."""
        neighbours = self.store.search_doc_vectors(target.doc, k * CANDIDATES_PER_RESULT + 1)
        candidates = {
            n["file_path"]: n["distance"]
            for n in neighbours
            if n["file_path"] != target.path and self.catalog.visible_hash(n["file_path"]) == n["file_hash"]
        }
        windows = self._windows(list(candidates))
        results = []
        for path, doc_cosine in candidates.items():
            if path not in windows:
                continue
            score = round(match_score(target.windows, windows[path]))
            if score >= min_score:
                results.append(_result(path, score, doc_cosine))
        results.sort(key=lambda r: (-r["score"], -r["doc_cosine"], r["path"]))
        return results[:k]

    def duplicates(self, min_score: int = 90) -> tuple[list[DuplicatePair], bool]:
        """Every pair of notes scoring at least `min_score`, each pair once, best first, and
        whether the scan covered every candidate pair."""
        paths, docs = [], []
        for row in self.store.doc_vectors():
            record = self.catalog.get(row["file_path"])
            if (
                record
                and record.section_count
                and self.catalog.visible_hash(row["file_path"]) == row["file_hash"]
            ):
                paths.append(row["file_path"])
                docs.append(row["doc_vector"])
        if len(paths) < 2:
            return [], True
        candidates = _close_pairs(np.asarray(docs, dtype=np.float32), min_score / 100 - PREFILTER_MARGIN)
        if len(candidates) >= MAX_CANDIDATE_PAIRS:
            logger.warning(
                "duplicates: stopped at {} candidate pairs; raise --min-score", MAX_CANDIDATE_PAIRS
            )
        pairs: list[DuplicatePair] = []
        # Load windows a slice of pairs at a time: the whole index's vectors need not fit at once.
        for start in range(0, len(candidates), PAIR_BATCH):
            batch = candidates[start : start + PAIR_BATCH]
            windows = self._windows(sorted({paths[i] for i, _, _ in batch} | {paths[j] for _, j, _ in batch}))
            for i, j, doc_cosine in batch:
                a, b = windows.get(paths[i]), windows.get(paths[j])
                if a is None or b is None:
                    continue
                score = round(match_score(a, b))
                if score >= min_score:
                    first, second = sorted((paths[i], paths[j]))  # a pair reads the same on every run
                    pairs.append(
                        {
                            "a": first,
                            "b": second,
                            "score": score,
                            "tier": tier(score),
                            "doc_cosine": round(doc_cosine, 4),
                        }
                    )
        pairs.sort(key=lambda p: (-p["score"], -p["doc_cosine"], p["a"], p["b"]))
        return pairs, len(candidates) < MAX_CANDIDATE_PAIRS

    def _windows(self, paths: list[str]) -> dict[str, np.ndarray]:
        """The current version's window vectors of each path (older versions being swapped out skipped)."""
        found = self.store.section_vectors(paths)
        return {
            path: vectors
            for (path, file_hash), vectors in found.items()
            if self.catalog.visible_hash(path) == file_hash
        }


def _close_pairs(docs: np.ndarray, bar: float) -> list[tuple[int, int, float]]:
    """(i, j, cosine) for i < j whose document vectors are at least `bar` alike, at most
    MAX_CANDIDATE_PAIRS of them; each block of rows is compared with the rows after it only."""
    pairs: list[tuple[int, int, float]] = []
    for start in range(0, len(docs), ROW_BLOCK):
        cosines = docs[start : start + ROW_BLOCK] @ docs[start:].T
        rows, cols = np.nonzero(np.triu(cosines >= bar, k=1))
        take = min(len(rows), MAX_CANDIDATE_PAIRS - len(pairs))
        values = cosines[rows[:take], cols[:take]]
        pairs.extend(
            zip((rows[:take] + start).tolist(), (cols[:take] + start).tolist(), values.tolist(), strict=True)
        )
        if len(pairs) >= MAX_CANDIDATE_PAIRS:
            break
    return pairs


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / (np.linalg.norm(vector) or 1.0)).astype(np.float32)


def _result(path: str, score: int, doc_cosine: float) -> SimilarNote:
    return {"path": path, "score": score, "tier": tier(score), "doc_cosine": round(float(doc_cosine), 4)}

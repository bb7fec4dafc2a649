"""Fakes for fast tests of logic: a deterministic embedding runner under the real tokenizer, and an
in-memory store with the indexer's side of the Store's methods."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from mdrag.embedding.embedder import Embedder

DIMENSION = 384


class HashingRunner:
    """Bag-of-words vectors from hashed words: deterministic, instant, and texts that share words
    come out closer than texts that do not. Not a judge of relevance; the real model is."""

    def __init__(self, dimension: int = DIMENSION) -> None:
        self.dimension = dimension
        self.texts_encoded = 0

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()) or [""]:
                digest = hashlib.blake2b(word.encode("utf-8", "surrogateescape"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dimension
                vectors[row, bucket] += 1.0 if digest[4] & 1 else -1.0
            norm = np.linalg.norm(vectors[row])
            if norm == 0:
                vectors[row, 0], norm = 1.0, 1.0
            vectors[row] /= norm
        self.texts_encoded += len(texts)
        return vectors


def fake_embedder(batch_size: int = 64, runner: Any = None) -> Embedder:
    """The bundled model's tokenizer (token counts and windows are true) with HashingRunner vectors
    (or `runner`'s)."""
    return Embedder(batch_size=batch_size, runner=runner or HashingRunner())


class MemoryStore:
    """The Store methods the indexer calls, on dicts: vector rows by id, metadata rows by path."""

    def __init__(self, dimension: int = DIMENSION) -> None:
        self.dimension = dimension
        self.vectors: dict[str, dict[str, Any]] = {}
        self.metadata: dict[str, dict[str, Any]] = {}
        self.section_lookups = self.row_lookups = 0  # how the indexer found stored vectors
        self.rebuilt_from_older = False  # never an upgrade's: Store's attribute

    def insert_vectors(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            assert row["id"] not in self.vectors, f"duplicate vector row {row['id']}"
            self.vectors[row["id"]] = dict(row)

    def upsert_vectors(self, rows: list[dict[str, Any]]) -> None:
        self.vectors.update({row["id"]: dict(row) for row in rows})

    def upsert_metadata(self, rows: list[dict[str, Any]]) -> None:
        self.metadata.update({row["file_path"]: dict(row) for row in rows})

    def delete_metadata(self, paths: list[str]) -> None:
        for path in paths:
            self.metadata.pop(path, None)

    def delete_vectors(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.vectors.pop(row["id"], None)

    def delete_vectors_of_paths(self, paths: list[str]) -> None:
        gone = set(paths)
        self.vectors = {key: row for key, row in self.vectors.items() if row["file_path"] not in gone}

    def keyword_gaps(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return []  # each row here keeps what its hit shows, as the keyword index does

    def notes_lacking_keywords(self, paths: list[str]) -> set[str]:
        return set()

    def keywords_complete(self) -> None:
        pass

    def iter_vector_keys(self) -> Iterator[dict[str, Any]]:
        for row in list(self.vectors.values()):
            yield {key: row[key] for key in ("id", "doc_id", "file_path", "file_hash")}

    def vector_keys_for_paths(self, paths: list[str]) -> list[dict[str, Any]]:
        wanted = set(paths)
        return [key for key in self.iter_vector_keys() if key["file_path"] in wanted]

    def vectors_for_sections(self, section_ids: list[str]) -> dict[tuple[str, int], Any]:
        self.section_lookups += 1
        wanted = set(section_ids)
        return {
            (row["section_id"], int(row["window_index"])): row["embedding"]
            for row in self.vectors.values()
            if row["section_id"] in wanted
        }

    def vectors_of_rows(self, rows: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
        self.row_lookups += 1
        return {row_id: self.vectors[row_id]["embedding"] for _, row_id in rows if row_id in self.vectors}

    def count_vectors(self) -> int:
        return len(self.vectors)

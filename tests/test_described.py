"""Described: a candidate's description evidence is its note's description cosine, or 0."""

from __future__ import annotations

import numpy as np
import pytest

from mdrag.retrieval.described import attach_descriptions


def test_each_candidate_gets_its_notes_description_cosine_read_once_for_all():
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    asked: list[list[str]] = []

    def read(paths):
        asked.append(list(paths))
        return {
            "/n/about.md": np.array([0.6, 0.8, 0.0], dtype=np.float32),
            "/n/other-model.md": np.ones(5, dtype=np.float32),  # a vector of another size
        }

    rows = [{"file_path": p} for p in ("/n/about.md", "/n/about.md", "/n/bare.md", "/n/other-model.md")]
    attach_descriptions(rows, query, read)
    assert [row["description"] for row in rows] == pytest.approx([0.6, 0.6, 0.0, 0.0])
    assert asked == [["/n/about.md", "/n/bare.md", "/n/other-model.md"]]  # one lookup, each note once

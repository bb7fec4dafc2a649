"""bench.prefilter's arithmetic: the share of the exact top k that a Hamming top N keeps."""

from __future__ import annotations

import numpy as np

from bench import prefilter


def test_a_hamming_top_n_as_large_as_the_collection_keeps_all_and_a_small_one_what_it_covers(monkeypatch):
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    monkeypatch.setattr(prefilter, "EXACT", (1, 10))
    monkeypatch.setattr(prefilter, "CANDIDATES", (1, 50))
    # A query equal to a row: that row is its exact best and at Hamming distance 0, first of all.
    kept = prefilter.kept(vectors, vectors[:5].copy())
    assert kept["50"] == {"top1": 1.0, "top10": 1.0}
    assert kept["1"]["top1"] == 1.0 and kept["1"]["top10"] == 0.1


def test_the_table_has_a_row_per_candidate_count():
    result = {
        "rows": 70688,
        "queries": 400,
        "kept": {"200": {"top1": 0.995, "top10": 0.9927, "top30": 0.9673}},
        "ms": {"exact_top30": 15.89, "hamming_top200_ids": 2.43, "hamming_top200_with_floats": 4.02},
    }
    table = prefilter.table(result)
    assert "70,688 vector rows" in table and "15.89 ms" in table
    assert "| 200 | 0.995 | 0.993 | 0.967 | 2.43 | 4.02 |" in table

"""The evaluation's scoring, checked against values computed by hand."""

from __future__ import annotations

import math

import pytest

from bench.metrics import best_f1_threshold, mrr_at_k, ndcg_at_k, percentile, recall_at_k


def test_ndcg_at_10_matches_a_hand_computed_example():
    # Relevant d1 and d3; ranked d2, d1, d4, d3: DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3).
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["d2", "d1", "d4", "d3"], {"d1": 1, "d3": 1}) == pytest.approx(expected)
    assert expected == pytest.approx(0.6509209298)


def test_ndcg_is_one_for_a_perfect_ranking_and_zero_without_hits():
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1}) == 1.0
    assert ndcg_at_k(["x", "y"], {"a": 1}) == 0.0


def test_recall_at_k_counts_relevant_documents_within_the_cutoff():
    assert recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=3) == pytest.approx(2 / 3)


def test_mrr_at_10_is_the_reciprocal_rank_of_the_first_relevant_document():
    assert mrr_at_k(["x", "y", "a"], {"a": 1}) == pytest.approx(1 / 3)
    assert mrr_at_k(["x"] * 10 + ["a"], {"a": 1}) == 0.0


def test_percentile_interpolates_like_numpy():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10, 20, 30, 40, 50], 95) == pytest.approx(48.0)


def test_best_f1_threshold_finds_the_cut_between_relevant_and_not():
    scored = [(0.9, True), (0.8, True), (0.6, False), (0.5, False)]
    threshold, f1 = best_f1_threshold(scored, total_relevant=2)
    assert f1 == 1.0 and 0.6 < threshold <= 0.8

"""bench.decision: the held-out query-level decision and its rates, on small synthetic dumps."""

from __future__ import annotations

from bench.decision import held_out
from mdrag.retrieval import relevance


def _row(q: str, version: str, cosine: float, relevant: bool) -> dict:
    values = [cosine] + [0.0] * (len(relevance.FEATURES) - 1)
    return {"q": q, "mode": "dense", "version": version, "cands": [["d", int(relevant), values]]}


def test_evidence_that_separates_the_queries_answers_and_silences_every_one_held_out() -> None:
    rows = [_row(f"a{i}", "answerable", 0.9 + i * 0.005, True) for i in range(8)]
    rows += [_row(f"u{i}", "unanswerable", 0.1 + i * 0.005, False) for i in range(8)]
    measured = held_out(rows, "dense")
    assert measured["queries"] == 16 and measured["answerable"] == 8
    assert measured["curve"][0.5] == {"answered": 1.0, "silent": 1.0}


def test_a_yes_without_a_relevant_hit_is_not_an_answer_and_no_candidate_is_silence() -> None:
    rows = [_row(f"a{i}", "answerable", 0.9, relevant=i % 2 == 0) for i in range(8)]
    rows += [_row(f"u{i}", "unanswerable", 0.1, False) for i in range(7)]
    rows.append({"q": "empty", "mode": "dense", "version": "unanswerable", "cands": []})
    measured = held_out(rows, "dense")
    assert measured["found_in_top"] == 0.5
    assert measured["curve"][0.5] == {"answered": 0.5, "silent": 1.0}

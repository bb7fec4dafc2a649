"""bench.orderfit's figures by kind of query: each vault's questions ranked by its own held-out order."""

import numpy as np

from bench import orderfit, report_quality
from mdrag.retrieval import relevance

WIDTH = len(relevance.FEATURES)


def _question(vault: str, qid: str, right_cosine: float, wrong_cosine: float) -> orderfit.Question:
    """Two candidates that differ in their cosine alone; the first is the right note."""
    right, wrong = [0.0] * WIDTH, [0.0] * WIDTH
    right[0], wrong[0] = right_cosine, wrong_cosine
    row = {
        "set": vault,
        "split": "test",
        "q": qid,
        "cands": [["right.md", 1, right], ["wrong.md", 0, wrong]],
    }
    return orderfit.Question(row)


def test_each_vault_is_ranked_by_its_own_held_out_order_and_split_by_the_kind_of_query(monkeypatch):
    written = {
        "a": {"a1": {"form": "keyword"}, "a2": {}},  # a question written without a kind is natural
        "b": {"b1": {"form": "keyword"}},
    }
    monkeypatch.setattr(orderfit, "vault_queries", lambda vault: written[vault])
    asked = [
        _question("a", "a1", 0.9, 0.1),
        _question("a", "a2", 0.1, 0.9),
        _question("b", "b1", 0.1, 0.9),
    ]
    rising, falling = np.zeros(WIDTH), np.zeros(WIDTH)
    rising[0], falling[0] = 1.0, -1.0
    # Vault a's order puts the higher cosine first; vault b's the lower one.
    found = orderfit.forms(asked, {"a": rising, "b": falling})

    assert found["a"]["keyword"]["right_first"]["rate"] == 1.0
    assert found["a"]["natural"]["right_first"]["rate"] == 0.0
    assert found["b"]["keyword"]["right_first"]["rate"] == 1.0
    assert found["every vault"]["keyword"]["right_first"] | {"ci95": None} == {
        "rate": 1.0,
        "of": 2,
        "ci95": None,
    }
    assert list(found) == ["a", "b", "every vault"]
    table = "\n".join(report_quality._form_rows(found))
    assert "| a | 0.00 / 1.00 (1) | 1.00 / 1.00 (1) | – |" in table
    assert "| every vault | 0.00 / 1.00 (1) | 1.00 / 1.00 (2) | – |" in table

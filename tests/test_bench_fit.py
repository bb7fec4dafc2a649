"""bench.fit's logistic fit: the exact bounded minimum, the same constants from the same rows."""

import numpy as np

from bench.fit import fit_weights


def _rows(seed: int = 0, n: int = 400) -> list[dict]:
    """One candidate per row: a label drawn from a known logistic of three features (the third
    pulls the label down, so its weight must stop at the bound 0)."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.uniform(0.2, 0.9, n), rng.integers(0, 2, n), rng.uniform(0, 1, n)])
    z = -6.0 + 10.0 * x[:, 0] + 1.5 * x[:, 1] - 2.0 * x[:, 2]
    y = rng.uniform(size=n) < 1 / (1 + np.exp(-z))
    return [{"cands": [["d", int(label), list(values)]]} for values, label in zip(x, y, strict=True)]


def _loss(rows: list[dict], bias: float, coef: np.ndarray) -> float:
    x = np.asarray([r["cands"][0][2] for r in rows])
    y = np.asarray([r["cands"][0][1] for r in rows], dtype=float)
    z = bias + x @ coef
    return float(np.mean(np.logaddexp(0, z) - y * z))


def test_the_fit_finds_the_bounded_minimum_and_recovers_the_slopes():
    rows = _rows()
    bias, coef = fit_weights(rows, l2=0.0)
    assert coef[2] == 0.0  # a weight that would be negative stops at 0
    assert 7.0 < coef[0] < 13.0 and 0.8 < coef[1] < 2.5
    # No step along a free weight (or the bias) lowers the loss: it is the minimum, not a stop
    # short of it.
    base = _loss(rows, bias, coef)
    for i in range(2):
        for step in (-1e-3, 1e-3):
            moved = coef.copy()
            moved[i] += step
            assert _loss(rows, bias, moved) >= base - 1e-9
    assert _loss(rows, bias + 1e-3, coef) >= base - 1e-9 and _loss(rows, bias - 1e-3, coef) >= base - 1e-9


def test_the_same_rows_always_give_the_same_constants():
    rows = _rows(seed=1)
    first, again = fit_weights(rows), fit_weights(list(rows))
    assert first[0] == again[0] and np.array_equal(first[1], again[1])


def test_a_feature_the_same_for_every_row_gets_no_weight():
    rows = [{"cands": [[d, label, [*values, 1.0]] for d, label, values in r["cands"]]} for r in _rows(seed=2)]
    _, coef = fit_weights(rows)
    assert coef[-1] == 0.0

"""Fit the relevance score on the vaults' questions (train split), report it on the sealed split.

    python -m bench.vaultfit DUMP.jsonl ... [--modes hybrid] [--out bench/results/vaults.json]

Each DUMP is a `python -m bench.fit dump --set VAULT` (every candidate's evidence, each row
carrying its question's split). The ways to score, each fitted on the `train` questions only and
reported on train (held out by 5 folds where something is fitted), on the sealed split (`test`:
all of otel, a quarter of the others), on the unseen vault (hugo) and on bench/data/natural
(another writer's questions over other notes, when its dump is given), with Wilson 95% intervals:
- `scifact`: the order's constants alone (relevance.ORDER; named for where the order was first fitted);
- `words`: those with a weight for a query that names something no candidate holds, one for a
  query with a word no note holds, and a shift of the bias, the smallest that reach the best
  balanced rate on train (a grid): what mdrag shipped before its answer decision;
- `refit`: every weight refitted per candidate (relevant or not), as bench.fit does on SciFact;
- `decision`: a query-level logistic over the best hit's evidence (label: the question is
  answerable and a right note is in the first DEPTH), each other hit lowered by its order
  logit gap to the best, so the order stays relevance.ORDER's; `small decision`, the same over
  DECISION_SMALL, is what mdrag ships (relevance.DECISION: its constants are printed here);
- `shipped`: the scores mdrag gives (relevance.scores), fitting nothing: the small decision with
  the constants mdrag holds.
Weights stay >= 0 (more evidence never lowers a score); the decisions' bias places 0.7 where
the lower of the margins of answered and silent over GOAL is highest on train, the other ways'
where the two balance.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.answerability import DEPTH
from bench.fit import anchor, fit_weights, load, paired, scores_of
from bench.metrics import ndcg_at_k, wilson
from mdrag.retrieval import relevance
from mdrag.retrieval.confidence import (
    ANSWER,
    CONFIDENCE_LEVELS,
    RELATED,
    RELATED_BAND,
    confidence_level,
    outcome_of,
)

THRESHOLD = 0.7
# Where the answer decision puts THRESHOLD: on the training questions, where the lower of the two
# margins over these is highest (#57's goal at the default: 0.65 answered, 0.80 silent). A
# confident answer to a question the notes cannot answer misleads a person and an assistant more
# than a right page shown as "possibly related" under the threshold.
GOAL = (0.65, 0.80)
UNSEEN = "hugo"
# Questions written by another hand over other notes (bench/data/natural), never fitted on: a
# decision that only fits the vaults' writers shows here.
OTHER_WRITER = {"natural"}


def figures(
    rows: Sequence[dict[str, Any]], constants: Any, related: float = 0.5, threshold: float = THRESHOLD
) -> dict[str, Any]:
    """Rates at the threshold (the default's unless named) over these rows, each with its count and
    95% interval.

    `constants(row)` gives the (bias, coef) that scores each of a row's candidates alone, or a
    function that scores a row's candidates together (a list of scores). Per question: its
    candidates in score order; a right note kept (>= threshold, within DEPTH) answers; nothing
    kept is silent; the first distinct notes at threshold 0 give "right first" and "right in 3";
    `related` is the floor of the "possibly related" band under the threshold.
    """
    counts = {k: [0, 0] for k in ("answered", "silent", "right_first", "right_in_3", "related_or_better")}
    ndcg = []
    for row in rows:
        scored = sorted(_scored(row, constants(row)), key=lambda t: -t[2])[:DEPTH]
        if row["version"] == "answerable":
            notes: list[tuple[str, int]] = []
            for doc, label, _ in scored:
                if all(doc != d for d, _ in notes):
                    notes.append((doc, label))
            hit = any(label and score >= threshold for _, label, score in scored)
            _count(counts["answered"], hit)
            _count(counts["right_first"], bool(notes) and bool(notes[0][1]))
            _count(counts["right_in_3"], any(label for _, label in notes[:3]))
            _count(counts["related_or_better"], any(label and score >= related for _, label, score in scored))
            ndcg.append(ndcg_at_k([d for d, _ in notes], {d: 1 for d, lab in notes if lab}, 10))
        else:
            _count(counts["silent"], not any(score >= threshold for _, _, score in scored))
    out: dict[str, Any] = {
        key: {"rate": round(k / n, 4) if n else None, "of": n, "ci95": wilson(k, n)}
        for key, (k, n) in counts.items()
    }
    out["ndcg@10_of_candidates"] = round(float(np.mean(ndcg)), 4) if ndcg else None
    return out


def _scored(row: dict[str, Any], scorer: Any) -> list[tuple[str, int, float]]:
    if callable(scorer):
        return paired(row, scorer(row))
    bias, coef = scorer
    return scores_of(row, bias, coef)


def _count(cell: list[int], ok: bool) -> None:
    cell[0] += int(ok)
    cell[1] += 1


def _split(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {
        "train": [r for r in rows if r["split"] == "train" and r["set"] not in OTHER_WRITER],
        "sealed": [
            r for r in rows if r["split"] == "test" and r["set"] != UNSEEN and r["set"] not in OTHER_WRITER
        ],
        "unseen": [r for r in rows if r["set"] == UNSEEN],
        "natural": [r for r in rows if r["set"] in OTHER_WRITER],
    }


def _folds(train: Sequence[dict[str, Any]], folds: int = 5) -> list[set[tuple[str, str]]]:
    questions = sorted({(r["set"], r["q"]) for r in train})
    order = [questions[i] for i in np.random.default_rng(0).permutation(len(questions))]
    return [set(order[f::folds]) for f in range(folds)]


def _report(parts: dict[str, list[dict[str, Any]]], constants: Any, held: Any = None) -> dict[str, Any]:
    """Figures per split; `held` scores the train split with constants that never saw each row."""
    return {
        "train": figures(parts["train"], held or constants),
        **{split: figures(parts[split], constants) for split in ("sealed", "unseen", "natural")},
    }


# The query-level weights of `words`: a weight for a name no candidate holds, one for a word no
# note holds, and the bias's shift; the smallest weights and shift that reach the best balanced
# rate on train.
NAMED_GRID = (0.0, 1.0, 1.5, 2.0, 3.0, 4.0)
WORDS_GRID = (0.0, 1.0, 2.0, 3.0, 4.0)
SHIFT_GRID = tuple(round(0.05 * i, 2) for i in range(11))


def with_words(
    scifact: tuple[float, tuple[float, ...]], vaults: dict[str, float]
) -> tuple[float, np.ndarray]:
    """SciFact's constants with the query-level weights: each feature is 1 when the query is free
    of what it marks, so its weight comes off the bias."""
    bias, weights = scifact
    shifted = list(weights)
    for name in ("named", "vault_words"):
        shifted[relevance.FEATURES.index(name)] = vaults[name]
        bias -= vaults[name]
    return bias + vaults["bias_shift"], np.asarray(shifted)


def words(rows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """SciFact's constants (relevance.ORDER) with the query-level weights and the bias shift
    that balance best on train."""
    parts = _split(rows)
    grid = [
        {"named": n, "vault_words": w, "bias_shift": d}
        for w in WORDS_GRID
        for n in NAMED_GRID
        for d in SHIFT_GRID
    ]

    def constants(vaults: dict[str, float]) -> tuple[float, np.ndarray]:
        return with_words(relevance.ORDER[mode], vaults)

    def balanced(vaults: dict[str, float], train: list[dict[str, Any]]) -> float:
        fixed = constants(vaults)
        f = figures(train, lambda _: fixed)
        return min(f["answered"]["rate"] or 0.0, f["silent"]["rate"] or 0.0)

    def choose(train: list[dict[str, Any]]) -> dict[str, float]:
        scores = [balanced(vaults, train) for vaults in grid]
        return grid[scores.index(max(scores))]  # the first at the best rate: the smallest weights

    held: dict[tuple[str, str], tuple[float, np.ndarray]] = {}
    for fold in _folds(parts["train"]):
        vaults = choose([r for r in parts["train"] if (r["set"], r["q"]) not in fold])
        held.update(dict.fromkeys(fold, constants(vaults)))
    vaults = choose(parts["train"])
    bias, coef = constants(vaults)
    return {
        "vaults": vaults,
        "bias": round(bias, 4),
        **_report(parts, lambda _: (bias, coef), lambda r: held[(r["set"], r["q"])]),
    }


def refit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    parts = _split(rows)
    held: dict[tuple[str, str], tuple[float, np.ndarray]] = {}
    for fold in _folds(parts["train"]):
        fitting = [r for r in parts["train"] if (r["set"], r["q"]) not in fold]
        bias, coef = fit_weights(fitting)
        held.update(dict.fromkeys(fold, (anchor(fitting, bias, coef, THRESHOLD), coef)))
    bias, coef = fit_weights(parts["train"])
    bias = anchor(parts["train"], bias, coef, THRESHOLD)
    return {
        "bias": round(float(bias), 4),
        "weights": dict(zip(relevance.FEATURES, (round(float(c), 4) for c in coef), strict=True)),
        **_report(parts, lambda _: (bias, coef), lambda r: held[(r["set"], r["q"])]),
    }


# The query-level decision's evidence: the best hit's SciFact logit and these of its features;
# `small`, the few a person can read: how close in meaning the best hit is, the share of the
# query's words it holds, and the query's name and word evidence.
DECISION = ("cosine", "margin", "coverage", "title", "agree", "vault_z", "spread", "named", "vault_words")
DECISION_SMALL = relevance.DECISION_FEATURES


def decision(
    rows: list[dict[str, Any]], mode: str, evidence_of: tuple[str, ...] = DECISION
) -> dict[str, Any]:
    bias0, weights0 = relevance.ORDER[mode]
    coef0 = np.asarray(weights0)
    picks = [relevance.FEATURES.index(name) for name in evidence_of]
    parts = _split(rows)

    def logits(row: dict[str, Any]) -> list[float]:
        return [bias0 + float(np.dot(coef0, values)) for _, _, values in row["cands"]]

    def evidence(row: dict[str, Any]) -> list[float]:
        z = logits(row)
        best = int(np.argmax(z))
        return [z[best], *(row["cands"][best][2][i] for i in picks)]

    def fitted(train: list[dict[str, Any]]) -> tuple[float, np.ndarray]:
        asked = []
        for row in train:
            if not row["cands"]:
                continue
            top = sorted(scores_of(row, bias0, coef0), key=lambda t: -t[2])[:DEPTH]
            found = row["version"] == "answerable" and any(label for _, label, _ in top)
            asked.append({"version": row["version"], "cands": [["q", int(found), evidence(row)]]})
        bias, coef = fit_weights(asked)
        return anchor(asked, bias, coef, THRESHOLD, GOAL), coef

    def rescored(row: dict[str, Any], bias: float, coef: np.ndarray) -> dict[str, Any]:
        if not row["cands"]:
            return row
        z = logits(row)
        d = bias + float(np.dot(coef, evidence(row)))
        return {
            **row,
            "cands": [
                [doc, lab, [d + zi - max(z)]] for (doc, lab, _), zi in zip(row["cands"], z, strict=True)
            ],
        }

    one = (0.0, np.asarray([1.0]))
    held: list[dict[str, Any]] = []
    for fold in _folds(parts["train"]):
        b, c = fitted([r for r in parts["train"] if (r["set"], r["q"]) not in fold])
        held += [rescored(r, b, c) for r in parts["train"] if (r["set"], r["q"]) in fold]
    bias, coef = fitted(parts["train"])
    return {
        "bias": round(float(bias), 4),
        "weights": dict(zip(("logit", *evidence_of), (round(float(c), 4) for c in coef), strict=True)),
        "train": figures(held, lambda _: one),
        **{
            split: figures([rescored(r, bias, coef) for r in parts[split]], lambda _: one)
            for split in ("sealed", "unseen", "natural")
        },
    }


def shipped(rows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The scores mdrag gives (relevance.scores, with its DECISION), fitting nothing."""

    def score(row: dict[str, Any]) -> list[float]:
        return relevance.scores([values for _, _, values in row["cands"]], mode)

    parts = _split(rows)
    never_fitted = [r for split in ("sealed", "unseen", "natural") for r in parts[split]]
    return {
        "decision": relevance.DECISION[mode],
        **_report(parts, lambda _: score),
        "curve": {split: curve(parts[split], lambda _: score) for split in ("sealed", "unseen", "natural")},
        "levels": levels(never_fitted, lambda _: score),
    }


def levels(
    rows: Sequence[dict[str, Any]], constants: Any, threshold: float = THRESHOLD
) -> list[dict[str, Any]]:
    """What a search's outcome and level mean at this threshold: an answer at high or medium
    confidence, possibly related (a first hit within RELATED_BAND under the threshold) or nothing
    close; per kind, how many questions got it and the share of them whose first hit is a right
    page (an unanswerable question's never is), with its 95% interval."""
    if not CONFIDENCE_LEVELS[-1][1] <= threshold <= CONFIDENCE_LEVELS[0][1]:
        raise ValueError(f"levels are named for thresholds of 0.5 to 0.9, not {threshold}")
    answer = [(name, low) for name, low, _ in CONFIDENCE_LEVELS if low >= threshold]
    related = round(threshold - RELATED_BAND, 4)
    kinds = [*answer, ("possibly related", related), ("nothing close", 0.0)]
    cells = {name: [0, 0] for name, _ in kinds}
    for row in rows:
        scored = sorted(_scored(row, constants(row)), key=lambda t: -t[2])
        top = scored[0][2] if scored else 0.0
        right = row["version"] == "answerable" and bool(scored) and bool(scored[0][1])
        # Classed as a search is (confidence.py): the level of an answer, else its outcome.
        outcome = outcome_of(int(top >= threshold), int(top >= related))
        kind = {ANSWER: confidence_level(top, 1), RELATED: "possibly related"}.get(outcome, "nothing close")
        _count(cells[kind], right)
    tops = [1.0] + [low for _, low in kinds[:-1]]
    return [
        {
            "kind": name,
            "from": low,
            "to": top,
            "of": n,
            "right_first": round(k / n, 4) if n else None,
            "ci95": wilson(k, n),
        }
        for (name, low), top, (k, n) in zip(kinds, tops, cells.values(), strict=True)
    ]


CURVE = tuple(round(0.05 * i, 2) for i in range(6, 20))  # 0.3 .. 0.95


def curve(rows: Sequence[dict[str, Any]], constants: Any) -> list[dict[str, Any]]:
    """Answered and silent at each threshold of CURVE: what moving the threshold trades."""
    out = []
    for threshold in CURVE:
        at = figures(rows, constants, threshold=threshold)
        out.append({"threshold": threshold, "answered": at["answered"], "silent": at["silent"]})
    return out


def fit_mode(rows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    mine = [r for r in rows if r["mode"] == mode]
    bias, weights = relevance.ORDER[mode]
    return {
        "scifact": {"bias": bias, **_report(_split(mine), lambda _: (bias, np.asarray(weights)))},
        "words": words(mine, mode),
        "refit": refit(mine),
        "decision": decision(mine, mode),
        "small decision": decision(mine, mode, DECISION_SMALL),
        "shipped": shipped(mine, mode),
    }


def line(name: str, f: dict[str, Any]) -> str:
    parts = []
    for key in ("answered", "silent", "right_first", "right_in_3", "related_or_better"):
        cell = f[key]
        if cell["rate"] is None:
            continue
        lo, hi = cell["ci95"]
        parts.append(f"{key} {cell['rate']:.2f} [{lo:.2f}-{hi:.2f}] /{cell['of']}")
    return f"  {name:<16} " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [row for path in args.dumps for row in load(path)]
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "dumps": [p.name for p in args.dumps],
        "modes": {},
    }
    for mode in args.modes:
        result["modes"][mode] = fitted = fit_mode(rows, mode)
        for way, figures_ in fitted.items():
            extra = {k: v for k, v in figures_.items() if k in ("vaults", "weights", "bias", "decision")}
            print(f"{mode} {way}: {json.dumps(extra)}", file=sys.stderr)
            for split in ("train", "sealed", "unseen", "natural"):
                print(line(split, figures_[split]), file=sys.stderr)
            for split, points in figures_.get("curve", {}).items():
                steps = ", ".join(
                    f"{p['threshold']:.2f}: {p['answered']['rate']:.2f}/{p['silent']['rate']:.2f}"
                    for p in points
                    if p["answered"]["rate"] is not None and p["silent"]["rate"] is not None
                )
                print(f"  {split} curve (threshold: answered/silent) {steps}", file=sys.stderr)
            if figures_.get("levels"):
                means = ", ".join(
                    f"{c['kind']} {c['right_first']:.2f} of {c['of']}" if c["of"] else f"{c['kind']} – of 0"
                    for c in figures_["levels"]
                )
                print(f"  at {THRESHOLD}, never fitted on (a right page first) {means}", file=sys.stderr)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""Answer decision, measured: can one query-level yes/no on the top hit's evidence beat the per-hit threshold?

    python -m bench.decision FEATURES.jsonl [--mode hybrid] [--out bench/results/decision.json]

Reads a `python -m bench.fit dump` (every candidate's evidence, each query as it is and, where the
set has them, its unanswerable twin). Today a search answers "do my notes answer this?" by
whether any hit's score reaches the threshold. The alternative measured here: a second logistic
regression (the same non-negative fit as the score's, bench.fit.fit_weights) over the best
hit's evidence plus its score and its lead over the second hit, fitted per query (label: the
query is answerable), held out by leave-one-out. A query *answers* when the decision says yes and
a relevant note is in its first DEPTH hits by score; it is *silent* when the decision says no.
Nothing in mdrag reads this yet: it tells whether building `confidence.level` is worth it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.answerability import DEPTH
from bench.fit import fit_weights, load, logistic, scores_of
from mdrag.retrieval import relevance

THRESHOLDS = [round(0.05 * i, 2) for i in range(6, 19)]


def query_evidence(row: dict[str, Any], bias: float, coef: np.ndarray) -> tuple[list[float], bool] | None:
    """The best hit's evidence, its score's logit and its lead over the second hit, and whether
    a relevant note is among the first DEPTH hits; None for a search with no candidate."""
    scored = sorted(
        zip(scores_of(row, bias, coef), (values for _, _, values in row["cands"]), strict=True),
        key=lambda pair: -pair[0][2],
    )
    if not scored:
        return None
    (_, _, top), values = scored[0]
    second = scored[1][0][2] if len(scored) > 1 else 0.0
    logit = math.log(max(top, 1e-9) / max(1.0 - top, 1e-9))
    found = any(label for (_, label, _), _ in scored[:DEPTH])
    return [*values, logit, top - second], found


def held_out(rows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    bias, weights = relevance.WEIGHTS[mode]
    coef = np.asarray(weights)
    queries: list[tuple[list[float] | None, bool, bool]] = []
    for row in rows:
        if row["mode"] != mode:
            continue
        evidence = query_evidence(row, bias, coef)
        answerable = row["version"] == "answerable"
        if evidence is None:  # no candidate: silent, and an answerable query unanswered
            queries.append((None, answerable, False))
        else:
            queries.append((evidence[0], answerable, evidence[1]))
    probabilities = []
    for i, (values, _, _) in enumerate(queries):
        if values is None:
            probabilities.append(0.0)
            continue
        train = [
            {"cands": [["q", int(answerable), v]]}
            for j, (v, answerable, _) in enumerate(queries)
            if j != i and v is not None
        ]
        b, c = fit_weights(train)
        probabilities.append(logistic(b, c, values))
    curve = {}
    answerable_n = sum(1 for _, a, _ in queries if a)
    unanswerable_n = len(queries) - answerable_n
    for t in THRESHOLDS:
        answered = sum(1 for p, (_, a, f) in zip(probabilities, queries, strict=True) if a and f and p >= t)
        silent = sum(1 for p, (_, a, _) in zip(probabilities, queries, strict=True) if not a and p < t)
        curve[t] = {
            "answered": round(answered / answerable_n, 4) if answerable_n else None,
            "silent": round(silent / unanswerable_n, 4) if unanswerable_n else None,
        }
    found = sum(1 for _, a, f in queries if a and f) / answerable_n if answerable_n else None
    return {"queries": len(queries), "answerable": answerable_n, "found_in_top": found, "curve": curve}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("features", type=Path)
    parser.add_argument("--modes", nargs="+", default=["hybrid"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = load(args.features)
    result: dict[str, Any] = {"features": args.features.name, "date": time.strftime("%Y-%m-%d"), "modes": {}}
    for mode in args.modes:
        measured = held_out(rows, mode)
        result["modes"][mode] = measured
        print(
            f"{mode}: {measured['queries']} queries, a relevant note in the first {DEPTH} for "
            f"{measured['found_in_top']:.3f} of the answerable; held out (leave-one-out):",
            file=sys.stderr,
        )
        for t, rates in measured["curve"].items():
            print(f"  {t:.2f} answered {rates['answered']} silent {rates['silent']}", file=sys.stderr)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

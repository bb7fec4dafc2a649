"""Fit the relevance score's constants: dump every candidate's evidence once, then fit offline.

    python -m bench.fit dump [--set scifact|natural] [--backend B] [--out FEATURES.jsonl]
    python -m bench.fit fit FEATURES.jsonl [--folds 5]
    python -m bench.fit report FEATURES.jsonl

`dump` runs each judged query through the real search path (Searcher.search with --explain, so
each hit carries the evidence mdrag.retrieval.relevance reads), twice: as it is, and with its relevant
notes left out (the unanswerable twin). `fit` fits, per mode, a logistic regression with
non-negative weights (the exact bounded minimum: scipy's L-BFGS-B), cross-validated by query: each fold's
answered/silent rates and nDCG@10 come from constants fitted on the other folds. `report`
scores a dump with the constants in mdrag/retrieval/relevance.py, fitting nothing (the natural set).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, special

from bench.answerability import DEPTH, rates_at
from bench.eval import add_backend
from bench.judged_data import SETS, doc_ids, judged_set, write_dump
from bench.metrics import ndcg_at_k
from mdrag.retrieval import relevance
from mdrag.retrieval.search import CANDIDATE_FACTOR

THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]


def dump(args: argparse.Namespace) -> None:
    from bench import eval as ev
    from mdrag.log import configure_logging
    from mdrag.params.search import SearchParams

    configure_logging("WARNING")
    judged = judged_set(args.set)
    pool = DEPTH * CANDIDATE_FACTOR + 10
    service, root, _ = ev.open_set(judged, ev.config_for(args.backend))
    ids = doc_ids(root)

    def one(qid: str, text: str) -> list[str]:
        relevant = {d for d, g in judged.qrels.get(qid, {}).items() if g > 0}
        versions: list[tuple[str, set[str] | None]] = [("unanswerable", None)]
        if relevant:
            versions = [("answerable", None)]
            if judged.twins:
                versions.append(("unanswerable", relevant))
        lines = []
        for mode in args.modes:
            for version, drop in versions:
                leave = None if drop is None else (lambda p, drop=drop: ids.get(p) in drop)
                params = SearchParams.parse(
                    {"query": text, "top_k": args.depth, "threshold": 0.0, "mode": mode, "explain": True},
                    service.search_defaults(),
                )
                # Every candidate a default search (top_k DEPTH) scores, not only its hits.
                found = service.searcher.search(params, leave_out=leave, pool=pool, as_scored=True)
                cands = [
                    [
                        ids.get(h.file_path),
                        int(ids.get(h.file_path) in relevant),
                        list(h.explain["evidence"].values()),
                    ]
                    for h in found.results
                    if h.explain
                ]
                split = "test" if qid in judged.sealed else "train"
                lines.append(
                    json.dumps(
                        {
                            "q": qid,
                            "mode": mode,
                            "version": version,
                            "split": split,
                            "set": args.set,
                            "cands": cands,
                        }
                    )
                )
        return lines

    try:
        write_dump(args.out, judged.queries, one, args.threads)
    finally:
        service.close()


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def fit_weights(rows: list[dict[str, Any]], l2: float = 1e-3) -> tuple[float, np.ndarray]:
    """Logistic regression with every weight held >= 0, every query version weighted equally
    whatever its number of candidates: the exact minimum of the L2-penalized log loss (L-BFGS-B
    within the bounds), so the same rows always give the same constants.

    Each feature is centred and scaled by its spread while fitting (the penalty then weighs each
    alike, and the solver sees a well-conditioned problem); the constants come back in the
    features' own units.
    """
    xs, ys, ws = [], [], []
    for row in rows:
        if not row["cands"]:
            continue
        weight = row.get("weight", 1.0) / len(row["cands"])
        for _, label, values in row["cands"]:
            xs.append(values)
            ys.append(label)
            ws.append(weight)
    x, y, w = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), np.asarray(ws)
    w = w / w.sum()
    mean, spread = x.mean(axis=0), x.std(axis=0)
    # A feature the same for every row is the bias over again (dense mode's `named`): no weight.
    varies = spread > 1e-9
    scaled = (x - mean) / np.where(varies, spread, 1.0)

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        bias, coef = params[0], params[1:]
        z = scaled @ coef + bias
        gap = special.expit(z) - y
        value = float(w @ (np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * coef @ coef)
        return value, np.concatenate([[w @ gap], scaled.T @ (w * gap) + l2 * coef])

    bounds = [(None, None)] + [(0.0, None) if v else (0.0, 0.0) for v in varies]
    found = optimize.minimize(
        loss,
        np.zeros(1 + x.shape[1]),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 10_000, "ftol": 1e-15, "gtol": 1e-10},
    )
    coef = np.where(varies, found.x[1:] / np.where(varies, spread, 1.0), 0.0)
    return float(found.x[0] - coef @ mean), coef


def anchor(
    rows: list[dict[str, Any]],
    bias: float,
    coef: np.ndarray,
    at: float = 0.7,
    goal: tuple[float, float] = (0.0, 0.0),
) -> float:
    """The bias that puts `at` where, on these rows, the lower of the margins of answered and silent
    over `goal` (answered, silent) is highest. With no goal, where the two balance.

    The slopes say how the evidence combines; this places the default threshold on the scale.
    """
    best_z, best = 0.0, -math.inf
    tops_ans, tops_un = [], []
    for row in rows:
        zs = sorted(
            ((bias + float(np.dot(coef, v)), label) for _, label, v in row["cands"]), key=lambda t: -t[0]
        )
        if row["version"] == "answerable":
            # The lowest bar that still keeps a relevant hit within the first DEPTH.
            tops_ans.append(max((z for z, label in zs[:DEPTH] if label), default=-np.inf))
        else:
            tops_un.append(zs[0][0] if zs else -np.inf)
    a, u = np.asarray(tops_ans), np.asarray(tops_un)
    for z in np.unique(np.concatenate([a[np.isfinite(a)], u[np.isfinite(u)]])):
        answered = float(np.mean(a >= z)) if len(a) else 1.0
        silent = float(np.mean(u < z)) if len(u) else 1.0
        margin = min(answered - goal[0], silent - goal[1])
        if margin > best:
            best_z, best = float(z), margin
    return bias - best_z + math.log(at / (1 - at))


def logistic(bias: float, coef: np.ndarray, values: Any) -> float:
    z = bias + float(np.dot(coef, values))
    return 1.0 / (1.0 + math.exp(-max(min(z, 60), -60)))


def scores_of(row: dict[str, Any], bias: float, coef: np.ndarray) -> list[tuple[str, int, float]]:
    return [(doc, label, logistic(bias, coef, values)) for doc, label, values in row["cands"]]


def paired(row: dict[str, Any], given: Sequence[float]) -> list[tuple[str, int, float]]:
    """A dump row's candidates (note, label) each with its score from `given`, in order."""
    return [(doc, label, score) for (doc, label, _), score in zip(row["cands"], given, strict=True)]


def summarize(
    rows: list[dict[str, Any]], bias: float, coef: np.ndarray, qrels_count: dict[str, int], mode: str = ""
) -> dict[str, Any]:
    """Answered/silent at every threshold and nDCG@10 of the score order, from a dump's rows:
    each candidate scored alone by (bias, coef), or, given a `mode`, as mdrag scores a query's
    candidates together (relevance.scores)."""
    per_version: dict[str, list[list[tuple[str, int, float]]]] = {"answerable": [], "unanswerable": []}
    ndcg = []
    for row in rows:
        if mode:
            scored = paired(row, relevance.scores([values for _, _, values in row["cands"]], mode))
        else:
            scored = scores_of(row, bias, coef)
        scored.sort(key=lambda t: -t[2])
        per_version[row["version"]].append(scored)
        if row["version"] == "answerable":
            ranking, seen = [], set()
            for doc, _, _ in scored:
                if doc not in seen:
                    seen.add(doc)
                    ranking.append(doc)
            relevant = {doc: 1 for doc, label, _ in scored if label}
            # Relevant notes the candidates missed still count in the ideal ranking.
            missing = qrels_count.get(row["q"], len(relevant)) - len(relevant)
            for i in range(max(missing, 0)):
                relevant[f"missing-{i}"] = 1
            ndcg.append(ndcg_at_k(ranking, relevant, 10))
    curve = {t: rates_at(per_version["answerable"], per_version["unanswerable"], t) for t in THRESHOLDS}
    return {
        "ndcg@10": float(np.mean(ndcg)) if ndcg else None,
        "at_0.7": rates_at(per_version["answerable"], per_version["unanswerable"], 0.7),
        "curve": curve,
    }


# Evidence this fit leaves at weight 0: the vault's own scale and the spread were measured on the
# judged vaults (bench.vaultfit's `refit`) and did not pay there; a name no note holds and a word
# no note holds are fitted on the vaults' questions (bench.vaultfit's `shipped`; SciFact's
# unanswerable twins leave notes out of the ranking, not out of the keyword index's word counts).
# SciFact fits the per-hit evidence only.
LEFT_OUT = ("vault_z", "spread", "named", "vault_words")


def without(rows: list[dict[str, Any]], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """These rows with the named features' values set to 0, so a fit gives them no weight."""
    drop = {relevance.FEATURES.index(name) for name in names}
    return [
        {
            **row,
            "cands": [
                [doc, label, [0.0 if i in drop else v for i, v in enumerate(values)]]
                for doc, label, values in row["cands"]
            ],
        }
        for row in rows
    ]


def fit(args: argparse.Namespace) -> None:
    rows = without(load(args.features), LEFT_OUT)
    qrels_count = relevant_counts(args.set)
    # Other judged sets join every fold's training, weighted so each set counts as much as
    # this one; folds, held-out figures and the anchor are this set's alone.
    others = [load(path) for path in args.also]
    result: dict[str, Any] = {}
    for mode in sorted({r["mode"] for r in rows}):
        mine = [r for r in rows if r["mode"] == mode]
        extra = []
        for other in others:
            theirs = without([r for r in other if r["mode"] == mode], LEFT_OUT)
            extra += [{**r, "weight": len(mine) / len(theirs)} for r in theirs]
        queries = sorted({r["q"] for r in mine})
        rng = np.random.default_rng(0)
        order = list(rng.permutation(queries))
        folds = [set(order[i :: args.folds]) for i in range(args.folds)]
        held: list[dict[str, Any]] = []
        for fold in folds:
            train = [r for r in mine if r["q"] not in fold]
            bias, coef = fit_weights(train + extra)
            if args.anchor:
                bias = anchor(train, bias, coef)
            test = [r for r in mine if r["q"] in fold]
            held.extend({**r, "_b": bias, "_c": coef} for r in test)
        # Held-out figures: every query scored by constants that never saw it.
        answered_sets = [
            [(d, lab, s) for d, lab, s in sorted(scores_of(r, r["_b"], r["_c"]), key=lambda t: -t[2])]
            for r in held
            if r["version"] == "answerable"
        ]
        silent_sets = [
            sorted(scores_of(r, r["_b"], r["_c"]), key=lambda t: -t[2])
            for r in held
            if r["version"] == "unanswerable"
        ]
        curve = {t: rates_at(answered_sets, silent_sets, t) for t in THRESHOLDS}
        ndcg = []
        for r in held:
            if r["version"] == "answerable":
                ndcg.append(
                    _ndcg(
                        sorted(scores_of(r, r["_b"], r["_c"]), key=lambda t: -t[2]), qrels_count.get(r["q"])
                    )
                )
        bias, coef = fit_weights(mine + extra)
        if args.anchor:
            bias = anchor(mine, bias, coef)
        result[mode] = {
            "held_out": {"ndcg@10": round(float(np.mean(ndcg)), 4), "at_0.7": curve[0.7], "curve": curve},
            "bias": round(bias, 4),
            "weights": dict(zip(relevance.FEATURES, (round(float(c), 4) for c in coef), strict=True)),
        }
        print(
            f"{mode}: held-out nDCG@10 {result[mode]['held_out']['ndcg@10']}, at 0.7 {curve[0.7]}",
            file=sys.stderr,
        )
        print(f"  bias {bias:.3f} weights {result[mode]['weights']}", file=sys.stderr)
        for t in THRESHOLDS:
            print(f"  {t:.2f} {curve[t]}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "set": args.set,
        "also": [path.name for path in args.also],
        "folds": args.folds,
        "anchored": args.anchor,
        "date": time.strftime("%Y-%m-%d"),
        "modes": result,
    }
    args.out.write_text(json.dumps(record, indent=2))


def report(args: argparse.Namespace) -> None:
    rows = load(args.features)
    qrels_count = relevant_counts(args.set)
    result = {}
    for mode in sorted({r["mode"] for r in rows}):
        mine = [r for r in rows if r["mode"] == mode]
        if args.weights:  # a fit's output instead of the shipped scores
            fitted = json.loads(args.weights.read_text())["modes"][mode]
            s = summarize(mine, fitted["bias"], np.asarray(tuple(fitted["weights"].values())), qrels_count)
        else:
            s = summarize(mine, 0.0, np.zeros(0), qrels_count, mode)
        result[mode] = s
        print(f"{mode}: nDCG@10 {s['ndcg@10']}, at 0.7 {s['at_0.7']}", file=sys.stderr)
        for t in THRESHOLDS:
            print(f"  {t:.2f} {s['curve'][t]}", file=sys.stderr)
    print(json.dumps(result))


def _ndcg(scored: list[tuple[str, int, float]], total: int | None) -> float:
    ranking, seen = [], set()
    for doc, _, _ in scored:
        if doc not in seen:
            seen.add(doc)
            ranking.append(doc)
    relevant = {doc: 1 for doc, label, _ in scored if label}
    for i in range(max((total or len(relevant)) - len(relevant), 0)):
        relevant[f"missing-{i}"] = 1
    return ndcg_at_k(ranking, relevant, 10)


def relevant_counts(name: str) -> dict[str, int]:
    """Each question of the judged set `name` with how many notes answer it."""
    judged = judged_set(name)
    return {q: sum(1 for g in rel.values() if g > 0) for q, rel in judged.qrels.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--set", choices=SETS, default="scifact")
    d.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"])
    d.add_argument("--depth", type=int, default=DEPTH * 8, help="hits kept per search (all candidates)")
    d.add_argument("--out", type=Path, default=Path("/tmp/mdrag-features-scifact.jsonl"))
    d.add_argument("--threads", type=int, default=3)
    add_backend(d)
    f = sub.add_parser("fit")
    f.add_argument("features", type=Path)
    f.add_argument("--set", choices=SETS, default="scifact")
    f.add_argument(
        "--also", type=Path, nargs="*", default=[], help="other sets' dumps, in every fold's training"
    )
    f.add_argument("--folds", type=int, default=5)
    f.add_argument(
        "--anchor", action="store_true", help="place 0.7 at the balanced answered/silent point, not P=0.7"
    )
    f.add_argument("--out", type=Path, default=Path("bench/results/fit.json"))
    r = sub.add_parser("report")
    r.add_argument("features", type=Path)
    r.add_argument("--set", choices=SETS, default="natural")
    r.add_argument("--weights", type=Path, help="a `fit` output to score with (default: mdrag's constants)")
    args = parser.parse_args()
    {"dump": dump, "fit": fit, "report": report}[args.command](args)


if __name__ == "__main__":
    main()

"""Fit the order on the judged vaults' questions, leave-one-vault-out (#57 §2).

    for v in powershell eips tldr otel hugo obsidian-dev obsidian-hub; do
        python -m bench.fit dump --set $v --out /tmp/dumps/dump-$v.jsonl; done
    python -m bench.fit dump --set scifact --out /tmp/dumps/dump-scifact.jsonl
    python -m bench.orderfit /tmp/dumps/dump-*.jsonl [--out bench/results/order.json]

The order (relevance.ORDER) says which candidate comes first. It is fitted per question: a
softmax over the question's candidates, its target the right notes (the chance the fit gives a
right note among all the candidates, maximised: what a right page first asks), each weight >= 0,
an L2 penalty of L2 on features scaled by their spread. Only the evidence that differs between a
question's candidates can order them (ORDERING); a query-level feature is the same for all.

For each vault V and mode, the order is fitted on every answerable question of the other vaults
(their train and test splits: V is never in its own fit) and measured on V: a right page first
and in the first three, on V's sealed test split and on all its questions, with Wilson 95%
intervals. Beside it: the constants mdrag ships (fitted on every vault, so not held out),
SCIFACT_ORDER (the order fitted on SciFact that the vault fit replaced) and, from
bench/results/baseline.json, the plain baselines on the test split (RRF of dense, BM25 and a fuzzy
title; RRF of dense and BM25). The worst vault is the figure that counts, the mean beside it.
The final constants are fitted on every vault's questions and printed for relevance.ORDER. A
SciFact dump, when given, is scored as a diagnostic (nDCG@10 of its answerable questions): it is
never fitted on.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize

from bench.fit import LEFT_OUT, load, relevant_counts, summarize
from bench.judged_data import vault_names, vault_queries
from bench.metrics import wilson
from mdrag.retrieval import relevance

# What can order a question's candidates: every feature but the query-level ones, the same for
# each of them (LEFT_OUT: vault_z is the cosine again, on the vault's scale).
ORDERING = tuple(name for name in relevance.FEATURES if name not in LEFT_OUT)
L2 = 1e-2
# The order mdrag shipped before this fit (bench.fit on SciFact test), kept as the baseline the
# vault fit is measured against.
SCIFACT_ORDER: dict[str, tuple[float, ...]] = {
    "dense": (0.3069, 15.24, 0.2129, 0.0, 0.0, 0.0, 3.777, 1.444, 0.777, 0.0, 0.0, 0.0, 0.0, 0.0),
    "keyword": (1.194, 14.23, 0.0, 1.405, 0.0, 0.0, 1.899, 0.8569, 0.6401, 0.0, 0.0, 0.0, 0.0, 0.0),
    "hybrid": (0.0, 13.36, 0.0, 1.228, 0.0164, 0.9923, 1.814, 1.095, 0.5978, 0.0, 0.0, 0.0, 0.0, 0.0),
}
BASELINES = {"rrf": "RRF of dense, BM25 and a fuzzy title", "dense+bm25": "RRF of dense and BM25"}


class Question:
    """One answerable question's candidates: their evidence and which are right."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.vault, self.split, self.id = row["set"], row["split"], row["q"]
        width = len(relevance.FEATURES)
        self.x = np.asarray([values for _, _, values in row["cands"]], dtype=float).reshape(-1, width)
        self.right = np.asarray([label for _, label, _ in row["cands"]], dtype=bool)
        self.notes = [note for note, _, _ in row["cands"]]

    def ranks(self, coef: np.ndarray) -> tuple[bool, bool]:
        """Whether a right note is first, and among the first three notes (a note's other
        sections are not another page), in this order (ties keep the search's own order)."""
        if not self.right.any():
            return False, False  # no right note among the candidates: missed in every order
        seen: dict[str, bool] = {}
        for i in np.argsort(-(self.x @ coef), kind="stable"):
            seen.setdefault(self.notes[i], bool(self.right[i]))
        firsts = list(seen.values())
        return firsts[0], any(firsts[:3])


def questions(rows: Sequence[dict[str, Any]], mode: str) -> list[Question]:
    """Every answerable question of the judged vaults in these dump rows, in this mode."""
    judged = set(vault_names())  # not SciFact, nor bench/data/natural (another writer's, never fitted on)
    return [
        Question(row)
        for row in rows
        if row["mode"] == mode and row["version"] == "answerable" and row["set"] in judged
    ]


def fit_order(train: Sequence[Question], l2: float = L2) -> np.ndarray:
    """The weights (FEATURES order) that maximise the softmax chance of a right note per question
    (a question with no right candidate has nothing to order)."""
    train = [q for q in train if q.right.any()]
    picks = [relevance.FEATURES.index(name) for name in ORDERING]
    xs = [q.x[:, picks] for q in train]
    stacked = np.vstack(xs)
    mean, spread = stacked.mean(axis=0), stacked.std(axis=0)
    varies = spread > 1e-9
    scaled = [(x - mean) / np.where(varies, spread, 1.0) for x in xs]
    rights = [q.right for q in train]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.0, np.zeros_like(w)
        for x, right in zip(scaled, rights, strict=True):
            z = x @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            q = np.where(right, p, 0.0)
            q /= q.sum()
            total -= float(np.log(p[right].sum()))
            grad += x.T @ (p - q)
        n = len(scaled)
        return total / n + 0.5 * l2 * float(w @ w), grad / n + l2 * w

    bounds = [(0.0, None) if v else (0.0, 0.0) for v in varies]
    found = optimize.minimize(
        loss, np.zeros(len(picks)), jac=True, method="L-BFGS-B", bounds=bounds, options={"gtol": 1e-9}
    )
    coef = np.zeros(len(relevance.FEATURES))
    coef[picks] = np.where(varies, found.x / np.where(varies, spread, 1.0), 0.0)
    return coef


def rates(held: Sequence[Question], coef: np.ndarray) -> dict[str, Any]:
    return _counted([q.ranks(coef) for q in held])


def _counted(ranked: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """A right page first and in the first three, over these (first, in 3) pairs."""
    first, in_3 = sum(f for f, _ in ranked), sum(t for _, t in ranked)
    return {"right_first": _rate(first, len(ranked)), "right_in_3": _rate(in_3, len(ranked))}


def summary(per_vault: dict[str, Any], split: str, way: str) -> dict[str, Any]:
    firsts = {v: data[split][way]["right_first"]["rate"] for v, data in per_vault.items()}
    in_3 = {v: data[split][way]["right_in_3"]["rate"] for v, data in per_vault.items()}
    worst = min(firsts, key=firsts.__getitem__)
    return {
        "worst_vault": worst,
        "worst_first": firsts[worst],
        "mean_first": round(float(np.mean(list(firsts.values()))), 4),
        "worst_in_3": min(in_3.values()),
        "mean_in_3": round(float(np.mean(list(in_3.values()))), 4),
    }


def baselines(path: Path) -> dict[str, dict[str, float | None]]:
    """Per vault, the plain baselines' right-page-first rate on the test split."""
    if not path.exists():
        return {}
    sets = json.loads(path.read_text(encoding="utf-8"))["sets"]
    out: dict[str, dict[str, float | None]] = {}
    for vault, data in sets.items():
        rrf = data["modes"].get("rrf", {}).get("splits", {}).get("test", {}).get("right_first", {})
        parts = data.get("components", {}).get("both", {}).get("test", {}).get("dense+bm25", {})
        out[vault] = {"rrf": rrf.get("rate"), "dense+bm25": parts.get("first")}
    return out


def scifact_ndcg(rows: Sequence[dict[str, Any]], mode: str, coef: np.ndarray) -> float | None:
    """nDCG@10 of SciFact's answerable questions ordered by these weights (a diagnostic)."""
    asked = [
        row
        for row in rows
        if row["set"] == "scifact" and row["mode"] == mode and row["version"] == "answerable"
    ]
    if not asked:
        return None
    ndcg = summarize(asked, 0.0, coef, relevant_counts("scifact"))["ndcg@10"]
    return None if ndcg is None else round(ndcg, 4)


def run_mode(rows: Sequence[dict[str, Any]], mode: str, baseline: dict[str, Any]) -> dict[str, Any]:
    asked = questions(rows, mode)
    shipped = np.asarray(relevance.ORDER[mode][1])
    before = np.asarray(SCIFACT_ORDER[mode])
    per_vault: dict[str, Any] = {}
    held_out: dict[str, np.ndarray] = {}
    for vault in sorted({q.vault for q in asked}):
        lovo = held_out[vault] = fit_order([q for q in asked if q.vault != vault])
        held = {
            "test": [q for q in asked if q.vault == vault and q.split == "test"],
            "all": [q for q in asked if q.vault == vault],
        }
        ways = (("lovo", lovo), ("shipped", shipped), ("scifact", before))
        per_vault[vault] = {split: {way: rates(qs, coef) for way, coef in ways} for split, qs in held.items()}
        per_vault[vault]["baselines_test"] = baseline.get(vault, {})
        per_vault[vault]["lovo_weights"] = weights_of(lovo)
    final = fit_order(asked)
    return {
        "vaults": per_vault,
        "forms": forms(asked, held_out),
        "summary": {
            split: {way: summary(per_vault, split, way) for way in ("lovo", "shipped", "scifact")}
            for split in ("test", "all")
        },
        "fitted_on_every_vault": weights_of(final),
        "scifact_ndcg@10": {
            "shipped": scifact_ndcg(rows, mode, shipped),
            "scifact_order": scifact_ndcg(rows, mode, before),
            "fitted_on_every_vault": scifact_ndcg(rows, mode, final),
        },
    }


def forms(asked: Sequence[Question], held_out: dict[str, np.ndarray]) -> dict[str, Any]:
    """Each vault left out, its questions (train and test: none is in its own fit) by the kind of
    query (`form`: natural, keyword, identifier; a question written without one is natural), and
    every vault's together: the short keyword queries typed into a search box are not the
    questions the order was mostly fitted on."""
    per_vault: dict[str, dict[str, list[tuple[bool, bool]]]] = {}
    everywhere: dict[str, list[tuple[bool, bool]]] = {}
    written = {vault: vault_queries(vault) for vault in {q.vault for q in asked}}
    for q in sorted(asked, key=lambda q: q.vault):
        form = written[q.vault].get(q.id, {}).get("form", "natural")
        ranked = q.ranks(held_out[q.vault])
        per_vault.setdefault(q.vault, {}).setdefault(form, []).append(ranked)
        everywhere.setdefault(form, []).append(ranked)
    kinds = {**per_vault, "every vault": everywhere}
    return {
        key: {form: _counted(by_form[form]) for form in sorted(by_form)} for key, by_form in kinds.items()
    }


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"rate": round(k / n, 4), "of": n, "ci95": wilson(k, n)}


def weights_of(coef: np.ndarray) -> dict[str, float]:
    return {name: round(float(c), 4) for name, c in zip(relevance.FEATURES, coef, strict=True) if c > 0}


def table(result: dict[str, Any], mode: str) -> str:
    lines = [
        f"{mode}: vault (test n) | LOVO first [95%] | top 3 | shipped first | SciFact order first | "
        "RRF | dense+BM25"
    ]
    for vault, data in result["vaults"].items():
        test = data["test"]
        lovo = test["lovo"]["right_first"]
        base = data["baselines_test"]
        lines.append(
            f"{vault} ({lovo['of']}) | {lovo['rate']:.2f} {lovo['ci95']} | "
            f"{test['lovo']['right_in_3']['rate']:.2f} | {test['shipped']['right_first']['rate']:.2f} | "
            f"{test['scifact']['right_first']['rate']:.2f} | {base.get('rrf')} | {base.get('dense+bm25')}"
        )
    for split, ways in result["summary"].items():
        for way, s in ways.items():
            lines.append(f"{split} {way}: {s}")
    for key, by_form in result["forms"].items():
        cells = [
            f"{form} {f['right_first']['rate']:.2f} first, {f['right_in_3']['rate']:.2f} in 3 "
            f"(of {f['right_first']['of']})"
            for form, f in by_form.items()
        ]
        lines.append(f"held out, every question, by kind: {key}: " + "; ".join(cells))
    lines.append(f"fitted on every vault: {result['fitted_on_every_vault']}")
    lines.append(f"SciFact nDCG@10: {result['scifact_ndcg@10']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"])
    parser.add_argument("--baseline", type=Path, default=Path("bench/results/baseline.json"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/order.json"))
    args = parser.parse_args()
    baseline = baselines(args.baseline)
    rows = [row for path in args.dumps for row in load(path)]
    result: dict[str, Any] = {
        "about": __doc__.split("\n\n")[2].replace("\n", " "),
        "l2": L2,
        "modes": {mode: run_mode(rows, mode, baseline) for mode in args.modes},
    }
    for mode, data in result["modes"].items():
        print(table(data, mode), "\n")
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

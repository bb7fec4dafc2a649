"""The answer decision leave-one-vault-out: fitted without a vault, measured on it (#57 §3).

    for v in powershell eips tldr otel hugo obsidian-dev obsidian-hub; do
        python -m bench.fit dump --set $v --modes hybrid --out /tmp/lovo/dump-$v.jsonl; done
    python -m bench.lovo /tmp/lovo/dump-*.jsonl [--mode hybrid] [--out bench/results/lovo.json]

Each DUMP is a `python -m bench.fit dump --set VAULT` of one judged vault. For each vault V in
turn, the small decision (bench.vaultfit's `decision` over DECISION_SMALL: the same evidence, the
same fit, the bias placed where the lower of the margins of answered and silent over GOAL is highest
on what it was fitted on) is
fitted on the `train` questions of every other vault, never V's and never a `test` question, over
the order fitted without V too (bench.orderfit, on every answerable question of the other
vaults), and measured on V: its test split and, beside it, all its questions (V's train questions
are held out here too, as V never joins its own fit). The shipped constants (relevance.ORDER and
relevance.DECISION, fitting nothing) are measured on the same questions beside it: the shipped
order was fitted on every vault's questions, V's included, and the shipped decision on the train
questions of powershell, eips and tldr.

Per vault and split, at the default threshold 0.7: answered (an answerable question with a right
note scored >= 0.7 within the first DEPTH), silent (an unanswerable question with nothing scored
>= 0.7), confidently answered unanswerable questions (1 - silent: the share answered), each with
its Wilson 95% interval; a right page first and in the first three (the order, which the decision
never changes: checked); the answered/silent curve over 0.3 .. 0.95, and the best pair on it
(answered >= 0.65 with silent >= 0.80 where one exists, the one with the higher lower rate; else
the pair that maximises min(answered, silent)); the AUC of the first hit's score (answerable
questions whose right note is among the first DEPTH against unanswerable ones); what each outcome
level means there (bench.vaultfit.levels); per form on the Obsidian vaults. On every vault, every
miss at 0.7 is classified: an answerable question answered wrong (something >= 0.7, no right note
among what is kept), silent with the right note among the candidates (and its rank), or silent
with none; each unanswerable question answered, with its kind and score. The worst vault is the
one with the lowest min(answered, silent) at 0.7, per split (the three older vaults' test splits
hold 6 to 9 unanswerable questions each, so `all` is the steadier reading there).

Diagnostics beside it (DIAGNOSTIC), measured, never shipped: `lovo_all`, the same fit on every
question of the other vaults (test splits included: do more kinds of vault in the fit move the
vault left out?); `lovo_full`, bench.vaultfit's full DECISION evidence; `lovo_z`, the vault's own
scale of the cosine (vault_z) in its place.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.answerability import DEPTH
from bench.decision_misses import misses, separation
from bench.fit import anchor, fit_weights, load, scores_of
from bench.judged_data import vault_names, vault_queries
from bench.metrics import wilson
from bench.orderfit import Question, fit_order
from bench.vaultfit import CURVE, DECISION, DECISION_SMALL, GOAL, THRESHOLD, figures, levels
from mdrag.retrieval import relevance

ONE = (0.0, np.asarray([1.0]))  # a rescored row's single value is its score's logit
# Diagnostics beside the LOVO small decision (never shipped): (its evidence, fitted on every
# question of the other vaults, test splits included, rather than their train splits alone).
DIAGNOSTIC: dict[str, tuple[tuple[str, ...], bool]] = {
    "lovo_all": (DECISION_SMALL, True),
    "lovo_full": (DECISION, False),
    "lovo_z": (("vault_z", "coverage", "named", "vault_words"), False),
}
WAYS = {
    "lovo": "the small decision (DECISION_SMALL) fitted on the other vaults' train questions",
    "shipped": "relevance.DECISION as mdrag holds it, fitting nothing",
    "lovo_all": "diagnostic: the small decision fitted on every question of the other vaults",
    "lovo_full": "diagnostic: bench.vaultfit's full DECISION evidence, on the other vaults' train questions",
    "lovo_z": "diagnostic: the small decision with the vault's own scale (vault_z) for the cosine",
}


class Decision:
    """bench.vaultfit.decision's fit and rescoring, over one mode's order and these features."""

    def __init__(
        self, mode: str, evidence_of: tuple[str, ...] = DECISION_SMALL, order: np.ndarray | None = None
    ) -> None:
        bias0, weights0 = relevance.ORDER[mode] if order is None else (0.0, order)
        self.bias0, self.coef0 = bias0, np.asarray(weights0)
        self.evidence_of = evidence_of
        self.picks = [relevance.FEATURES.index(name) for name in evidence_of]

    def logits(self, row: dict[str, Any]) -> list[float]:
        return [self.bias0 + float(np.dot(self.coef0, values)) for _, _, values in row["cands"]]

    def evidence(self, row: dict[str, Any]) -> list[float]:
        z = self.logits(row)
        best = int(np.argmax(z))
        return [z[best], *(row["cands"][best][2][i] for i in self.picks)]

    def fit(self, train: Sequence[dict[str, Any]]) -> tuple[float, np.ndarray]:
        asked = []
        for row in train:
            if not row["cands"]:
                continue
            top = sorted(scores_of(row, self.bias0, self.coef0), key=lambda t: -t[2])[:DEPTH]
            found = row["version"] == "answerable" and any(label for _, label, _ in top)
            asked.append({"version": row["version"], "cands": [["q", int(found), self.evidence(row)]]})
        bias, coef = fit_weights(asked)
        return anchor(asked, bias, coef, THRESHOLD, GOAL), coef

    def rescored(self, row: dict[str, Any], bias: float, coef: np.ndarray) -> dict[str, Any]:
        if not row["cands"]:
            return row
        z = self.logits(row)
        d = bias + float(np.dot(coef, self.evidence(row)))
        top = max(z)
        return {
            **row,
            "cands": [[doc, lab, [d + zi - top]] for (doc, lab, _), zi in zip(row["cands"], z, strict=True)],
        }

    def constants(self, bias: float, coef: np.ndarray) -> dict[str, float]:
        return {
            "bias": round(float(bias), 4),
            **dict(zip(("order", *self.evidence_of), (round(float(c), 4) for c in coef), strict=True)),
        }


def shipped_scorer(mode: str) -> Any:
    def score(row: dict[str, Any]) -> list[float]:
        return relevance.scores([values for _, _, values in row["cands"]], mode)

    return lambda _: score


def cell(k: int, n: int) -> dict[str, Any]:
    return {"rate": round(k / n, 4) if n else None, "of": n, "ci95": wilson(k, n)}


def measured(rows: Sequence[dict[str, Any]], constants: Any) -> dict[str, Any]:
    """figures at 0.7, the confidently answered unanswerable share, the curve and its best pair."""
    at = figures(rows, constants)
    silent = at["silent"]
    k_silent = round((silent["rate"] or 0.0) * silent["of"])
    points = []
    for threshold in CURVE:
        f = figures(rows, constants, threshold=threshold)
        points.append(
            {"threshold": threshold, "answered": f["answered"]["rate"], "silent": f["silent"]["rate"]}
        )
    return {
        "at_0.7": {
            key: at[key] for key in ("answered", "silent", "right_first", "right_in_3", "related_or_better")
        }
        | {"confident_unanswerable": cell(silent["of"] - k_silent, silent["of"])},
        "curve": points,
        "best_pair": best_pair(points),
    }


def best_pair(points: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    usable = [p for p in points if p["answered"] is not None and p["silent"] is not None]
    if not usable:
        return None
    meets = [p for p in usable if p["answered"] >= GOAL[0] and p["silent"] >= GOAL[1]]
    pick = max(meets or usable, key=lambda p: (min(p["answered"], p["silent"]), p["answered"] + p["silent"]))
    return {**pick, "meets_goal": bool(meets)}


def run(rows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    mine = [r for r in rows if r["mode"] == mode]
    vaults = sorted({r["set"] for r in mine})
    decision = Decision(mode)
    shipped = shipped_scorer(mode)
    # The fit on every vault's train questions: what the shipped decision was fitted on, so it
    # says whether today's evidence still gives the constants mdrag holds.
    all_train = [r for r in mine if r["split"] == "train"]
    refit = decision.constants(*decision.fit(all_train))
    result: dict[str, Any] = {
        "refit_on_all_train": {"trained_on": _counts(all_train), "decision": refit},
        "shipped_decision": relevance.DECISION[mode],
        "ways": WAYS,
        "vaults": {},
    }
    for vault in vaults:
        queries = vault_queries(vault)
        own = [r for r in mine if r["set"] == vault]
        # The order too is fitted without the vault (bench.orderfit): the shipped one was fitted
        # on every vault, this one included.
        order = fit_order([Question(r) for r in mine if r["set"] != vault and r["version"] == "answerable"])
        deciders = {way: Decision(mode, evidence, order) for way, (evidence, _) in DIAGNOSTIC.items()}
        deciders["lovo"] = Decision(mode, DECISION_SMALL, order)
        fitted_on = {
            way: [r for r in mine if r["set"] != vault and (r["split"] == "train" or wide)]
            for way, (_, wide) in {"lovo": (DECISION_SMALL, False), **DIAGNOSTIC}.items()
        }
        constants = {way: deciders[way].fit(rows_) for way, rows_ in fitted_on.items()}
        entry: dict[str, Any] = {
            "trained_on": _counts(fitted_on["lovo"]),
            "decision": decision.constants(*constants["lovo"]),
            "diagnostic_decisions": {way: deciders[way].constants(*constants[way]) for way in DIAGNOSTIC},
        }
        splits = {"test": [r for r in own if r["split"] == "test"], "all": own}
        for split, these in splits.items():
            scored = {way: [deciders[way].rescored(r, *constants[way]) for r in these] for way in constants}
            entry[split] = {
                "questions": _versions(these),
                "shipped": measured(these, shipped),
                **{way: measured(rows_, lambda _: ONE) for way, rows_ in scored.items()},
            }
            lovo = scored["lovo"]
            forms = sorted({queries.get(r["q"], {}).get("form", "natural") for r in these})
            if len(forms) > 1:
                entry[split]["by_form"] = {
                    form: {
                        "lovo": figures(
                            [r for r in lovo if queries.get(r["q"], {}).get("form", "natural") == form],
                            lambda _: ONE,
                        ),
                        "shipped": figures(
                            [r for r in these if queries.get(r["q"], {}).get("form", "natural") == form],
                            shipped,
                        ),
                    }
                    for form in forms
                }
            entry[split]["order_unchanged_by_decision"] = all(
                entry[split][way]["at_0.7"]["right_first"] == entry[split]["lovo"]["at_0.7"]["right_first"]
                for way in scored
            )
            # The ceiling the order leaves any decision: a right note among the first DEPTH.
            entry[split]["right_in_depth"] = figures(these, shipped, threshold=0.0)["answered"]
            # What an outcome means on this vault at 0.7: per level, the share whose first hit is right.
            entry[split]["levels"] = {
                "lovo": levels(lovo, lambda _: ONE),
                "shipped": levels(these, shipped),
            }
            # Threshold-free: how well the first hit's score parts answerable questions whose right
            # note is among the first DEPTH from unanswerable ones (AUC, 0.5 is chance).
            entry[split]["separation_auc"] = {
                "lovo": separation(lovo, lambda _: ONE),
                "shipped": separation(these, shipped),
            }
            found = {
                "lovo": misses(lovo, lambda _: ONE, queries),
                "shipped": misses(these, shipped, queries),
            }
            if split == "test":  # the questions are listed once, under `all`
                found = {way: {k: {"count": v["count"]} for k, v in m.items()} for way, m in found.items()}
            entry[split]["misses"] = found
        result["vaults"][vault] = entry
    summarize(result)
    return result


def _counts(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["set"]] = out.get(r["set"], 0) + 1
    return dict(sorted(out.items()))


def _versions(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {v: sum(r["version"] == v for r in rows) for v in ("answerable", "unanswerable")}


def summarize(result: dict[str, Any]) -> None:
    """Per split (test; all questions) and way: the worst vault (the lowest min(answered, silent)
    at 0.7, ties to the lower sum), the lowest of each rate, and the mean over vaults."""
    result["summary"] = {split: _summary(result, split) for split in ("test", "all")}


def _summary(result: dict[str, Any], split: str) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for way in WAYS:
        per = {v: e[split][way]["at_0.7"] for v, e in result["vaults"].items()}
        keys = ("answered", "silent", "confident_unanswerable", "right_first", "right_in_3")
        worst = min(
            per,
            key=lambda v: (
                min(per[v]["answered"]["rate"], per[v]["silent"]["rate"]),
                per[v]["answered"]["rate"] + per[v]["silent"]["rate"],
            ),
        )
        summary[way] = {
            "worst_vault": worst,
            "worst": {k: per[worst][k]["rate"] for k in keys},
            "lowest_each": {
                k: min((per[v][k]["rate"], v) for v in per)
                if k != "confident_unanswerable"
                else max((per[v][k]["rate"], v) for v in per)
                for k in keys
            },
            "mean": {k: round(float(np.mean([per[v][k]["rate"] for v in per])), 4) for k in keys},
            "vaults_meeting_goal_at_0.7": sorted(v for v in per if _meets(per[v])),
        }
    return summary


def _meets(at: dict[str, Any]) -> bool:
    return bool(at["answered"]["rate"] >= GOAL[0] and at["silent"]["rate"] >= GOAL[1])


def table(result: dict[str, Any], split: str) -> str:
    def r(c: dict[str, Any]) -> str:
        return f"{c['rate']:.2f} [{c['ci95'][0]:.2f}-{c['ci95'][1]:.2f}]"

    lines = [
        f"vault left out ({split}, n ans/unans) | LOVO answered | silent | conf. unans. |"
        " shipped answered | silent | conf. unans. | right first | LOVO best pair (t: a/s)",
        "--- | --- | --- | --- | --- | --- | --- | --- | ---",
    ]
    for vault, e in result["vaults"].items():
        t = e[split]
        lo, sh = t["lovo"]["at_0.7"], t["shipped"]["at_0.7"]
        bp = t["lovo"]["best_pair"]
        pair = f"{bp['threshold']:.2f}: {bp['answered']:.2f}/{bp['silent']:.2f}"
        pair += "" if bp["meets_goal"] else " (no pair meets)"
        q = t["questions"]
        lines.append(
            f"{vault} ({q['answerable']}/{q['unanswerable']}) | {r(lo['answered'])} | {r(lo['silent'])} | "
            f"{r(lo['confident_unanswerable'])} | {r(sh['answered'])} | {r(sh['silent'])} | "
            f"{r(sh['confident_unanswerable'])} | {lo['right_first']['rate']:.2f} | {pair}"
        )
    for way in WAYS:
        s = result["summary"][split][way]
        lines.append(
            f"{way}: worst vault {s['worst_vault']} {s['worst']}; mean {s['mean']}; "
            f"meeting 0.65/0.80 at 0.7: {s['vaults_meeting_goal_at_0.7']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [row for path in args.dumps for row in load(path)]
    others = sorted({r["set"] for r in rows} - set(vault_names()))
    if others:  # SciFact and another writer's questions (natural) are never fitted on here
        print(f"left out, not a judged vault: {', '.join(others)}")
        rows = [r for r in rows if r["set"] not in others]
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "mode": args.mode,
        "dumps": [p.name for p in args.dumps],
        "threshold": THRESHOLD,
        **run(rows, args.mode),
    }
    for split in ("test", "all"):
        print(table(result, split), end="\n\n")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

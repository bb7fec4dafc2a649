"""The judge held out a vault at a time: its rerank of the first notes and its word in the answer.

    python -m bench.judge.lovo_eval SCORES.json [--first 3] [--data .judge/data.json.gz]

SCORES is the device run's `scores.json` (bench.judge.device_train), read beside the pairs it
scored. For each vault V, every score comes from the judge trained without V. The order is the one
fitted without V (bench.judge.lovo_pairs' orders.json). Reranking: the first FIRST notes are
reordered by order logit + w x judge logit. w is the one of 0 .. 2 that puts a right note first
most often over the other vaults' questions, scored by their own judges. The decision is
bench.lovo's small decision, fitted on the other vaults' train questions three ways: over the
LOVO order (`lovo`), over the reranked order (`rerank`), and the reranked order with the judge's
logit of the first hit as one more piece of evidence (`judge`). Per vault: a right page first and
in the first three, answered and silent at 0.7, on the test split and on all its questions. The
paste check: how far pasting the question (whole, or its words shuffled) into an unanswerable
question's first section lifts the judge's logit, beside the gap between right and wrong sections.
Pairwise: over the vault's answerable questions, the share of (right, wrong) candidate sections of
a question that the judge's logit orders right, the order's logit beside it (ties count half).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from bench.judge.lovo_pairs import DEVICE_IN, WORK, notes_in_order, rows
from bench.judged_data import vault_names
from bench.lovo import ONE, Decision, measured
from bench.vaultfit import DECISION_SMALL

WEIGHTS = np.round(np.linspace(0, 2, 41), 3)


class JudgedDecision(Decision):
    """The small decision over the order reranked by the judge, with its logit as evidence or not."""

    def __init__(self, order: np.ndarray, w: float, first: int, with_judge: bool) -> None:
        super().__init__("hybrid", DECISION_SMALL, order)
        self.w, self.first, self.with_judge = w, first, with_judge

    def logits(self, row: dict[str, Any]) -> list[float]:
        z = np.asarray(super().logits(row))
        top = [i for _, i in notes_in_order(row, self.coef0)][: self.first]
        out = z.copy()
        out[top] = z[top] + self.w * np.asarray(row["judge"])[top]
        rest = [i for i in range(len(z)) if i not in set(top)]
        if rest:  # the others stay below the judged notes, in their own order
            out[rest] = out[top].min() - 1.0 - (z[rest].max() - z[rest])
        return [float(v) for v in out]

    def evidence(self, row: dict[str, Any]) -> list[float]:
        found = super().evidence(row)
        if self.with_judge:
            found.append(row["judge"][int(np.argmax(self.logits(row)))])
        return found


def firsts(row: dict[str, Any], order: np.ndarray, w: float, first: int) -> tuple[bool, bool]:
    notes = [
        (row["cands"][i][1], float(np.dot(order, row["cands"][i][2])), row["judge"][i])
        for _, i in notes_in_order(row, order)
    ]
    ranked = sorted(notes[:first], key=lambda n: -(n[1] + w * n[2])) + notes[first:]
    return bool(ranked[0][0]), any(n[0] for n in ranked[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scores", type=Path)
    parser.add_argument("--first", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DEVICE_IN / "data.json.gz")
    args = parser.parse_args()
    with gzip.open(args.data, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    orders = {v: np.asarray(c) for v, c in json.loads((WORK / "orders.json").read_text()).items()}
    result: dict[str, Any] = {}
    all_rows = list(rows())  # each config's judge scores are set on them in turn
    for config, per_vault in json.loads(args.scores.read_text()).items():
        judged: dict[tuple[str, str], float] = {}
        for vault in vault_names():
            pairs = data["folds"][vault]["score"]
            judged |= {
                (q, data["texts"][s]): z for (q, s), z in zip(pairs, per_vault[vault]["score"], strict=True)
            }
        for row in all_rows:
            row["judge"] = [judged[(row["text"], t)] for t in row["texts"]]
        result[config] = {
            v: one_vault(v, all_rows, orders[v], per_vault[v], args.first) for v in vault_names()
        }
        print(table(config, result[config]))
    (WORK / f"eval-first{args.first}.json").write_text(json.dumps(result, indent=1))


def one_vault(
    vault: str, all_rows: list[dict[str, Any]], order: np.ndarray, scores: dict[str, Any], first: int
) -> dict[str, Any]:
    def answerable(r: dict[str, Any]) -> bool:
        return r["version"] == "answerable" and bool(r["cands"])

    other = [r for r in all_rows if answerable(r) and r["set"] != vault]
    w = float(WEIGHTS[int(np.argmax([sum(firsts(r, order, w, first)[0] for r in other) for w in WEIGHTS]))])
    out: dict[str, Any] = {"w": w}
    ways = {
        "lovo": Decision("hybrid", DECISION_SMALL, order),
        "rerank": JudgedDecision(order, w, first, False),
        "judge": JudgedDecision(order, w, first, True),
    }
    fitted = {
        k: d.fit([r for r in all_rows if r["set"] != vault and r["split"] == "train"])
        for k, d in ways.items()
    }
    for split in ("test", "all"):
        own = [r for r in all_rows if r["set"] == vault and (split == "all" or r["split"] == "test")]
        held = [r for r in own if answerable(r)]
        ranked = {
            "before": [firsts(r, order, 0.0, first) for r in held],
            "judge": [firsts(r, order, w, first) for r in held],
        }
        out[split] = {
            "questions": len(held),
            "right_first": {k: sum(f for f, _ in v) for k, v in ranked.items()},
            "right_in_3": {k: sum(t for _, t in v) for k, v in ranked.items()},
        }
        for way, decider in ways.items():
            at = measured([decider.rescored(r, *fitted[way]) for r in own], lambda _: ONE)["at_0.7"]
            out[split][way] = {k: at[k]["rate"] for k in ("answered", "silent")}
    plain = np.asarray(scores["paste_plain"])
    right = [
        z for r in all_rows if r["set"] == vault for z, c in zip(r["judge"], r["cands"], strict=True) if c[1]
    ]
    wrong = [
        z
        for r in all_rows
        if r["set"] == vault
        for z, c in zip(r["judge"], r["cands"], strict=True)
        if not c[1]
    ]
    asked = [r for r in all_rows if r["set"] == vault and answerable(r)]
    out["pairwise"] = {
        "order": pairwise([(np.asarray([c[2] for c in r["cands"]]) @ order).tolist(), r] for r in asked),
        "judge": pairwise([r["judge"], r] for r in asked),
    }
    out["paste"] = {
        "whole": round(float(np.mean(np.asarray(scores["paste_pasted"]) - plain)), 2),
        "shuffled": round(
            float(np.mean(np.asarray(scores.get("paste_shuffled", scores["paste_pasted"])) - plain)), 2
        ),
        "right_minus_wrong": round(float(np.mean(right) - np.mean(wrong)), 2),
    }
    return out


def pairwise(scored: Any) -> float:
    """The mean over questions of the share of their (right, wrong) sections in the right order."""
    shares = []
    for z, row in scored:
        right = np.asarray([c[1] for c in row["cands"]], dtype=bool)
        if right.all() or not right.any():
            continue
        a, b = np.asarray(z)[right][:, None], np.asarray(z)[~right][None, :]
        shares.append(float(((a > b) + 0.5 * (a == b)).mean()))
    return round(float(np.mean(shares)), 3)


def table(config: str, per_vault: dict[str, Any]) -> str:
    head = ["vault", "w", "test: first", "in 3", "answered", "silent", "all: first", "paste lift / gap"]
    head.append("pairwise: order / judge")
    lines = [f"## {config}", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for vault, v in per_vault.items():
        t, a, p = v["test"], v["all"], v["paste"]

        def moved(part: dict[str, Any], key: str, before: str = "before", after: str = "judge") -> str:
            return f"{part[key][before]} -> {part[key][after]}"

        answered = f"{t['lovo']['answered']} -> {t['judge']['answered']}"
        silent = f"{t['lovo']['silent']} -> {t['judge']['silent']}"
        cells = (
            vault,
            str(v["w"]),
            f"{moved(t, 'right_first')} of {t['questions']}",
            moved(t, "right_in_3"),
            answered,
            silent,
            f"{moved(a, 'right_first')} of {a['questions']}",
            f"{p['whole']} (shuffled {p['shuffled']}) / {p['right_minus_wrong']}",
            f"{v['pairwise']['order']} / {v['pairwise']['judge']}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

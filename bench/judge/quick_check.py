"""Quick read of one cross-fitted judge on its held-out train questions.

Out-of-fold AUC on the fold's train questions (answerable with a relevant hit vs unanswerable),
judge top-1 logit vs mdrag's top confidence, and at hit level among the top 3.

usage: python -m bench.judge.quick_check FOLD   (reads .eval-work/judge/model_fold<FOLD>)
"""

from __future__ import annotations

import sys

from bench.judge import common as C
from bench.judge.evaluate import auc, fold_of, judge, load_rows, score_rows


def main() -> None:
    f = int(sys.argv[1])
    rows = [r for r in load_rows() if r["group"] == "train" and fold_of(r["q"]) == f]
    score_rows(rows, judge(str(C.DATA / f"model_fold{f}")), "j")
    pos = [r for r in rows if r["answerable"] and r["reachable"]]
    neg = [r for r in rows if not r["answerable"]]
    print("n", len(pos), len(neg))
    print("judge top1 AUC", round(auc([r["j"][0] for r in pos], [r["j"][0] for r in neg]), 3))
    print("judge max3 AUC", round(auc([max(r["j"]) for r in pos], [max(r["j"]) for r in neg]), 3))
    print(
        "score AUC", round(auc([r["hits"][0]["conf"] for r in pos], [r["hits"][0]["conf"] for r in neg]), 3)
    )
    # per-hit: does the judge separate relevant from non-relevant hits among the top 3?
    rel = [r["j"][k] for r in rows for k, h in enumerate(r["hits"][:3]) if h["rel"]]
    non = [r["j"][k] for r in rows for k, h in enumerate(r["hits"][:3]) if not h["rel"]]
    print("hit-level AUC relevant vs not", round(auc(rel, non), 3), len(rel), len(non))


if __name__ == "__main__":
    main()

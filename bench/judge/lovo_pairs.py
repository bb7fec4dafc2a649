"""The judge's pairs, a vault left out at a time, from bench.judge.lovo_dump's rows.

    python -m bench.judge.lovo_pairs     # writes .judge/data.json.gz, the device run's input

For each judged vault V (and `all`, every vault, for a judge that would ship): the order fitted
without V (bench.orderfit.fit_order on the other vaults' answerable questions) ranks each row's
sections by note. Training pairs come from the other vaults' rows: each note's best section,
labelled right or wrong, for the first NEGATIVES + 1 notes and every right note among the
candidates. Scored pairs are every section of V's rows, so the judge fitted without V scores all
of V. The paste check's pairs are each of V's unanswerable rows with its first section.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.judged_data import vault_names
from bench.orderfit import Question, fit_order

REPO = Path(__file__).resolve().parents[2]
WORK = REPO / ".eval-work" / "judge-lovo"  # the dumps, the orders and the device run's scores
DEVICE_IN = REPO / ".judge"  # what the device run reads: data.json.gz, model/ (git-excluded)
NEGATIVES = 7
TEXT_CHARS = 1500  # a 256-piece input reads about 1,000 characters


def section_text(info: dict[str, str]) -> str:
    """What the judge reads of a section: its note's title, its heading path, its text."""
    return f"{info['title']}\n{info['path']}\n{info['text']}"[:TEXT_CHARS]


def rows() -> Iterator[dict[str, Any]]:
    """Every dumped row, its candidates' texts moved to `texts` (bench.lovo's three-element cands)."""
    for vault in vault_names():
        with (WORK / f"dump-{vault}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                row["texts"] = [section_text(c[3]) for c in row["cands"]]
                row["cands"] = [c[:3] for c in row["cands"]]
                yield row


def notes_in_order(row: dict[str, Any], coef: np.ndarray) -> list[tuple[str, int]]:
    """Distinct notes in this order, each with its best section's index."""
    if not row["cands"]:
        return []
    z = np.asarray([c[2] for c in row["cands"]], dtype=float) @ coef
    seen: dict[str, int] = {}
    for i in np.argsort(-z, kind="stable"):
        seen.setdefault(row["cands"][i][0], int(i))
    return list(seen.items())


def orders(all_rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Per vault left out (and `all`), the order fitted on the other vaults' answerable questions."""
    asked = [Question(r) for r in all_rows if r["version"] == "answerable"]
    return {v: fit_order([q for q in asked if q.vault != v]) for v in [*vault_names(), "all"]}


def main() -> None:
    all_rows = list(rows())
    coefs = orders(all_rows)
    texts: list[str] = []
    index: dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in index:
            index[text] = len(texts)
            texts.append(text)
        return index[text]

    folds: dict[str, Any] = {}
    for vault, coef in coefs.items():
        train, seen = [], set()
        for row in all_rows:
            if row["set"] == vault:
                continue
            for rank, (_, i) in enumerate(notes_in_order(row, coef)):
                right = row["cands"][i][1]
                key = (row["text"], sid(row["texts"][i]))
                if (right or rank <= NEGATIVES) and key not in seen:
                    seen.add(key)
                    train.append([*key, right])
        own = [r for r in all_rows if r["set"] == vault]
        scored = sorted({(r["text"], sid(t)) for r in own for t in r["texts"]})
        paste = [
            [r["text"], sid(r["texts"][notes_in_order(r, coef)[0][1]])]
            for r in own
            if r["version"] == "unanswerable" and r["cands"]
        ]
        folds[vault] = {"train": train, "score": [list(p) for p in scored], "paste": paste}
        print(
            f"{vault}: {len(train)} training pairs ({sum(p[2] for p in train)} right), {len(scored)} scored"
        )
    DEVICE_IN.mkdir(exist_ok=True)
    with gzip.open(DEVICE_IN / "data.json.gz", "wt", encoding="utf-8") as fh:
        json.dump({"texts": texts, "folds": folds}, fh)
    (WORK / "orders.json").write_text(json.dumps({v: c.tolist() for v, c in coefs.items()}))
    print(f"{len(texts)} sections", file=sys.stderr)


if __name__ == "__main__":
    main()

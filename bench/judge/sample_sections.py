"""Sample sections of powershell/eips/tldr pages for hand-written paraphrase questions.

A page judged relevant to a test question is never sampled. Writes .eval-work/judge/sampled_sections.jsonl;
the questions written on them are bench/data/judge/paraphrases.tsv and near_misses.tsv.

usage: python -m bench.judge.sample_sections
"""

from __future__ import annotations

import json
import random

from bench.judge import common as C


def main() -> None:
    rng = random.Random(32)
    with (C.work_dir() / "sampled_sections.jsonl").open("w", encoding="utf-8") as out:
        for vault, n in (("powershell", 45), ("eips", 40), ("tldr", 45)):
            qs, rels = C.queries(vault), C.qrels(vault)
            banned = {d for q, r in rels.items() if qs.get(q, {}).get("split") == "test" for d in r}
            notes = C.vault_notes(vault)
            files = sorted(str(p.relative_to(notes.parent)) for p in notes.rglob("*.md"))
            files = [f for f in files if f not in banned]
            rng.shuffle(files)
            k = 0
            for f in files:
                wins = [w for w in C.windows(f) if len(w.split()) > 40]
                if not wins:
                    continue
                w = rng.choice(wins[:6])
                out.write(json.dumps({"sid": f"{vault}-s{k:03d}", "doc": f, "text": w}) + "\n")
                k += 1
                if k >= n:
                    break


if __name__ == "__main__":
    main()

"""Find confusable negatives for the hand-written questions by mdrag's dense search.

For each hand-written paraphrase question (bench/data/judge/paraphrases.tsv) and near miss
(bench/data/judge/near_misses.tsv), run mdrag's dense search over its vault and keep the top
sections on other pages as confusable negatives. Writes .eval-work/judge/synthetic.jsonl.

usage: python -m bench.judge.neighbours
"""

from __future__ import annotations

import json
from typing import Any

from bench.judge import common as C
from bench.judged_data import doc_ids


def main() -> None:
    with (C.DATA / "sampled_sections.jsonl").open(encoding="utf-8") as fh:
        sections = {s["sid"]: s for s in map(json.loads, fh)}
    rows: list[dict[str, Any]] = []
    for fname, label in (("paraphrases.tsv", 1), ("near_misses.tsv", 0)):
        with (C.HAND / fname).open(encoding="utf-8") as fh:
            for line in fh:
                sid, q = line.rstrip("\n").split("\t")
                rows.append({"sid": sid, "question": q, "label": label, "vault": sid.split("-s")[0]})
    with (C.work_dir() / "synthetic.jsonl").open("w", encoding="utf-8") as out:
        for vault in C.TRAIN_VAULTS:
            mine = [r for r in rows if r["vault"] == vault]
            service, root = C.open_vault(vault, tries=30)
            ids = doc_ids(root)
            try:
                for r in mine:
                    sec = sections[r["sid"]]
                    resp = service.search(
                        {"query": r["question"], "top_k": 8, "threshold": 0.0, "mode": "dense"}
                    )
                    negs: list[dict[str, str]] = []
                    seen: set[str] = set()
                    for h in resp["results"]:
                        doc = ids.get(h["file_path"], "")
                        if doc == sec["doc"] or doc in seen:
                            continue
                        seen.add(doc)
                        negs.append({"doc": doc, "text": h.get("section_text") or h["snippet"]["text"]})
                        if len(negs) >= 3:
                            break
                    r.update(passage=sec["text"], doc=sec["doc"], negatives=negs)
                    out.write(json.dumps(r) + "\n")
            finally:
                service.close()
            print(vault, len(mine), flush=True)


if __name__ == "__main__":
    main()

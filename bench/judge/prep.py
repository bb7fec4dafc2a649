"""Collect mdrag's own hybrid-search candidates for every question of the judge's vaults.

Per question: mdrag's own hybrid search (top 10 hits, threshold 0) with each hit's note,
relevance, confidence_score and section_text; for train answerable questions also a positive
passage: the best-ranked hit on a grade-2 page in a deeper search (top 50), else the grade-2
page's window closest to the question by the bi-encoder.

usage: python -m bench.judge.prep VAULT...   -> .eval-work/judge/cands_VAULT.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import Any

from bench.judge import common as C
from bench.judged_data import doc_ids


def hit_row(h: dict[str, Any], ids: dict[str, str], relevant: set[str]) -> dict[str, Any]:
    doc = ids.get(h["file_path"], h["file_path"])
    return {
        "doc": doc,
        "rel": int(doc in relevant),
        "conf": float(h["confidence_score"]),
        "sim": float(h.get("similarity") or 0.0),
        "text": h.get("section_text") or h["snippet"]["text"],
        "snippet": h["snippet"]["text"],
    }


def main(vaults: list[str]) -> None:
    for vault in vaults:
        qs, rels = C.queries(vault), C.qrels(vault)
        service, root = C.open_vault(vault, tries=60)
        ids = doc_ids(root)
        try:
            with (C.work_dir() / f"cands_{vault}.jsonl").open("w", encoding="utf-8") as out:
                for qid, q in qs.items():
                    relevant = {d for d, g in rels.get(qid, {}).items() if g > 0}
                    grade2 = {d for d, g in rels.get(qid, {}).items() if g == 2}
                    resp = service.search(
                        {"query": q["text"], "top_k": 10, "threshold": 0.0, "mode": "hybrid"}
                    )
                    hits = [hit_row(h, ids, relevant) for h in resp["results"]]
                    row: dict[str, Any] = {
                        "q": qid,
                        "vault": vault,
                        "text": q["text"],
                        "answerable": bool(q["answerable"]),
                        "kind": q.get("kind"),
                        "split": q["split"],
                        "hits": hits,
                        "positives": [],
                    }
                    if q["split"] == "train" and grade2:
                        deep = service.search(
                            {"query": q["text"], "top_k": 50, "threshold": 0.0, "mode": "hybrid"}
                        )
                        found: set[str] = set()
                        for h in deep["results"]:
                            r = hit_row(h, ids, relevant)
                            if r["doc"] in grade2 and r["doc"] not in found:
                                found.add(r["doc"])
                                row["positives"].append({"doc": r["doc"], "text": r["text"], "how": "search"})
                        for d in sorted(grade2 - found):
                            win, _ = C.best_window(q["text"], d)
                            if win:
                                row["positives"].append({"doc": d, "text": win, "how": "window"})
                    out.write(json.dumps(row) + "\n")
        finally:
            service.close()
        print(vault, "done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

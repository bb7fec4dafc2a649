"""Every judged question's hybrid candidates with each section's text, for the judge held out by vault.

    python -m bench.judge.lovo_dump VAULT [--out .eval-work/judge-lovo/dump-VAULT.jsonl]

The rows of `python -m bench.fit dump --set VAULT --modes hybrid`, cut to a default search's ten
hits (the first hits come out as bench.lovo's), each with a fourth element: its note's title, its
heading path, its file and the first 2,400 characters of its text; and each row with the
question's text.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench import eval as ev
from bench.answerability import DEPTH
from bench.judge.lovo_pairs import WORK
from bench.judged_data import doc_ids, judged_set, write_dump
from mdrag.log import configure_logging
from mdrag.params.search import SearchParams
from mdrag.retrieval.search import CANDIDATE_FACTOR

TEXT_CHARS = 2400  # more than a 256-piece judge input reads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or WORK / f"dump-{args.vault}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    configure_logging("WARNING")
    judged = judged_set(args.vault)
    service, root, _ = ev.open_set(judged, ev.config_for(None))
    ids = doc_ids(root)

    def one(qid: str, text: str) -> list[str]:
        relevant = {d for d, g in judged.qrels.get(qid, {}).items() if g > 0}
        versions: list[tuple[str, set[str] | None]] = [("unanswerable", None)]
        if relevant:
            versions = [("answerable", None)] + ([("unanswerable", relevant)] if judged.twins else [])
        lines = []
        for version, drop in versions:
            leave = None if drop is None else (lambda p, drop=drop: ids.get(p) in drop)
            params = SearchParams.parse(
                {"query": text, "top_k": DEPTH, "threshold": 0.0, "mode": "hybrid", "explain": True},
                service.search_defaults(),
            )
            found = service.searcher.search(
                params, leave_out=leave, pool=DEPTH * CANDIDATE_FACTOR + 10, as_scored=True
            )
            cands: list[Any] = [
                [
                    ids.get(h.file_path),
                    int(ids.get(h.file_path) in relevant),
                    list(h.explain["evidence"].values()),
                    {
                        "title": h.metadata["title"],
                        "path": h.heading_path,
                        "file": h.file_path,
                        "text": h.section_text[:TEXT_CHARS],
                    },
                ]
                for h in found.results
                if h.explain
            ]
            row = {"q": qid, "text": text, "mode": "hybrid", "version": version, "set": args.vault}
            row |= {"split": "test" if qid in judged.sealed else "train", "cands": cands}
            lines.append(json.dumps(row))
        return lines

    try:
        write_dump(out, judged.queries, one, 2, f"{args.vault} ")
    finally:
        service.close()


if __name__ == "__main__":
    main()

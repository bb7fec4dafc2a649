"""The judged sets on disk: SciFact's test questions, the natural set and the vaults under
bench/data/vaults, each with its questions, judgments, sealed split and notes."""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import corpora

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DATA = SHARED / "scifact"
NATURAL = Path(__file__).resolve().parent / "data" / "natural"
VAULTS = Path(__file__).resolve().parent / "data" / "vaults"


def vault_names() -> tuple[str, ...]:
    """The judged vaults whose questions are written (a vault folder may hold its corpus alone)."""
    if not VAULTS.exists():
        return ()
    return tuple(sorted(p.name for p in VAULTS.iterdir() if (p / "queries.jsonl").exists()))


def vault_queries(name: str) -> dict[str, dict[str, Any]]:
    """A judged vault's questions by id (empty for a vault with none written)."""
    path = VAULTS / name / "queries.jsonl"
    if not path.exists():
        return {}
    with path.open(encoding="utf-8") as handle:
        return {str(q["_id"]): q for q in map(json.loads, handle)}


SETS = ("scifact", "natural", *vault_names())


@dataclass
class JudgedSet:
    name: str
    corpus: corpora.Corpus
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    twins: bool  # unanswerable = each answerable query again without its relevant notes
    sealed: frozenset[str] = frozenset()  # the test split: reported, never fitted on


def judged_set(name: str, limit: int = 0) -> JudgedSet:
    if name == "scifact":
        queries = load_queries(DATA / "queries.test.jsonl")
        qrels = load_qrels(DATA / "qrels.test.tsv")
        kept = [q for q in queries if q in qrels][: limit or None]
        return JudgedSet(
            name, corpora.scifact(DATA / "notes.tar.gz"), {q: queries[q] for q in kept}, qrels, True
        )
    folder = NATURAL if name == "natural" else VAULTS / name
    queries = load_queries(folder / "queries.jsonl")
    qrels = load_qrels(folder / "qrels.tsv")
    kept = list(queries)[: limit or None]
    corpus = corpora.natural(folder, SHARED, name)
    return JudgedSet(name, corpus, {q: queries[q] for q in kept}, qrels, False, sealed_ids(folder))


def sealed_ids(folder: Path) -> frozenset[str]:
    """The ids of a set's questions in its sealed test split (`"split": "test"`)."""
    with (folder / "queries.jsonl").open(encoding="utf-8") as handle:
        return frozenset(str(q["_id"]) for q in map(json.loads, handle) if q.get("split") == "test")


def load_queries(path: Path) -> dict[str, str]:
    with path.open(encoding="utf-8") as handle:
        return {str(q["_id"]): q["text"] for q in map(json.loads, handle) if q.get("text")}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[str(row["query-id"])][str(row["corpus-id"])] = int(row["score"])
    return qrels


def doc_ids(root: Path) -> dict[str, str]:
    """file path -> the note's corpus id: its frontmatter doc_id (BEIR), else its path under root."""
    from mdrag.notes.frontblock import split_frontmatter

    ids = {}
    for path in root.rglob("*.md"):
        try:
            frontmatter = split_frontmatter(path.read_text(encoding="utf-8"))[0]
        except Exception:  # a note mdrag cannot read keeps its path id; the indexer reports it
            frontmatter = {}
        doc = frontmatter.get("doc_id") if isinstance(frontmatter, dict) else None
        ids[str(path.resolve())] = str(doc) if doc is not None else str(path.relative_to(root))
    return ids


def write_dump(
    path: Path, queries: dict[str, str], one: Callable[[str, str], list[str]], threads: int, label: str = ""
) -> None:
    """Each question's dump lines (`one(qid, text)`) into `path` as they come, a few questions at
    once (the engine and the model release the GIL), with progress on stderr every 50."""
    with path.open("w", encoding="utf-8") as out, ThreadPoolExecutor(threads) as pool:
        for n, lines in enumerate(pool.map(lambda item: one(*item), queries.items())):
            out.write("".join(line + "\n" for line in lines))
            if n % 50 == 0:
                print(f"{label}{n}/{len(queries)}", file=sys.stderr, flush=True)

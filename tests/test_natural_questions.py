"""The judged natural-question set in bench/data/natural parses and is consistent with its corpus."""

from __future__ import annotations

import csv
import fnmatch
import functools
import json
import re
import tarfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent / "bench" / "data" / "natural"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def member_id(name: str) -> str:
    """An archive member's path as corpus.json's include patterns and doc ids use it (no leading ./)."""
    return name[2:] if name.startswith("./") else name


def load_queries() -> list[dict]:
    with (HERE / "queries.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_qrels() -> list[dict]:
    with (HERE / "qrels.tsv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def test_queries_have_unique_ids_text_and_an_answerable_flag():
    queries = load_queries()
    ids = [q["_id"] for q in queries]
    assert len(ids) == len(set(ids))
    for query in queries:
        assert isinstance(query["text"], str) and query["text"].strip()
        assert isinstance(query["answerable"], bool)


def test_the_set_has_at_least_60_questions_and_a_third_unanswerable():
    queries = load_queries()
    unanswerable = [q for q in queries if not q["answerable"]]
    assert len(queries) >= 60
    assert 3 * len(unanswerable) >= len(queries)


def test_qrels_have_the_beir_header_and_scores_of_one_or_two():
    with (HERE / "qrels.tsv").open(encoding="utf-8") as handle:
        assert handle.readline().rstrip("\n").split("\t") == ["query-id", "corpus-id", "score"]
    rows = load_qrels()
    assert rows
    assert {row["score"] for row in rows} <= {"1", "2"}
    pairs = [(row["query-id"], row["corpus-id"]) for row in rows]
    assert len(pairs) == len(set(pairs))


def test_every_answerable_question_has_one_best_note_and_unanswerable_ones_have_none():
    judged: dict[str, list[int]] = {}
    for row in load_qrels():
        judged.setdefault(row["query-id"], []).append(int(row["score"]))
    queries = {q["_id"]: q for q in load_queries()}
    assert set(judged) <= set(queries), "qrels name a query that queries.jsonl lacks"
    for qid, query in queries.items():
        if query["answerable"]:
            assert judged.get(qid), f"{qid} is answerable but has no judged note"
            assert judged[qid].count(2) == 1, f"{qid} should have exactly one best note (score 2)"
        else:
            assert qid not in judged, f"{qid} is unanswerable but has judged notes"


def test_answerable_questions_spread_over_many_notes():
    notes = {row["corpus-id"] for row in load_qrels()}
    answerable = sum(q["answerable"] for q in load_queries())
    assert len(notes) >= answerable * 2 // 3
    assert {doc.split("/", 1)[0] for doc in notes} == {"powershell", "eips"}


@functools.lru_cache(maxsize=1)
def corpus_members() -> dict[str, dict[str, bytes]]:
    """Source name -> {archive member path: its bytes} for the members its include patterns select."""
    sources = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))["sources"]
    selected: dict[str, dict[str, bytes]] = {}
    for source in sources:
        archive = SHARED / source["archive"]
        if not archive.exists():
            pytest.skip(f"corpus archive {archive} is not on this machine")
        paths, chosen = [], {}
        with tarfile.open(archive, "r|gz") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                path = member_id(member.name)
                paths.append(path)
                if any(fnmatch.fnmatch(path, pattern) for pattern in source["include"]):
                    chosen[path] = tar.extractfile(member).read()
        for pattern in source["include"]:
            assert any(fnmatch.fnmatch(p, pattern) for p in paths), f"{pattern} matches nothing in {archive}"
        selected[source["name"]] = chosen
    return selected


def test_every_judged_note_is_in_the_corpus_that_corpus_json_selects():
    ids = {f"{name}/{path}" for name, members in corpus_members().items() for path in members}
    missing = sorted({row["corpus-id"] for row in load_qrels()} - ids)
    assert not missing, f"judged notes outside the corpus: {missing}"


def test_corpus_json_selects_a_few_hundred_markdown_notes_small_enough_to_index_quickly():
    selected = corpus_members()
    assert set(selected) == {"powershell", "eips"}
    paths = [path for members in selected.values() for path in members]
    assert all(path.endswith(".md") for path in paths)
    assert 300 <= len(paths) <= 600
    assert sum(len(text) for members in selected.values() for text in members.values()) <= 6_000_000


def test_the_eips_in_the_corpus_are_exactly_the_final_ones():
    selected = set(corpus_members()["eips"])  # first: it skips where the archives are absent
    source = next(
        s
        for s in json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))["sources"]
        if s["name"] == "eips"
    )
    final = set()
    with tarfile.open(SHARED / source["archive"], "r|gz") as tar:
        for member in tar:
            if (
                member.isfile()
                and member.name.endswith(".md")
                and re.search(rb"^status: Final\s*$", tar.extractfile(member).read(), re.M)
            ):
                final.add(member_id(member.name))
    assert final and selected == final

"""Shards: a Milvus Lite index keeps its vectors in several databases and searches them all at once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import write

from mdrag.keys import doc_id
from mdrag.milvus.shards import LITE_SHARDS, best_hits, shard_of, shard_paths

TOPICS = {
    "bread": "# Sourdough\n\nFeed the starter flour and water every day; bake when it doubles.\n",
    "git": "# Rebasing\n\nA rebase replays your commits on top of another branch.\n",
    "tea": "# Green tea\n\nSteep green tea at 80 degrees for two minutes, never boiling.\n",
    "bikes": "# Chains\n\nClean and oil a bicycle chain every few hundred kilometres.\n",
    "sleep": "# Naps\n\nA twenty minute nap restores alertness without grogginess.\n",
    "taxes": "# Receipts\n\nKeep receipts for deductible expenses for seven years.\n",
}


@pytest.fixture()
def milvus_uri(tmp_path: Path) -> str:
    """Shards are Milvus Lite's: a server spreads a collection over its own nodes."""
    return str(tmp_path / "index" / "milvus.db")


def test_shard_files_sit_beside_the_index():
    assert shard_paths(Path("/n/milvus.db"), 3) == [
        Path("/n/milvus.db"),
        Path("/n/milvus.shard1.db"),
        Path("/n/milvus.shard2.db"),
    ]


def test_notes_spread_evenly_and_each_note_has_one_shard():
    counts = Counter(shard_of(doc_id(f"notes/day-{i}.md"), 2) for i in range(2000))
    assert 900 < counts[0] < 1100 and counts[0] + counts[1] == 2000
    assert shard_of(doc_id("a.md"), 2) == shard_of(doc_id("a.md"), 2)


def test_the_best_hits_of_all_shards_come_first():
    per_shard = [
        [{"id": "a", "distance": 0.9}, {"id": "b", "distance": 0.5}],
        [{"id": "c", "distance": 0.7}, {"id": "d", "distance": 0.6}],
    ]
    assert [m["id"] for m in best_hits(per_shard, 3)] == ["a", "c", "d"]
    assert best_hits([[{"id": "a", "distance": 0.1}]], 5) == [{"id": "a", "distance": 0.1}]


def spread_notes(notes: Path) -> dict[str, str]:
    """Write TOPICS so that the notes take turns over the shards (a note's shard hashes its path)."""
    paths = {}
    for turn, (name, text) in enumerate(TOPICS.items()):
        path = next(
            p
            for k in range(1000)
            if shard_of(doc_id(p := str(notes / f"{name}-{k}.md")), LITE_SHARDS) == turn % LITE_SHARDS
        )
        paths[name] = str(write(Path(path), text))
    return paths


def shard_rows(store) -> list[set[str]]:
    """The notes (doc_ids) whose rows each shard's database holds."""
    return [
        {row["doc_id"] for row in store._engine.iterate("document_vectors", ["doc_id"], client=client)}
        for client in store._db.clients
    ]


def test_a_lite_index_spreads_notes_over_its_shards_and_a_search_finds_them_in_each(make_service, notes):
    paths = spread_notes(notes)
    service = make_service([notes])
    service.reindex()
    store = service.store
    assert len(store._db.clients) == LITE_SHARDS and LITE_SHARDS >= 2
    assert service.status()["store"]["shards"] == LITE_SHARDS
    held = shard_rows(store)
    for path in paths.values():  # every note in exactly its own shard
        assert [doc_id(path) in rows for rows in held].count(True) == 1
        assert doc_id(path) in held[shard_of(doc_id(path), LITE_SHARDS)]
    assert all(len(rows) >= 2 for rows in held)
    for name, query in [("bread", "sourdough starter"), ("git", "rebase commits"), ("tea", "steeping tea")]:
        for mode in ("dense", "keyword", "hybrid"):
            found = service.search({"query": query, "threshold": 0.3, "mode": mode})["results"]
            assert found and found[0]["file_path"] == paths[name], (name, mode)
    everything = service.search({"query": "daily habits", "threshold": 0.0, "top_k": 20, "mode": "dense"})
    found = everything["results"]
    scores = [hit["confidence_score"] for hit in found]
    assert scores == sorted(scores, reverse=True)  # one ranking, merged from both shards
    assert {shard_of(doc_id(hit["file_path"]), LITE_SHARDS) for hit in found} == set(range(LITE_SHARDS))

    Path(paths["tea"]).write_text(TOPICS["tea"].replace("green", "black"))  # an update and a delete,
    Path(paths["git"]).unlink()  # each in its note's own shard
    service.reindex()
    held = shard_rows(store)
    assert doc_id(paths["git"]) not in set().union(*held)
    assert store.count_vectors() == len(TOPICS) - 1
    assert service.search({"query": "black tea", "threshold": 0.3})["results"][0]["file_path"] == paths["tea"]


def test_an_index_that_lost_a_shard_file_rebuilds_without_embedding_again(make_service, notes, embedder):
    from mdrag.service import Service

    spread_notes(notes)
    service = make_service([notes])
    service.reindex()
    service.close()
    db = Path(service.config.milvus_uri)
    shard = shard_paths(db, LITE_SHARDS)[1]
    shard.unlink()
    rebuilt = Service.open(service.config, embedder=embedder)
    try:
        assert len(rebuilt.catalog) == 0  # the notes of the lost shard are not silently missing
        report = rebuilt.reindex()
        assert report.added == len(TOPICS) and rebuilt.store.count_vectors() == len(TOPICS)
        # the surviving shard's vectors are reused, the lost one's embedded again
        assert report.sections_reused > 0 and report.sections_embedded > 0
    finally:
        rebuilt.close()


def test_a_shard_left_from_a_deleted_index_is_emptied(make_service, notes, embedder):
    from mdrag.service import Service

    for name, text in TOPICS.items():
        write(notes / f"{name}.md", text)
    service = make_service([notes])
    service.reindex()
    service.close()
    Path(service.config.milvus_uri).unlink()  # the user deleted "the index" (its first file)
    fresh = Service.open(service.config, embedder=embedder)
    try:
        assert fresh.store.count_vectors() == 0  # no rows of notes the new index does not know
        assert fresh.reindex().added == len(TOPICS)
        assert fresh.store.count_vectors() == len(TOPICS)
    finally:
        fresh.close()

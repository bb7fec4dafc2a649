"""Shards: a new Milvus Lite index is one database; an older one with several keeps them until a rebuild."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import write

import mdrag.milvus.shards
from mdrag.milvus.shards import best_hits, shard_of, shard_paths
from mdrag.milvus.store import doc_id

TOPICS = {
    "bread": "# Sourdough\n\nFeed the starter flour and water every day; bake when it doubles.\n",
    "git": "# Rebasing\n\nA rebase replays your commits on top of another branch.\n",
    "tea": "# Green tea\n\nSteep green tea at 80 degrees for two minutes, never boiling.\n",
    "bikes": "# Chains\n\nClean and oil a bicycle chain every few hundred kilometres.\n",
    "sleep": "# Naps\n\nA twenty minute nap restores alertness without grogginess.\n",
    "taxes": "# Receipts\n\nKeep receipts for deductible expenses for seven years.\n",
}


OLDER = 2  # the shards every Lite index had before a new one got one


@pytest.fixture()
def milvus_uri(tmp_path: Path) -> str:
    """Shards are Milvus Lite's: a server spreads a collection over its own nodes."""
    return str(tmp_path / "index" / "milvus.db")


@pytest.fixture()
def older_layout(monkeypatch):
    """New indexes get two shards, as every index did before: call the result to go back to one."""
    monkeypatch.setattr(mdrag.milvus.shards, "NEW_INDEX_SHARDS", OLDER)
    return lambda: monkeypatch.setattr(mdrag.milvus.shards, "NEW_INDEX_SHARDS", 1)


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
            if shard_of(doc_id(p := str(notes / f"{name}-{k}.md")), OLDER) == turn % OLDER
        )
        paths[name] = str(write(Path(path), text))
    return paths


def shard_rows(store) -> list[set[str]]:
    """The file paths whose rows each shard's database holds."""
    return [
        {row["file_path"] for row in store._iterate("document_vectors", ["file_path"], client=client)}
        for client in store._db.clients
    ]


def test_a_new_lite_index_is_one_database_with_one_server(make_service, notes):
    paths = spread_notes(notes)
    service = make_service([notes])
    service.reindex()
    db = Path(service.config.milvus_uri)
    assert len(service.store._db.clients) == 1 and service.status()["store"]["shards"] == 1
    assert not shard_paths(db, 2)[1].exists()
    found = service.search({"query": "sourdough starter", "threshold": 0.3})["results"]
    assert found[0]["file_path"] == paths["bread"]


def test_an_older_index_keeps_its_shards_and_a_search_finds_notes_in_each(make_service, notes, older_layout):
    paths = spread_notes(notes)
    built = make_service([notes])
    built.reindex()
    built.close()
    older_layout()  # this mdrag makes one-shard indexes, and opens the two-shard one as it is
    service = make_service([notes])
    assert len(service.catalog) == len(TOPICS)  # nothing to rebuild
    assert service.reindex().sections_embedded == 0
    store = service.store
    assert len(store._db.clients) == OLDER
    assert service.status()["store"]["shards"] == OLDER
    held = shard_rows(store)
    for path in paths.values():  # every note in exactly its own shard
        assert [path in rows for rows in held].count(True) == 1
        assert path in held[shard_of(doc_id(path), OLDER)]
    assert all(len(rows) >= 2 for rows in held)
    for name, query in [("bread", "sourdough starter"), ("git", "rebase commits"), ("tea", "steeping tea")]:
        for mode in ("dense", "keyword", "hybrid"):
            found = service.search({"query": query, "threshold": 0.3, "mode": mode})["results"]
            assert found and found[0]["file_path"] == paths[name], (name, mode)
    everything = service.search({"query": "daily habits", "threshold": 0.0, "top_k": 20, "mode": "dense"})
    found = everything["results"]
    scores = [hit["confidence_score"] for hit in found]
    assert scores == sorted(scores, reverse=True)  # one ranking, merged from both shards
    assert {shard_of(doc_id(hit["file_path"]), OLDER) for hit in found} == set(range(OLDER))

    Path(paths["tea"]).write_text(TOPICS["tea"].replace("green", "black"))  # an update and a delete,
    Path(paths["git"]).unlink()  # each in its note's own shard
    service.reindex()
    held = shard_rows(store)
    assert paths["git"] not in set().union(*held)
    assert store.count_vectors() == len(TOPICS) - 1
    assert service.search({"query": "black tea", "threshold": 0.3})["results"][0]["file_path"] == paths["tea"]


def test_an_index_that_lost_a_shard_file_rebuilds_without_embedding_again(
    make_service, notes, embedder, older_layout
):
    from mdrag.service import Service

    spread_notes(notes)
    service = make_service([notes])
    service.reindex()
    service.close()
    older_layout()
    db = Path(service.config.milvus_uri)
    shard = shard_paths(db, OLDER)[1]
    shard.unlink()
    rebuilt = Service(service.config, embedder=embedder)
    try:
        assert len(rebuilt.catalog) == 0  # the notes of the lost shard are not silently missing
        report = rebuilt.reindex()
        assert report.added == len(TOPICS) and rebuilt.store.count_vectors() == len(TOPICS)
        # the surviving shard's vectors are reused, the lost one's embedded again
        assert report.sections_reused > 0 and report.sections_embedded > 0
    finally:
        rebuilt.close()


def test_a_shard_left_from_a_deleted_index_is_removed(make_service, notes, embedder, older_layout):
    from mdrag.service import Service

    for name, text in TOPICS.items():
        write(notes / f"{name}.md", text)
    service = make_service([notes])
    service.reindex()
    service.close()
    older_layout()
    db = Path(service.config.milvus_uri)
    db.unlink()  # the user deleted "the index" (its first file)
    fresh = Service(service.config, embedder=embedder)
    try:
        assert not shard_paths(db, OLDER)[1].exists() and len(fresh.store._db.clients) == 1
        assert fresh.store.count_vectors() == 0  # no rows of notes the new index does not know
        assert fresh.reindex().added == len(TOPICS)
        assert fresh.store.count_vectors() == len(TOPICS)
    finally:
        fresh.close()


@pytest.mark.parametrize("beside", [False, True], ids=["reindex --rebuild", "a daemon's rebuild beside"])
def test_a_rebuild_makes_an_older_index_one_database(make_service, notes, older_layout, beside):
    from contextlib import nullcontext

    from mdrag.rebuild import rebuild_beside

    paths = spread_notes(notes)
    built = make_service([notes])
    built.reindex()
    built.close()
    older_layout()
    service = make_service([notes])
    assert len(service.store._db.clients) == OLDER
    report = rebuild_beside(service, nullcontext) if beside else service.reindex(rebuild=True)
    assert report.added == len(TOPICS)
    db = Path(service.config.milvus_uri)
    assert not shard_paths(db, OLDER)[1].exists()
    assert len(service.store._db.clients) == 1 and service.store.count_vectors() == len(TOPICS)
    for name, query in [("bread", "sourdough starter"), ("git", "rebase commits")]:
        assert service.search({"query": query, "threshold": 0.3})["results"][0]["file_path"] == paths[name]
    service.close()
    reopened = make_service([notes])  # the next open finds one database and nothing to rebuild
    assert len(reopened.store._db.clients) == 1 and reopened.reindex().sections_embedded == 0

"""The keyword index (tantivy): what it matches, its filters over every kind of path, and its upkeep."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mdrag.errors import StoreError
from mdrag.milvus.keywords import CORRECTED, KeywordIndex
from mdrag.milvus.keywordtext import ANALYZER, by_older_mdrag, deleted_rows, parsed_terms
from mdrag.params.scope import Scope
from mdrag.retrieval.query import keyword_query
from tests.conftest import write

# The kinds of path a filter must take literally: tantivy's regex syntax, shell and quote
# characters, spaces, newlines, letters outside ASCII, and a prefix that is a stem of a name.
STRANGE_FOLDERS = [
    "plain",
    "with space",
    "regex .+*?()|[]{}^$#&-~ chars",
    "back\\slash",
    "quote \" and ' marks",
    "new\nline",
    "tab\there",
    "ünïcödé 日本語",
    "percent % and _ underscore",
]


def _row(row_id: str, path: str, text: str, tags: tuple[str, ...] = ()) -> dict:
    return {
        "id": row_id,
        "doc_id": "doc-" + path,
        "section_id": "section-" + row_id,
        "file_path": path,
        "tags": list(tags),
        "display": {"file_path": path, "section_heading": text[:12], "tags": list(tags), "start_line": 1},
        "embedded_text": text,
        "embedding": [0.5, 0.5],  # Milvus's alone: the keyword index keeps only what a hit shows
    }


@pytest.fixture()
def index(tmp_path):
    return KeywordIndex(tmp_path / "milvus.keywords")


def test_stems_match_and_names_of_several_words_are_phrases(index):
    index.write(
        [
            _row("a", "/n/a.md", "Restoring backups with pg_restore"),
            _row("b", "/n/b.md", "Get-ChildItem lists the files of a folder"),
            _row("c", "/n/c.md", "get the child item from the list"),
        ]
    )
    assert [hit.id for hit in index.search("restore a backup", 10)] == ["a"]
    assert [hit.id for hit in index.search("pg_restore", 10)] == ["a"]
    assert index.search("Get-ChildItem", 10)[0].id == "b"  # the phrase ranks first, "get" alone after
    assert index.search("nothing matches this", 10) == []


@pytest.mark.parametrize(
    "query",
    ["AND OR NOT", '"unclosed', "(a", "field:value", "a^2 b~1", "+ - * ?", "[1 TO 5]", "İstanbul", "", "   "],
)
def test_any_query_text_is_words_never_syntax(index, query):
    index.write([_row("a", "/n/a.md", "and or not istanbul field value")])
    index.search(query, 10)  # answers (maybe nothing), never raises
    # Only quoted runs of letters and digits reach the parser: no operator, field or boost.
    assert re.fullmatch(r'("\w+( \w+)*"( |$))*', parsed_terms(query))


@pytest.mark.parametrize("folder", STRANGE_FOLDERS)
def test_a_path_filter_keeps_exactly_the_notes_under_any_prefix(index, folder):
    inside, beside = f"/notes/{folder}/x.md", f"/notes/{folder[:-1]}Z/x.md"
    index.write([_row("in", inside, "lighthouse keeper"), _row("out", beside, "lighthouse keeper")])
    assert [hit.id for hit in index.search("lighthouse", 10, Scope(path_prefix=f"/notes/{folder}/"))] == [
        "in"
    ]
    assert {hit.id for hit in index.search("lighthouse", 10, Scope(path_prefix="/notes/"))} == {"in", "out"}


def test_tags_filter_keeps_notes_with_any_of_them_and_filters_do_not_change_the_score(index):
    index.write(
        [
            _row("a", "/n/a.md", "lighthouse keeper", ("sea", "work")),
            _row("b", "/n/b.md", "lighthouse keeper", ("land",)),
            _row("c", "/n/c.md", "lighthouse keeper"),
        ]
    )
    plain = {hit.id: hit.bm25 for hit in index.search("lighthouse", 10)}
    tagged = index.search("lighthouse", 10, Scope(tags=["work", "land"], path_prefix="/n/"))
    assert {hit.id for hit in tagged} == {"a", "b"}
    assert all(hit.bm25 == pytest.approx(plain[hit.id]) for hit in tagged)


def test_a_write_replaces_rows_of_the_same_id_and_deletes_go_by_row_or_note(index, tmp_path):
    index.write([_row("a", "/n/a.md", "lighthouse"), _row("b", "/n/b.md", "lighthouse")])
    index.write([_row("a", "/n/a.md", "harbour")])  # an upsert, or a batch replayed after an outage
    assert index.ids() == ["a", "b"]
    assert [hit.id for hit in index.search("lighthouse", 10)] == ["b"]
    index.delete("doc_id", ["doc-/n/b.md"])
    assert index.ids() == ["a"]
    index.delete("id", ["a"])
    assert index.count == 0
    index.write([_row("c", "/n/c.md", "kept")])
    assert KeywordIndex(tmp_path / "milvus.keywords").ids() == ["c"]  # committed: another opener sees it


def test_rows_of_reads_what_each_hit_shows_by_id_and_nothing_else(index):
    rows = [
        _row(f"{n}-{folder}", f"/n/{folder}/{folder}.md", f"{folder} note", tags=(folder,))
        for n, folder in enumerate(STRANGE_FOLDERS)
    ]
    index.write(rows)
    wanted = [row["id"] for row in rows[::2]]
    found = index.rows_of([*wanted, "no such row", wanted[0], "\udcff"])
    assert sorted(found) == sorted(wanted)
    for row in rows[::2]:
        assert found[row["id"]] == {"display": row["display"], "embedded_text": row["embedded_text"]}
    assert index.rows_of([]) == {}
    assert sorted(row["id"] for row in index.every_row()) == sorted(row["id"] for row in rows)


def test_unreadable_files_are_a_store_error_and_anew_starts_empty(tmp_path):
    folder = tmp_path / "milvus.keywords"
    KeywordIndex(folder).write([_row("a", "/n/a.md", "lighthouse")])
    (folder / "meta.json").write_text("{ not json")
    with pytest.raises(StoreError, match="keyword index"):
        KeywordIndex(folder)
    assert KeywordIndex.anew(folder).count == 0


# ---- kept with the vector rows, on a real Milvus Lite index --------------------------------


SAMPLE = {
    "tech/postgres.md": "---\ntags: [databases]\n---\n# Postgres\n\nRestore a dump with pg_restore.\n",
    "baking/bread.md": "# Sourdough\n\nFeed the starter the night before baking.\n\n## Shaping\n\nFold twice.\n",
    "garden.md": "# Garden\n\nWater the tomatoes at dawn.\n",
}


@pytest.fixture()
def vault(notes):
    for rel, text in SAMPLE.items():
        write(notes / rel, text)
    return notes


def _lite_service(tmp_path, notes, embedder):
    from mdrag.config import Config
    from mdrag.service import Service

    config = Config().with_overrides(
        roots=(str(notes),) if notes else None,  # None: a command run with no roots configured
        milvus_uri=str(tmp_path / "index" / "milvus.db"),
        server_socket_path=str(tmp_path / "s.sock"),
    )
    return Service.open(config, embedder=embedder)


def _in_step(service) -> list[str]:
    """The keyword index's rows, checked to be exactly the vector rows."""
    vector_ids = sorted(row["id"] for row in service.store.iter_vector_keys())
    assert service.store.keywords.ids() == vector_ids
    return vector_ids


def _indexed_then_keywords_lost(tmp_path, vault, embedder) -> tuple[list[str], Path]:
    """A vault indexed, the daemon stopped, its keyword folder removed: the rows' ids and the folder."""
    import shutil

    service = _lite_service(tmp_path, vault, embedder)
    service.reindex()
    ids = _in_step(service)
    service.close()
    shutil.rmtree(service.files.keyword_index)
    return ids, service.files.keyword_index


def _first_note(service, mode: str) -> str:
    """The note of the first hit for "pg_restore" in this mode, at threshold 0."""
    return service.search({"query": "pg_restore", "threshold": 0, "mode": mode})["results"][0]["file_path"]


def test_keyword_rows_follow_every_write_and_delete_of_the_vector_rows(tmp_path, vault, fake_embedder):
    notes = vault
    service = _lite_service(tmp_path, notes, fake_embedder)
    try:
        service.reindex()
        assert len(_in_step(service)) > 0
        (notes / "tech/postgres.md").write_text("# Postgres\n\nVacuum the lighthouse tables nightly.\n")
        (notes / "baking/bread.md").unlink()
        service.reindex()
        _in_step(service)
        hits = service.search({"query": "lighthouse vacuum", "threshold": 0, "mode": "keyword"})["results"]
        assert hits[0]["file_path"] == str(notes / "tech/postgres.md")
        assert not service.search({"query": "sourdough", "threshold": 0, "mode": "keyword"})["results"]
    finally:
        service.close()


def test_a_note_in_a_script_written_without_spaces_is_found_by_a_word_inside_its_runs(
    tmp_path, vault, fake_embedder
):
    """Through the whole search, in every mode: the hit, and no "no note mentions" for a word
    its note holds inside a run of characters."""
    write(
        vault / "笔记/tar.md", "# tar\n\n归档实用程序。\n\n- 创建存档并将其写入文件：`tar cf 目标.tar 文件`\n"
    )
    service = _lite_service(tmp_path, vault, fake_embedder)
    try:
        service.reindex()
        for query in ("存档", "如何创建存档"):
            for mode in ("keyword", "hybrid"):
                found = service.search({"query": query, "threshold": 0.99, "mode": mode})
                assert "mentions" not in found["confidence"]["reason"]
                hits = service.search({"query": query, "threshold": 0, "mode": mode})["results"]
                assert hits[0]["file_path"] == str(vault / "笔记/tar.md"), (query, mode)
        absent = service.search({"query": "量子", "threshold": 0.99, "mode": "keyword"})
        assert "no note mentions 量子" in absent["confidence"]["reason"]  # a run no note holds
    finally:
        service.close()


OUTDATED = ("written by an older mdrag", "holding more deleted rows than live ones")


@pytest.mark.parametrize("loss", ["removed", "unreadable", "repair cut short", *OUTDATED])
def test_a_lost_keyword_index_is_written_again_from_the_notes_without_embedding_them(tmp_path, vault, loss):
    """Milvus keeps no text: a keyword index lost while the daemon was down is written again from
    the notes, with their vectors from Milvus, so only a note changed meanwhile is embedded."""
    import shutil

    from tests.fakes import HashingRunner, fake_embedder

    notes = vault
    runner = HashingRunner()
    embedder = fake_embedder(runner=runner)
    service = _lite_service(tmp_path, notes, embedder)
    service.reindex()
    ids = _in_step(service)
    # What a repair stopped part way leaves: the rows of the note that changes below, and others.
    cut = [str(notes / "garden.md"), str(notes / "tech/postgres.md")]
    cut_ids = [key["id"] for key in service.store.vector_keys_for_paths(cut)]
    service.close()
    folder = service.files.keyword_index
    if loss == "removed":
        shutil.rmtree(folder)
    elif loss == "unreadable":
        (folder / "meta.json").write_text("{ not json")
    elif loss == "written by an older mdrag":  # its words split by an analyzer of another name
        meta = folder / "meta.json"
        meta.write_text(meta.read_text().replace(f'"{ANALYZER}"', '"mdrag_english_1"'))
        assert by_older_mdrag(folder)
    elif loss == OUTDATED[1]:  # a mass removal (a folder moved out): tantivy keeps them, counted
        # in its word statistics, in a segment that also holds live rows (one wholly deleted goes)
        index = KeywordIndex(folder)
        gone = [
            {
                "id": f"gone-{n}",
                "doc_id": "gone",
                "section_id": f"s{n}",
                "file_path": "/gone.md",
                "tags": [],
                "embedded_text": "pg_restore restores a dump",
                "display": "",
            }
            for n in range(3 * index.count)
        ]
        index.write([*gone, {**gone[0], "id": "stays", "doc_id": "stays"}])
        index.delete("doc_id", ["gone"])
        assert deleted_rows(folder) == len(gone)
    else:  # rows missing, and no mark that the index is whole: a repair that was stopped
        index = KeywordIndex(folder)
        index.delete("id", cut_ids)
        index.mark_complete(False)
    write(notes / "garden.md", "# Garden\n\nWater the lighthouse tomatoes at dusk.\n")
    before = runner.texts_encoded
    reopened = _lite_service(tmp_path, notes, embedder)
    try:
        assert runner.texts_encoded - before == 1  # the changed note's one window
        assert not reopened.store.missing_keywords and KeywordIndex.complete_at(folder)
        assert bool(reopened.store.keywords_outdated) == (loss in OUTDATED)
        assert not by_older_mdrag(folder) and not deleted_rows(folder)
        assert len(_in_step(reopened)) == len(ids)
        for mode in ("keyword", "dense", "hybrid"):
            hits = reopened.search({"query": "pg_restore", "threshold": 0, "mode": mode})["results"]
            assert hits[0]["file_path"] == str(notes / "tech/postgres.md")
            assert hits[0]["section_heading"] == "Postgres"
    finally:
        reopened.close()


@pytest.mark.parametrize("recorded", [True, False], ids=["roots recorded", "no roots known"])
def test_a_command_with_no_roots_configured_never_drops_notes_to_write_the_keyword_index_again(
    tmp_path, vault, recorded
):
    """The daemon had its roots on its command line; a command run later with none configured
    finds the keyword index outdated. It writes it again under the roots the index last had;
    knowing none, it leaves it for a run that does: never does a note count as gone."""
    from tests.fakes import fake_embedder

    embedder = fake_embedder()
    service = _lite_service(tmp_path, vault, embedder)
    service.reindex()
    ids = _in_step(service)
    service.close()
    folder = service.files.keyword_index
    meta = folder / "meta.json"
    meta.write_text(meta.read_text().replace(f'"{ANALYZER}"', '"mdrag_english_1"'))  # outdated
    if not recorded:
        service.files.roots_record.unlink()
    command = _lite_service(tmp_path, None, embedder)
    try:
        assert sorted(row["id"] for row in command.store.iter_vector_keys()) == ids
        hits = command.search({"query": "pg_restore", "threshold": 0, "mode": "keyword"})["results"]
        assert bool(hits) == recorded and KeywordIndex.complete_at(folder) == recorded
        if not recorded:  # a note not read again may hold the word: no gap, and "so far"
            answer = command.search({"query": "pg_restore"})
            assert "no note indexed so far mentions pg" in answer["message"]
            assert command.reads.gaps.count_open() == 0
    finally:
        command.close()
    daemon = _lite_service(tmp_path, vault, embedder)  # its roots again: the index is whole
    try:
        assert _in_step(daemon) == ids and KeywordIndex.complete_at(folder)
    finally:
        daemon.close()


def test_a_new_index_empties_the_keyword_folder_it_finds_without_reading_it(tmp_path, vault, fake_embedder):
    """New collections (a first start, or an upgrade that rebuilt an older layout) start an empty
    keyword index whatever the folder held: an older schema or files tantivy cannot read are not
    an error to report, nor rows to repair."""
    from loguru import logger

    folder = tmp_path / "index" / "milvus.keywords"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text("{ not json")
    warned: list[str] = []
    sink = logger.add(lambda message: warned.append(str(message)), level="WARNING")
    try:
        service = _lite_service(tmp_path, vault, fake_embedder)
    finally:
        logger.remove(sink)
    try:
        assert not any("keyword" in line for line in warned), warned
        assert not service.store.missing_keywords and KeywordIndex.complete_at(folder)
        assert service.store.keywords is not None and service.store.keywords.count == 0
        service.reindex()
        assert _first_note(service, "keyword") == str(vault / "tech/postgres.md")
    finally:
        service.close()


def test_a_dense_row_with_nothing_to_show_is_left_out_but_still_bounds_the_search(
    tmp_path, vault, fake_embedder
):
    """A row the keyword index lacks (its repair not done yet) is not shown; the floor, the lowest
    cosine the engine returned when it returned all it was asked for, is still the engine's, so a
    search does not take the rows it did not return for ones above it."""
    service = _lite_service(tmp_path, vault, fake_embedder)
    try:
        service.reindex()
        vector = fake_embedder.embed_query("pg_restore a backup")
        everything = service.store.search_dense(vector, 100)
        assert everything.floor == -1.0  # fewer rows than asked for: nothing bounds them
        best = everything.rows[:3]
        service.store.keywords.delete("id", [best[2]["id"]])
        nearest = service.store.search_dense(vector, 3)
        assert [row["id"] for row in nearest.rows] == [row["id"] for row in best[:2]]
        assert nearest.floor == pytest.approx(best[2]["distance"])
    finally:
        service.close()


def test_a_keyword_repair_that_finds_the_disk_full_waits_for_a_later_start(
    tmp_path, vault, fake_embedder, monkeypatch
):
    """Stopping the daemon over it would be a restart loop: it starts, without the rows it lacks,
    and the index stays marked incomplete, so the next start with room repairs it."""
    from mdrag.milvus import store as store_module

    ids, folder = _indexed_then_keywords_lost(tmp_path, vault, fake_embedder)
    with monkeypatch.context() as full:
        full.setattr(store_module, "free_bytes", lambda folder: 0)
        started = _lite_service(tmp_path, vault, fake_embedder)
        try:
            assert started.store.missing_keywords and not KeywordIndex.complete_at(folder)
            assert started.search({"query": "pg_restore", "threshold": 0})["results"] == []
        finally:
            started.close()
    reopened = _lite_service(tmp_path, vault, fake_embedder)
    try:
        assert not reopened.store.missing_keywords and KeywordIndex.complete_at(folder)
        assert _in_step(reopened) == ids
    finally:
        reopened.close()


def test_notes_a_keyword_repair_could_not_read_are_shown_once_a_run_reads_them(
    tmp_path, vault, fake_embedder
):
    """Their root away while a lost keyword index is written again: their rows have nothing to
    show meanwhile. The next run that meets them reads them again though their files did not
    change (a root coming back is a run without force), and then the index is whole."""
    ids, folder = _indexed_then_keywords_lost(tmp_path, vault, fake_embedder)
    away = vault.rename(tmp_path / "unmounted")
    reopened = _lite_service(tmp_path, vault, fake_embedder)
    try:
        assert reopened.store.missing_keywords and not KeywordIndex.complete_at(folder)
        assert reopened.indexer.unshown
        unshown = reopened.status()["unshown"]
        assert unshown is not None and unshown["notes"] == len(reopened.indexer.unshown)
        assert unshown["example"] == min(reopened.indexer.unshown)
        away.rename(vault)
        report = reopened.reindex()
        assert report.sections_embedded == 0  # read again, their vectors reused
        assert not reopened.indexer.unshown and not reopened.store.missing_keywords
        assert reopened.status()["unshown"] is None
        assert KeywordIndex.complete_at(folder) and _in_step(reopened) == ids
        assert _first_note(reopened, "hybrid") == str(vault / "tech/postgres.md")
    finally:
        reopened.close()


def test_after_an_unclean_stop_the_keyword_index_holds_exactly_the_vector_rows(
    tmp_path, vault, fake_embedder
):
    notes = vault
    """A write stopped between Milvus and the keyword index leaves rows in one and not the other."""
    service = _lite_service(tmp_path, notes, fake_embedder)
    service.reindex()
    ids = _in_step(service)
    keywords = service.store.keywords
    keywords.delete("id", ids[:2])  # written to Milvus, not yet here
    keywords.write([_row("left-by-a-crash", str(notes / "gone.md"), "pg_restore")])  # deleted there only
    service.close()
    service.files.dirty_marker.write_text("4242\n")  # as a killed writer leaves it
    reopened = _lite_service(tmp_path, notes, fake_embedder)
    try:
        assert _in_step(reopened) == ids
    finally:
        reopened.close()


def test_a_rebuild_switches_its_keyword_index_in_with_its_databases_and_leaves_nothing(tmp_path):
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.index.rebuild import remove_leftovers, switch_in

    files = IndexFiles.at(str(tmp_path / "milvus.db"), tmp_path / "unused")
    for db in (*files.databases, *files.rebuild_databases):
        db.write_text(db.name)
    KeywordIndex(files.keyword_index).write([_row("old", "/n/a.md", "before the rebuild")])
    KeywordIndex(files.rebuild_keyword_index).write([_row("new", "/n/a.md", "after the rebuild")])
    switch_in(files)
    assert [db.read_text() for db in files.databases] == [db.name for db in files.rebuild_databases]
    assert KeywordIndex(files.keyword_index).ids() == ["new"]
    assert not files.rebuild_keyword_index.exists()
    # A switch stopped after the databases moved in: the next writer moves their keyword index in.
    KeywordIndex(files.rebuild_keyword_index).write([_row("newer", "/n/a.md", "after the rebuild")])
    assert remove_leftovers(files) == [files.rebuild_keyword_index]
    assert KeywordIndex(files.keyword_index).ids() == ["newer"] and not files.rebuild_keyword_index.exists()
    # A rebuild stopped midway (its databases still beside the live ones): all of it is removed.
    for db in files.rebuild_databases:
        db.write_text("half")
    KeywordIndex(files.rebuild_keyword_index).write([_row("half", "/n/a.md", "half done")])
    assert files.rebuild_keyword_index in remove_leftovers(files)
    assert not files.rebuild_keyword_index.exists() and not any(db.exists() for db in files.rebuild_databases)
    assert KeywordIndex(files.keyword_index).ids() == ["newer"]


def test_an_index_is_complete_only_once_marked(tmp_path):
    index = KeywordIndex(tmp_path / "milvus.keywords")
    assert not KeywordIndex.complete_at(index.path)  # made, never filled: not complete
    index.write([_row("a", "/n/a.md", "note")])
    assert not KeywordIndex.complete_at(index.path)
    index.mark_complete(True)
    assert KeywordIndex.complete_at(index.path)
    index.mark_complete(False)
    assert not KeywordIndex.complete_at(index.path)
    index.clear()
    assert KeywordIndex.complete_at(index.path) and index.count == 0  # empty beside empty collections


def test_a_link_in_place_of_the_keyword_index_is_refused_and_never_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    KeywordIndex(elsewhere).write([_row("a", "/n/a.md", "kept")])
    (tmp_path / "milvus.keywords").symlink_to(elsewhere)
    with pytest.raises(StoreError, match="is a link"):
        KeywordIndex(tmp_path / "milvus.keywords")
    with pytest.raises(StoreError, match="is a link"):
        KeywordIndex.anew(tmp_path / "milvus.keywords")
    assert KeywordIndex(elsewhere).ids() == ["a"]


def test_a_filter_no_stored_path_or_tag_can_hold_matches_nothing_and_raises_nothing(index):
    index.write([_row("a", "/n/a.md", "lighthouse", ("sea",))])
    assert index.search("lighthouse", 10, Scope(path_prefix="/n/\udc80")) == []
    assert index.search("lighthouse", 10, Scope(tags=["\ud800"])) == []


@pytest.mark.parametrize("word", ["हिन्दी", "İstanbul", "naïve", "日本語", "Ünïcödé"])
def test_a_word_of_any_script_is_found_as_the_index_split_it(index, word):
    index.write([_row("a", "/n/a.md", f"notes on {word} here"), _row("b", "/n/b.md", "other notes")])
    assert [hit.id for hit in index.search(word, 10)] == ["a"]


# Scripts written without spaces between words: (a note's line, a question about it, a word
# inside the line's run of characters, its characters in an order the line never has them side by
# side). Korean spaces its words but attaches their particles.
RUN_ON = [
    ("创建存档并将其写入文件", "如何创建存档", "存档", "档存"),
    ("ファイルを圧縮して保存する", "ファイルの圧縮", "圧縮", "縮圧"),
    ("サーバーを再起動する", "サーバーの再起動", "サーバー", "ーサバ"),  # ー, of no script, inside a word
    ("파일을 삭제하는 방법", "파일 삭제", "삭제", "제삭"),
    ("บีบอัดไฟล์ด้วยคำสั่งนี้", "วิธีบีบอัดไฟล์", "ไฟล์", "ล์ฟไ"),
]


@pytest.mark.parametrize(("line", "question", "word", "apart"), RUN_ON)
def test_a_script_written_without_spaces_is_found_by_the_words_inside_its_runs(
    index, line, question, word, apart
):
    """No dictionary cuts such a run into words: it is held a character at a time and asked by
    each pair of neighbouring characters, so a word inside a run, or a question that runs its
    words together, finds the note, and a word whose characters the notes hold apart does not."""
    index.write(
        [_row("a", "/n/a.md", f"{line} (tar cf)"), _row("b", "/n/b.md", "其他 notes: 他人の データ, バス")]
    )
    assert [hit.id for hit in index.search(word, 10)] == ["a"]
    assert index.search(question, 10)[0].id == "a"
    assert index.search(keyword_query(question), 10)[0].id == "a"  # as a search asks it
    assert index.search(apart, 10) == []  # its characters, not side by side in that order
    assert index.unheard(word) == index.unheard(question) == ()  # never "no note mentions 存档"
    # A run is named as typed when no row holds a pair of its characters side by side.
    assert index.unheard(f"{apart} tar lighthouse") == (apart, "lighthouse")


def test_the_words_no_row_holds_are_read_as_the_index_reads_text(index):
    index.write(
        [
            _row("a", "/n/a.md", "Restoring backups with pg_restore"),
            _row("b", "/n/b.md", "Deploying the site to a server"),
        ]
    )
    # Stems are held ("restore" by "Restoring"), stop words are never unheard, case is folded, and
    # a word split as the index splits (pg_restore: "pg" and "restore") is held when its parts are.
    assert index.unheard("RESTORE a backup with pg_restore") == ()
    assert index.unheard("how do I restore") == ("how", "do", "i")  # the search asks it no filler
    assert index.unheard("deploy the site to Kubernetes or Nomad, then restore") == ("kubernetes", "nomad")
    assert index.unheard("Kubernetes kubernetes") == ("kubernetes",)  # each word once, in order


@pytest.mark.parametrize("query", ["", "   ", "the of and", "\udc80", "AND OR NOT", "日本語", "?!"])
def test_any_query_text_gives_its_unheard_words_without_raising(index, query):
    index.write([_row("a", "/n/a.md", "lighthouse keepers")])
    unheard = index.unheard(query)
    assert isinstance(unheard, tuple) and all(isinstance(word, str) and word for word in unheard)
    assert index.unheard(query + " lighthouse") == unheard  # a held word is never among them


def test_with_filters_only_the_rows_the_filtered_search_reads_hold_a_word(index):
    index.write(
        [
            _row("a", "/n/ops/deploy.md", "Deploying with Kubernetes and Wi-Fi fallback", tags=("ops",)),
            _row("b", "/n/home/bread.md", "Sourdough starter, fed daily", tags=("food",)),
        ]
    )
    assert index.unheard("kubernetes sourdough") == ()
    assert index.unheard("kubernetes sourdough", Scope(tags=["food"])) == ("kubernetes",)
    assert index.unheard("kubernetes sourdough", Scope(tags=["ops", "food"])) == ()
    assert index.unheard("kubernetes sourdough", Scope(path_prefix="/n/ops/")) == ("sourdough",)
    # No row has both filters: none of the rows the search reads holds the word.
    assert index.unheard("kubernetes", Scope(tags=["food"], path_prefix="/n/ops/")) == ("kubernetes",)
    # Stems and compounds are held within the filter as without one.
    assert index.unheard("deploy wifi", Scope(tags=["ops"])) == ()
    assert index.unheard("deploy wifi", Scope(tags=["food"])) == ("deploy", "wifi")


LONG_PREFIXES = ["/n/" + "x" * 1000, "/n/" + "日本語" * 400]  # past what tantivy takes as a pattern


@pytest.mark.parametrize("tags", [(), ("ops",), ("\udc80",), ("a b", "*")])
@pytest.mark.parametrize("prefix", ["", "/n/", "/n/(", "\udc80", ".*", *LONG_PREFIXES])
def test_any_filter_gives_the_unheard_words_without_raising(index, tags, prefix):
    index.write([_row("a", "/n/a.md", "lighthouse keepers", tags=("ops",))])
    unheard = index.unheard("lighthouse keepers of Alexandria", Scope(tags, prefix))
    assert set(unheard) <= {"lighthouse", "keepers", "alexandria"}


@pytest.mark.parametrize("prefix", LONG_PREFIXES)
def test_a_path_prefix_too_long_for_a_pattern_still_filters_a_search(index, prefix):
    index.write([_row("a", prefix + "/a.md", "lighthouse keepers"), _row("b", "/n/b.md", "lighthouse lamps")])
    assert [hit.id for hit in index.search("lighthouse", 10, Scope(path_prefix=prefix))] == ["a"]
    assert index.unheard("lighthouse", Scope(path_prefix=prefix)) == ()


def test_in_an_empty_index_every_word_but_a_stop_word_is_unheard(index):
    assert index.unheard("the lighthouse of Alexandria") == ("lighthouse", "alexandria")
    # Two words that together pass the index's 40 letters are no compound it could hold.
    long_pair = "antidisestablishmentarian internationalization"
    assert index.unheard(long_pair) == ("antidisestablishmentarian", "internationalization")


@pytest.mark.parametrize(
    ("notes", "query"),
    [
        ("Fixing flaky Wi-Fi at home", "wifi"),
        ("Fixing flaky wifi at home", "wi-fi"),
        ("Send the report by e-mail", "email"),
        ("Send the report by email", "e mail"),
        ("Set up the printer", "setup"),
        ("Log in with your account", "login"),
    ],
)
def test_a_compound_is_held_however_the_notes_spell_it(index, notes, query):
    index.write([_row("a", "/n/a.md", notes), _row("b", "/n/b.md", "other things entirely")])
    assert index.unheard(query) == ()


def test_a_name_made_of_two_held_words_is_unheard_unless_the_notes_hold_them_together(index):
    index.write([_row("a", "/n/a.md", "a hard day; a red hat"), _row("b", "/n/b.md", "headphones")])
    assert index.unheard("hardhat") == ("hardhat",)
    index.write([_row("c", "/n/c.md", "wear a hard hat on site")])
    assert index.unheard("hardhat") == ()


@pytest.mark.parametrize("gone", ["by id", "by note", "rewritten"])
def test_a_word_only_rows_that_are_gone_held_is_unheard(index, gone):
    # A deleted row's terms stay in the index's counts until its segment is merged away: however
    # the row went, its words must not count as held by the notes.
    index.write([_row("a", "/n/a.md", "hardhat deploy scripts"), _row("b", "/n/b.md", "lighthouse keepers")])
    assert index.unheard("hardhat lighthouse") == ()
    if gone == "by id":
        index.delete("id", ["a"])
    elif gone == "by note":
        index.delete("doc_id", ["doc-/n/a.md"])
    else:
        index.write([_row("a", "/n/a.md", "foundry deploy scripts")])
    assert index.unheard("hardhat lighthouse") == ("hardhat",)
    assert index.unheard("hardhat lighthouse", Scope(path_prefix="/n/")) == ("hardhat",)


def test_a_word_one_slip_from_a_held_one_also_searches_it_and_a_name_the_notes_lack_stays_unheard(index):
    index.write(
        [
            _row("a", "/n/minify.md", "Minify the HTML output of the site"),
            _row("b", "/n/blur.md", "GaussianBlur blurs an image"),
            _row("c", "/n/look.md", "Look at the logs"),
        ]
    )
    assert next(hit.id for hit in index.search("minfy html", 10)) == "a"  # a letter dropped
    assert next(hit.id for hit in index.search("imaeg blurs", 10)) == "b"  # two swapped
    assert index.search("extention", 10) == []  # nothing one slip away: nothing found
    # A short name is never "corrected": Loki is not a misspelt "look", and stays unheard.
    assert index.search("loki", 10) == []
    assert index.unheard("loki minfy") == ("loki", "minfy")  # the decision still reads the typo


def test_a_pasted_page_of_words_no_note_holds_tries_only_the_first_few():
    class Counting:
        lookups = 0

        def doc_freq(self, field, term):
            Counting.lookups += 1
            return 0  # no note holds anything: every word is unheard, no neighbour is held

    page = " ".join(f"unheard{chr(97 + i % 26)}{chr(97 + i // 26)}word" for i in range(300))
    assert KeywordIndex._corrections(page, Counting()) == []
    # One lookup a word to find it unheard, then a few hundred for each of the first CORRECTED
    # tried (a page of 300 such words tried whole would take some 150,000).
    assert Counting.lookups < 300 + CORRECTED * 1500

"""Indexing with the real model and Milvus Lite: change detection, deletes, renames, failures."""

from __future__ import annotations

import os

import pytest

from tests.conftest import write

SOURDOUGH = "---\ntags: [baking]\n---\n# Sourdough\n\nFeed the starter daily with flour and water.\n\n## Proofing\n\nLet the dough rise for five hours at room temperature.\n"
GIT = "# Git\n\nCreate a feature branch for every change and rebase before merging.\n"


def texts(service, query, **params):
    response = service.search({"query": query, "threshold": 0.0, "top_k": 20, **params})
    return [hit["section_text"] for hit in response["results"]]


def test_first_run_adds_every_note_and_reports_sections(make_service, notes):
    write(notes / "bread.md", SOURDOUGH)
    write(notes / "sub" / "git.md", GIT)
    service = make_service([notes])
    report = service.reindex()
    assert (report.added, report.updated, report.failed) == (2, 0, [])
    assert report.sections_embedded == 3
    assert service.status()["documents"] == {"indexed": 2}


def test_unchanged_files_are_skipped_without_embedding(make_service, notes):
    write(notes / "bread.md", SOURDOUGH)
    service = make_service([notes])
    service.reindex()
    again = service.reindex()
    assert (again.unchanged, again.sections_embedded, again.added, again.updated) == (1, 0, 0, 0)


def test_changed_file_replaces_its_old_sections(make_service, notes):
    note = write(notes / "bread.md", SOURDOUGH)
    service = make_service([notes])
    service.reindex()
    write(note, SOURDOUGH.replace("five hours", "twelve hours in the fridge"))
    report = service.reindex()
    assert report.updated == 1 and report.sections_embedded == 1
    found = texts(service, "how long does the dough rise")
    assert any("twelve hours" in t for t in found)
    assert not any("five hours" in t for t in found)
    assert service.store.count_vectors() == 2


def test_deleted_file_removes_its_sections_and_metadata(make_service, notes):
    write(notes / "bread.md", SOURDOUGH)
    git = write(notes / "git.md", GIT)
    service = make_service([notes])
    service.reindex()
    git.unlink()
    report = service.reindex()
    assert report.deleted == 1
    assert not any("feature branch" in t for t in texts(service, "git branch"))
    assert service.store.count_vectors() == 2
    assert service.stored_records().keys() == {str(notes / "bread.md")}


def test_inserting_a_line_at_the_top_re_embeds_nothing_that_did_not_change(make_service, notes):
    note = write(notes / "bread.md", "# Sourdough\n\nFeed the starter.\n\n## Proofing\n\nLet it rise.\n")
    service = make_service([notes])
    service.reindex()
    write(note, "\n\n" + note.read_text())
    report = service.reindex()
    assert report.updated == 1 and report.sections_embedded == 0 and report.sections_reused == 2
    hit = service.search({"query": "let the dough rise", "threshold": 0})["results"][0]
    assert hit["start_line"] == 7  # line numbers follow the file, vectors were reused


def test_appending_a_paragraph_embeds_only_the_section_that_changed(make_service, notes):
    note = write(notes / "bread.md", SOURDOUGH)
    service = make_service([notes])
    service.reindex()
    write(note, note.read_text() + "\nShape the loaf gently.\n")
    report = service.reindex()
    assert report.sections_embedded == 1 and report.sections_reused == 1


def test_renaming_a_file_re_embeds_nothing(make_service, notes):
    write(notes / "git.md", GIT)
    service = make_service([notes])
    service.reindex()
    os.rename(notes / "git.md", notes / "version-control.md")
    report = service.reindex()
    assert (report.added, report.deleted, report.sections_embedded) == (1, 1, 0)
    hit = service.search({"query": "feature branch rebase", "threshold": 0})["results"][0]
    assert hit["file_path"] == str(notes / "version-control.md")


def test_a_cold_run_reuses_repeated_sections_from_memory_not_the_store(make_service, notes, monkeypatch):
    from mdrag.index import indexer

    # Two batches: the copy in the second reuses the first's vector without asking the store.
    monkeypatch.setattr(indexer, "BATCH_FILES", 1)
    write(notes / "a.md", GIT)
    write(notes / "b.md", GIT)
    service = make_service([notes])
    asked = []
    lookup = service.store.vectors_for_sections
    monkeypatch.setattr(service.store, "vectors_for_sections", lambda ids: asked.append(ids) or lookup(ids))
    report = service.reindex()
    assert (report.added, report.sections_embedded, report.sections_reused) == (2, 1, 1)
    assert asked == []  # the store was empty when the run began
    # A later run may find the vector only in the store: by section for a note that shares it,
    write(notes / "c.md", GIT + "\n## Review\n\nAsk a colleague to review the pull request.\n")
    report = service.reindex()
    assert (report.added, report.sections_embedded, report.sections_reused) == (1, 1, 1)
    assert len(asked) == 1
    # and by key for a note with the same bytes as one indexed (its rows are known exactly).
    write(notes / "d.md", GIT)
    report = service.reindex()
    assert (report.added, report.sections_embedded, report.sections_reused) == (1, 0, 1)
    assert len(asked) == 1
    rows = service.store.vector_keys_for_paths([str(notes / n) for n in ("a.md", "b.md", "c.md", "d.md")])
    assert len(rows) == 5


def test_run_vectors_let_go_of_the_oldest_and_then_consult_the_store():
    import numpy as np

    from mdrag.index.vectors import RunVectors

    run = RunVectors(store_had_notes=False, limit=2)
    run.add({("a", 0): np.zeros(2), ("b", 0): np.ones(2)})
    assert not run.store_may_know_more
    run.add({("c", 0): np.ones(2)})
    assert run.get(("a", 0)) is None and run.get(("c", 0)) is not None
    assert run.store_may_know_more  # "a" is in the store, no longer here


def test_one_bad_file_never_stops_the_run_and_keeps_its_reason(make_service, notes):
    (notes / "bad.md").write_bytes(b"# Bad\n\xff\xfe\n")
    (notes / "image.md").write_bytes(b"\x89PNG\x00\x00binary")
    write(notes / "good.md", GIT)
    service = make_service([notes])
    report = service.reindex()
    assert report.added == 1
    reasons = {f["file_path"]: f["error"] for f in report.failed}
    assert "UTF-8" in reasons[str(notes / "bad.md")] and "binary" in reasons[str(notes / "image.md")]
    status = service.status()
    assert status["documents"] == {"indexed": 1, "failed": 2}
    assert {f["file_path"] for f in status["failed"]} == set(reasons)


def test_malformed_frontmatter_is_indexed_as_text_with_a_warning(make_service, notes):
    write(notes / "fm.md", "---\ntitle: [oops\n---\n# Kayak\n\nPaddling across the bay at dawn.\n")
    service = make_service([notes])
    service.reindex()
    assert texts(service, "paddling a kayak")
    assert "malformed YAML" in service.status()["warnings"][0]["warning"]


def test_a_file_that_breaks_loses_its_old_sections_and_shows_as_failed(make_service, notes):
    note = write(notes / "n.md", GIT)
    service = make_service([notes])
    service.reindex()
    note.write_bytes(b"\xff\xfe broken now")
    service.reindex()
    assert service.store.count_vectors() == 0
    assert service.status()["documents"] == {"failed": 1}


def test_a_note_that_turns_unreadable_keeps_its_indexed_version_and_status_says_so_till_read_again(
    make_service, notes, monkeypatch
):
    from mdrag.index import changes
    from mdrag.notes.document import FileUnreadable

    note = write(notes / "n.md", GIT)
    service = make_service([notes])
    service.reindex()
    read = changes.read_bytes

    def permission_denied(path, limit):  # as a note chmod 000 reads (the tests run as root)
        if str(path) == str(note):
            raise FileUnreadable("cannot read file: Permission denied")
        return read(path, limit)

    monkeypatch.setattr(changes, "read_bytes", permission_denied)
    write(note, GIT.replace("rebase", "squash"))
    service.reindex()
    status = service.status()
    assert status["documents"] == {"indexed": 1}  # its indexed version answers meanwhile
    assert status["failed"] == [
        {
            "file_path": str(note),
            "error": "cannot read file: Permission denied; its indexed version is kept until it is readable or gone",
        }
    ]
    monkeypatch.undo()
    assert service.reindex().updated == 1
    assert service.status()["failed"] == []


@pytest.mark.parametrize(
    "name",
    [
        'quote"s.md',
        "back\\slash.md",
        "it's here.md",
        "spaces and ümlauts 日本.md",
        "100%_done.md",
        "new\nline.md",
    ],
)
def test_hostile_file_names_index_update_and_delete(make_service, notes, name):
    note = write(notes / name, GIT)
    service = make_service([notes])
    assert service.reindex().added == 1
    write(note, GIT.replace("rebase", "squash"))
    assert service.reindex().updated == 1
    assert [
        h["file_path"] for h in service.search({"query": "feature branch", "threshold": 0})["results"]
    ] == [str(note)]
    assert service.store.count_vectors() == 1
    note.unlink()
    assert service.reindex().deleted == 1
    assert service.store.count_vectors() == 0 and not service.stored_records()


def test_hidden_dirs_node_modules_and_excluded_globs_are_skipped(make_service, notes):
    for rel in (
        ".obsidian/x.md",
        "node_modules/pkg/readme.md",
        ".git/notes.md",
        "drafts/d.md",
        "keep/k.md",
        "a.txt",
    ):
        write(notes / rel, GIT)
    service = make_service([notes], exclude=("drafts",))
    report = service.reindex()
    assert report.added == 1
    assert service.catalog.paths() == [str(notes / "keep" / "k.md")]


def test_long_section_last_sentence_is_findable(make_service, notes):
    filler = " ".join(f"The committee reviewed budget line {i} without comment." for i in range(120))
    last = "Finally, the octopus escaped its aquarium by squeezing through the drain pipe."
    write(notes / "minutes.md", f"# Minutes\n\n{filler} {last}\n")
    write(notes / "aquarium.md", "# Aquarium\n\nThe fish tank needs a new filter and fresh water.\n")
    service = make_service([notes])
    service.reindex()
    hits = service.search({"query": "octopus escaped through the drain", "threshold": 0, "mode": "dense"})[
        "results"
    ]
    # Far past the model's 256-token window, the sentence still reaches a vector of its own.
    assert hits[0]["file_path"] == str(notes / "minutes.md")
    assert last in hits[0]["section_text"]
    assert hits[0]["similarity"] > 0.35
    assert len({(h["file_path"], h["start_line"]) for h in hits}) == len(hits)  # once per section


def test_force_re_reads_unchanged_files_without_duplicating_rows(make_service, notes):
    write(notes / "bread.md", SOURDOUGH)
    service = make_service([notes])
    service.reindex()
    report = service.reindex(force=True)
    assert report.updated == 1 and report.sections_embedded == 0
    assert service.store.count_vectors() == 2


def test_force_writes_no_keyword_document_again_and_every_score_stays(make_service, notes, monkeypatch):
    """A row written again unchanged is not rewritten in the keyword index: its old copy would
    count in BM25's statistics (how many rows hold a word) until tantivy merged its segment away
    (after `reindex --force` on the OpenTelemetry docs, 2,560 rows counted as holding "use" where
    2,085 do)."""
    from mdrag.milvus.keywords import KeywordIndex

    write(notes / "bread.md", SOURDOUGH)
    write(notes / "git.md", GIT)
    write(notes / "tea.md", "# Tea\n\nGreen tea steeps for two minutes; a sourdough loaf goes with it.\n")
    service = make_service([notes])
    service.reindex()

    def scores() -> list[tuple[str, float]]:
        query = {"query": "sourdough starter branch", "mode": "keyword", "threshold": 0.0, "explain": True}
        return [(h["file_path"], h["explain"]["evidence"]["bm25"]) for h in service.search(query)["results"]]

    before = scores()
    written: list[str] = []
    original = KeywordIndex.write
    monkeypatch.setattr(
        KeywordIndex,
        "write",
        lambda self, rows: (written.extend(r["id"] for r in rows), original(self, rows)),
    )
    assert service.reindex(force=True).updated == 3
    assert written == [] and scores() == before
    write(notes / "tea.md", "# Tea\n\nBlack tea steeps for four minutes.\n")  # a change is written
    service.reindex()
    assert len(written) == 1 and [path for path, _ in scores()] != [path for path, _ in before]


def test_rebuild_starts_from_an_empty_index(make_service, notes):
    write(notes / "bread.md", SOURDOUGH)
    service = make_service([notes])
    service.reindex()
    report = service.reindex(rebuild=True)
    assert report.added == 1 and report.sections_embedded == 2
    assert service.store.count_vectors() == 2


def stray_row(path: str, vector: list[float]) -> dict:
    """A vector row of a file version the catalog never switched to, as a crash leaves it."""
    from mdrag.keys import doc_id

    display = {
        "section_id": "e" * 32,
        "file_path": path,
        "file_hash": "0" * 64,
        "window_index": 0,
        "section_heading": "Stray",
        "heading_level": 1,
        "heading_path": "Stray",
        "section_type": "paragraph",
        "chunk_index": 0,
        "token_count": 3,
        "start_position": 0,
        "end_position": 10,
        "start_line": 1,
        "end_line": 1,
        "anchor": "stray",
        "title": "Stray",
        "tags": [],
    }
    return {
        "id": "f" * 16,
        "section_id": "e" * 32,
        "doc_id": doc_id(path),
        "file_path": path,
        "file_hash": "0" * 64,
        "window_index": 0,
        "tags": [],
        "display": display,
        "embedded_text": "stray dough",
        "embedding": vector,
    }


def test_rows_left_by_a_crash_are_removed_at_the_next_open(make_service, make_config, embedder, notes):
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.service import Service

    path = str(write(notes / "bread.md", SOURDOUGH))
    service = make_service([notes])
    service.reindex()
    service.store.insert_vectors([stray_row(path, embedder.embed_query("stray dough").tolist())])
    # The stray row is never shown: its file_hash is not the version the catalog holds.
    assert all(h["section_heading"] != "Stray" for h in texts_hits(service, "stray dough"))
    # Simulate kill -9: the store closes without the clean shutdown that removes the marker.
    service.store.close()
    assert IndexFiles.of(service.config).dirty_marker.exists()
    reopened = Service.open(make_config([notes]), embedder=embedder)
    try:
        assert reopened.store.count_vectors() == 2
        assert "f" * 32 not in {r["id"] for r in reopened.store.vector_keys_for_paths([path])}
    finally:
        reopened.close()


def texts_hits(service, query):
    return service.search({"query": query, "threshold": 0.0})["results"]


def test_collection_built_for_another_model_asks_for_a_rebuild(make_config, embedder, notes):
    from mdrag.errors import SchemaMismatchError
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.milvus.store import Store

    config = make_config([notes])
    keywords = IndexFiles.of(config).keyword_index
    Store(config.milvus_uri, dimension=384, model_id=embedder.model_id, keywords=keywords).close()
    with pytest.raises(SchemaMismatchError, match="mdrag reindex --rebuild"):
        Store(config.milvus_uri, dimension=384, model_id="some/other-model", keywords=keywords)


@pytest.mark.parametrize("analyzer", ["this one", "an older one"])
def test_an_index_from_an_older_layout_is_rebuilt_by_itself(
    make_service, embedder, notes, monkeypatch, analyzer
):
    """Its vectors are carried over, read by their keyword rows: whichever analyzer wrote those."""
    from mdrag.answers.status import report_line
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.milvus import keywordtext, schema
    from mdrag.service import Service

    write(notes / "bread.md", SOURDOUGH)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", schema.SCHEMA_VERSION - 1)
    if analyzer == "an older one":
        monkeypatch.setattr(keywordtext, "ANALYZER", "mdrag_english_1")
    old = make_service([notes])
    old.reindex()
    old.close()
    monkeypatch.undo()
    upgraded = Service.open(old.config, embedder=embedder)  # same model, newer layout: no person needed
    try:
        assert len(upgraded.catalog) == 0
        assert IndexFiles.of(old.config).carried_vectors.exists()  # the old vectors, kept before the drop
        report = upgraded.reindex()
        assert report.added == 1 and report.upgrade == "done"
        assert report.sections_embedded == 0 and report.sections_reused == 2  # read, not embedded
        assert report_line(report.to_dict()).startswith(
            "index rebuilt for this version of mdrag: 1 note read again, deleted 0, failed 0; "
            "0 sections embedded, 2 kept, in "
        )  # the note was there before: not said to be added
        assert not IndexFiles.of(old.config).carried_vectors.exists()  # a complete run needs them no more
        again = upgraded.reindex()
        assert again.upgrade == "" and report_line(again.to_dict()).startswith(
            "added 0, updated 0, unchanged 1,"
        )
        assert upgraded.search({"query": "sourdough starter", "threshold": 0.3})["results"]
    finally:
        upgraded.close()


def test_an_upgrade_said_done_only_once_every_note_is_read_again_after_a_stop_too(
    make_service, embedder, notes, monkeypatch
):
    from mdrag.answers.status import report_line
    from mdrag.milvus import schema
    from mdrag.service import Service

    write(notes / "bread.md", SOURDOUGH)
    write(notes / "tea.md", "# Tea\n\nGreen tea steeps for two minutes at 80 degrees.\n")
    monkeypatch.setattr(schema, "SCHEMA_VERSION", schema.SCHEMA_VERSION - 1)
    old = make_service([notes])
    old.reindex()
    old.close()
    monkeypatch.undo()
    upgraded = Service.open(old.config, embedder=embedder)
    try:
        part = upgraded.reindex([str(notes / "bread.md")])  # `mdrag reindex notes/bread.md`
        assert part.upgrade == "under way"
        assert report_line(part.to_dict()).startswith(
            "index being rebuilt for this version of mdrag: 1 note read again so far, deleted 0,"
        )
    finally:
        upgraded.close()
    resumed = Service.open(old.config, embedder=embedder)  # stopped before its end: still an upgrade
    try:
        whole = resumed.reindex()
        assert (whole.upgrade, whole.added, whole.unchanged, whole.sections_embedded) == ("done", 1, 1, 0)
        assert report_line(whole.to_dict()).startswith(
            "index rebuilt for this version of mdrag: 2 notes read again,"
        )
    finally:
        resumed.close()


def test_an_upgrade_to_aliased_titles_embeds_again_only_the_notes_with_aliases(
    upgraded_from_older_layout, notes
):
    from mdrag.notes.document import Document

    write(notes / "bread.md", SOURDOUGH)
    write(
        notes / "boiler.md",
        "---\naliases: [Vaillant ecoTEC]\n---\n# Boiler\n\nBleed the radiators each autumn.\n",
    )
    # Layout 8 embedded the title without the note's other names.
    upgraded = upgraded_from_older_layout([notes], (Document, "aliases", property(lambda self: [])))
    try:
        report = upgraded.reindex()
        assert report.added == 2
        assert report.sections_embedded == 1 and report.sections_reused == 2  # the boiler's one section
        found = upgraded.search({"query": "vaillant ecotec", "mode": "keyword", "threshold": 0.0})["results"]
        assert found and found[0]["file_path"].endswith("boiler.md")
    finally:
        upgraded.close()


NETLIFY = "---\ndescription: {}\n---\n# Hosting\n\nPush the repository and connect it to a build.\n"


def description_evidence(service, query):
    """Each hit's `description` evidence by note name, from a search that explains its scores."""
    found = service.search({"query": query, "threshold": 0.0, "top_k": 20, "explain": True})["results"]
    return {os.path.basename(h["file_path"]): h["explain"]["evidence"]["description"] for h in found}


def test_a_notes_description_is_embedded_and_a_search_weighs_its_cosine(make_service, embedder, notes):
    write(notes / "netlify.md", NETLIFY.format("Deploy a static site to Netlify."))
    write(notes / "bread.md", SOURDOUGH)  # no description: its evidence is 0
    service = make_service([notes])
    first = service.reindex()
    assert (first.sections_embedded, first.descriptions_embedded) == (3, 1)  # counted apart
    query = "how do I publish my site on netlify"
    about = float(embedder.embed_query(query) @ embedder.embed_query("Deploy a static site to Netlify."))
    evidence = description_evidence(service, query)
    assert evidence["netlify.md"] == pytest.approx(about, abs=0.01) and about > 0.5
    assert evidence["bread.md"] == 0.0
    # A new description is embedded again with the note; its sections' vectors are kept.
    write(notes / "netlify.md", NETLIFY.format("Bake rye bread with a sourdough starter."))
    again = service.reindex()
    assert (again.updated, again.sections_embedded, again.descriptions_embedded) == (1, 0, 1)
    assert description_evidence(service, query)["netlify.md"] < about - 0.2


def test_a_description_read_again_or_copied_is_not_embedded_again(make_service, notes, monkeypatch):
    """Its vector lives in its note's metadata row alone: a forced re-read, a copy and a move of
    the same bytes find it there, and the model embeds nothing (it embedded it again each time)."""
    import shutil

    write(notes / "netlify.md", NETLIFY.format("Deploy a static site to Netlify."))
    service = make_service([notes])
    service.reindex()
    before = description_evidence(service, "publish a site on netlify")["netlify.md"]
    embedded: list[str] = []
    real = service.embedder.embed
    monkeypatch.setattr(
        service.embedder, "embed", lambda texts, **kw: embedded.extend(texts) or real(texts, **kw)
    )
    assert service.reindex(force=True).updated == 1
    shutil.copy(notes / "netlify.md", notes / "copy.md")
    assert service.reindex().added == 1
    os.rename(notes / "netlify.md", notes / "moved.md")
    assert service.reindex().added == 1
    assert embedded == []
    after = description_evidence(service, "publish a site on netlify")
    assert after["copy.md"] == after["moved.md"] == pytest.approx(before, abs=1e-6)


def test_an_upgrade_to_described_notes_embeds_their_descriptions_alone(upgraded_from_older_layout, notes):
    from mdrag.answers.status import report_line
    from mdrag.notes.document import Document

    write(notes / "netlify.md", NETLIFY.format("Deploy a static site to Netlify."))
    # Layout 11 kept no description's vector.
    upgraded = upgraded_from_older_layout([notes], (Document, "description", property(lambda self: "")))
    try:
        report = upgraded.reindex()
        assert report.sections_embedded == 0 and report.sections_reused == 1
        assert report_line(report.to_dict()).startswith(
            "index rebuilt for this version of mdrag: 1 note read again, deleted 0, failed 0; "
            "0 sections and 1 description embedded, 1 kept, in "
        )  # the model's work said, not "0 embedded" alone
        assert description_evidence(upgraded, "publish a site on netlify")["netlify.md"] > 0.5
    finally:
        upgraded.close()


def test_an_upgrade_reads_again_the_notes_layout_12_read_another_way(upgraded_from_older_layout, notes):
    import unicodedata

    from mdrag.notes import document, frontblock

    write(notes / "bread.md", SOURDOUGH)
    write(notes / "brulee.md", unicodedata.normalize("NFD", "# Crème brûlée\n\nTorch the sugar.\n"))
    (notes / "mac.md").write_bytes(b"# Bikes\r\rIntro.\r\r## Brakes\r\rReplace the pads.\r")
    write(notes / "hugo.md", "+++\ntitle = 'Deploy to Netlify'\n+++\nPush the public folder.\n")
    write(notes / "json.md", '{\n"title": "Deploy to Vercel"\n}\nConnect the repository.\n')
    write(notes / "meeting.md", "---\ncreated: {{date}}\n---\n# Meeting\n\nAgenda.\n")
    # Layout 12 read a note's text as written (no composed form, a lone CR no line break),
    # frontmatter in YAML alone, and a block it could not read as markdown.
    upgraded = upgraded_from_older_layout(
        [notes],
        (document, "decode_text", document._decoded),
        (frontblock, "_FORMATS", frontblock._FORMATS[:1]),
        (document, "block_end", lambda text: 0),
    )
    try:
        report = upgraded.reindex()
        assert report.added == 6 and report.sections_reused == 3  # the bread's two, the meeting's agenda
        # the brulee's one, the mac's two, the hugo's and json's one, the meeting's block as text
        assert report.sections_embedded == 6
        found = upgraded.search({"query": "crème brûlée", "mode": "keyword", "threshold": 0.0})["results"]
        assert [os.path.basename(hit["file_path"]) for hit in found] == ["brulee.md"]
        hits = upgraded.search({"query": "replace the brake pads", "threshold": 0.0, "top_k": 1})["results"]
        assert (hits[0]["heading_path"], hits[0]["start_line"]) == ("Bikes > Brakes", 5)
        hits = upgraded.search({"query": "deploy to netlify", "threshold": 0.0, "top_k": 1})["results"]
        assert hits[0]["metadata"]["title"] == "Deploy to Netlify"
        hits = upgraded.search({"query": "deploy to vercel", "threshold": 0.0, "top_k": 1})["results"]
        assert hits[0]["metadata"]["title"] == "Deploy to Vercel"
    finally:
        upgraded.close()


@pytest.mark.slow
def test_an_index_whose_rows_keep_their_sections_in_milvus_is_rebuilt_without_embedding_again(
    make_service, embedder, notes, monkeypatch
):
    # Layouts before 8 kept each row's section, path, version and tags in Milvus, keyed by a
    # string: the rebuild carries their vectors by the sections read there.
    from pymilvus import DataType, MilvusClient

    from mdrag import keys
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.milvus import schema
    from mdrag.service import Service

    write(notes / "bread.md", SOURDOUGH)
    old = make_service([notes])
    old.reindex()
    store = old.store
    shown = {row["id"]: row["display"] for row in store.keywords.every_row()}
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 7)
    built_for = schema.identity(embedder.model_id, 384, store.shards)
    monkeypatch.undo()
    for client in store._db.clients:
        rows = list(store._engine.iterate(schema.VECTORS, ["id", "doc_id", "embedding"], client=client))
        client.drop_collection(schema.VECTORS)
        layout = MilvusClient.create_schema(auto_id=False, description=built_for)
        layout.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        for name in ("section_id", "doc_id", "file_path", "file_hash"):
            layout.add_field(name, DataType.VARCHAR, max_length=4096)
        layout.add_field("window_index", DataType.INT32)
        layout.add_field("embedding", DataType.FLOAT_VECTOR, dim=384)
        index = client.prepare_index_params()
        index.add_index("embedding", index_type="FLAT", metric_type="IP")
        client.create_collection(
            schema.VECTORS, schema=layout, index_params=index, consistency_level="Strong"
        )
        old_rows = []
        for row in rows:
            display = shown[keys.row_hex(row["id"])]
            old_rows.append(
                {
                    "id": keys.row_hex(row["id"]) * 2,
                    "doc_id": row["doc_id"],
                    "embedding": row["embedding"],
                    **{
                        name: display[name]
                        for name in ("section_id", "file_path", "file_hash", "window_index")
                    },
                }
            )
        if old_rows:
            client.insert(schema.VECTORS, old_rows)
    old.close()
    upgraded = Service.open(old.config, embedder=embedder)
    try:
        assert IndexFiles.of(old.config).carried_vectors.exists()
        report = upgraded.reindex()
        assert report.added == 1
        assert report.sections_embedded == 0 and report.sections_reused == 2
        assert upgraded.search({"query": "sourdough starter", "threshold": 0.3})["results"]
    finally:
        upgraded.close()


def test_an_index_built_by_another_back_end_of_the_model_is_rebuilt_by_itself_and_embedded_again(
    make_service, embedder, notes
):
    # How an index made when fp32 ONNX was the default meets the int8 default (and any switch
    # of embedding.backend): rebuilt with no person needed, every section embedded again, since
    # the other back-end's vectors are close to these but not the same.
    from mdrag.embedding.embedder import Embedder
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.service import Service

    write(notes / "bread.md", SOURDOUGH)
    fp32 = Embedder(backend="onnx")
    assert fp32.model_id != embedder.model_id
    old = Service.open(make_service([notes]).config, embedder=fp32)
    old.reindex()
    old.close()
    switched = Service.open(old.config, embedder=embedder)
    try:
        assert len(switched.catalog) == 0
        assert not IndexFiles.of(old.config).carried_vectors.exists()  # nothing of the old vectors kept
        report = switched.reindex()
        assert report.added == 1 and report.sections_embedded == 2 and report.sections_reused == 0
        assert report.upgrade == "done"  # every note read again, none kept
        assert switched.search({"query": "sourdough starter", "threshold": 0.3})["results"]
    finally:
        switched.close()


def test_a_cosine_index_switches_to_inner_product_in_place_with_the_same_scores(
    make_service, embedder, notes, monkeypatch
):
    from mdrag.milvus import hits, schema
    from mdrag.service import Service

    write(notes / "bread.md", SOURDOUGH)
    monkeypatch.setattr(schema, "DENSE_METRIC", "COSINE")  # as indexes were made before IP
    monkeypatch.setattr(hits, "DENSE_METRIC", "COSINE")
    old = make_service([notes])
    old.reindex()
    before = old.search({"query": "sourdough starter", "threshold": 0.0, "mode": "dense"})["results"]
    old.close()
    monkeypatch.undo()
    upgraded = Service.open(old.config, embedder=embedder)
    try:
        client = upgraded.store._client
        assert client.describe_index(schema.VECTORS, "embedding")["metric_type"] == "IP"
        assert upgraded.reindex().unchanged == 1  # the same vectors: nothing embedded again
        after = upgraded.search({"query": "sourdough starter", "threshold": 0.0, "mode": "dense"})["results"]
        assert [(h["section_heading"], h["confidence_score"]) for h in after] == [
            (h["section_heading"], h["confidence_score"]) for h in before
        ]
    finally:
        upgraded.close()


def test_written_rows_are_counted_and_a_lite_index_reopens_with_nothing_lost(make_service, notes):
    write(notes / "bread.md", SOURDOUGH)
    git = write(notes / "git.md", GIT)
    service = make_service([notes])
    service.reindex()
    store = service.store
    assert store.rows_written == 3  # three sections inserted
    write(git, GIT.replace("rebase", "squash"))
    service.reindex()
    assert store.rows_written == 5  # the new row in, the old one out
    if not store.is_lite:
        assert not store.reopen_due(1)  # a server has no such slowdown: never due
        return
    assert not store.reopen_due(6) and store.reopen_due(5)
    assert not store.reopen_due(0)  # 0 turns reopening off
    assert store.reopen() > 0
    assert store.rows_written == 0 and not store.reopen_due(1)
    assert any("squash" in t for t in texts(service, "git branch merging"))
    assert store.count_vectors() == 3
    write(git, GIT.replace("rebase", "cherry-pick"))  # and it takes writes again
    assert service.reindex().updated == 1
    assert any("cherry-pick" in t for t in texts(service, "git branch merging"))


@pytest.mark.parametrize("answer_rows", [2, 16384])
def test_lookups_return_every_matching_row_however_many_one_query_answers(
    make_service, notes, monkeypatch, answer_rows
):
    # A lookup asks one query and goes on with the iterator only when that answer is full.
    from mdrag.milvus import calls as calls_module

    paths = [str(write(notes / f"copy-{i}" / "bread.md", SOURDOUGH)) for i in range(4)]
    paths.append(str(write(notes / "git.md", GIT)))
    service = make_service([notes])
    service.reindex()
    hits = service.search({"query": "starter dough rise branch", "threshold": 0.0, "top_k": 50})["results"]
    section_ids = {hit["metadata"]["section_id"] for hit in hits}
    monkeypatch.setattr(calls_module, "QUERY_LIMIT", answer_rows)
    store = service.store
    keys = store.vector_keys_for_paths(paths)
    assert len(keys) == store.count_vectors() == 4 * 2 + 1
    assert {(k["id"], k["file_path"]) for k in keys} == {
        (k["id"], k["file_path"]) for k in store.iter_vector_keys()
    }
    # bread's two sections (each in four notes) and git's one
    assert set(store.vectors_for_sections(sorted(section_ids))) == {(sid, 0) for sid in section_ids}
    assert len(section_ids) == 3

"""The indexer's bookkeeping, fast: the real tokenizer and sectioning, a fake model and an in-memory store.

What is embedded, reused, replaced and deleted does not depend on what the vectors mean; the
real model and Milvus Lite cover the same paths end to end in test_indexer.py.
"""

from __future__ import annotations

import os

import pytest

from mdrag.catalog import Catalog
from mdrag.indexer import Indexer
from mdrag.scanner import NoteFilter
from tests.conftest import write
from tests.fakes import MemoryStore

SOURDOUGH = "# Sourdough\n\nFeed the starter daily with flour and water.\n\n## Proofing\n\nLet it rise for five hours.\n"
GIT = "# Git\n\nCreate a feature branch for every change and rebase before merging.\n"


@pytest.fixture()
def indexer(fake_embedder, notes):
    return Indexer(fake_embedder, MemoryStore(), Catalog(), NoteFilter([notes]))


def test_unchanged_notes_are_skipped_without_embedding(indexer, notes):
    write(notes / "bread.md", SOURDOUGH)
    first = indexer.reconcile()
    again = indexer.reconcile()
    assert (first.added, first.sections_embedded) == (1, 2)
    assert (again.unchanged, again.added, again.updated, again.sections_embedded) == (1, 0, 0, 0)


def test_a_changed_note_keeps_only_its_new_rows(indexer, notes):
    note = write(notes / "bread.md", SOURDOUGH)
    indexer.reconcile()
    write(note, SOURDOUGH.replace("five hours", "twelve hours in the fridge"))
    report = indexer.reconcile()
    assert (report.updated, report.sections_embedded, report.sections_reused) == (1, 1, 1)
    texts = [row["embedded_text"] for row in indexer.store.vectors.values()]
    assert len(texts) == 2 and any("twelve hours" in t for t in texts)
    assert not any("five hours" in t for t in texts)


def test_inserting_lines_at_the_top_moves_the_lines_but_embeds_nothing(indexer, notes):
    note = write(notes / "bread.md", SOURDOUGH)
    indexer.reconcile()
    write(note, "\n\n" + SOURDOUGH)
    report = indexer.reconcile()
    assert (report.updated, report.sections_embedded, report.sections_reused) == (1, 0, 2)
    lines = sorted(row["display"]["start_line"] for row in indexer.store.vectors.values())
    assert lines == [3, 7]


def test_a_renamed_note_is_re_added_from_the_vectors_it_had(indexer, notes):
    write(notes / "git.md", GIT)
    indexer.reconcile()
    os.rename(notes / "git.md", notes / "version-control.md")
    report = indexer.reconcile()
    assert (report.added, report.deleted, report.sections_embedded) == (1, 1, 0)
    assert {row["file_path"] for row in indexer.store.vectors.values()} == {str(notes / "version-control.md")}
    assert set(indexer.store.metadata) == {str(notes / "version-control.md")}


def test_a_deleted_note_loses_its_rows_its_metadata_and_its_catalog_record(indexer, notes):
    write(notes / "bread.md", SOURDOUGH)
    git = write(notes / "git.md", GIT)
    indexer.reconcile()
    git.unlink()
    assert indexer.reconcile().deleted == 1
    assert {row["file_path"] for row in indexer.store.vectors.values()} == {str(notes / "bread.md")}
    assert set(indexer.store.metadata) == {str(notes / "bread.md")}
    assert indexer.catalog.get(str(git)) is None


def test_bad_files_fail_one_by_one_with_their_reasons_and_the_rest_is_indexed(indexer, notes):
    (notes / "bad.md").write_bytes(b"# Bad\n\xff\xfe\n")
    (notes / "image.md").write_bytes(b"\x89PNG\x00\x00binary")
    write(notes / "good.md", GIT)
    report = indexer.reconcile()
    assert report.added == 1
    reasons = {f["file_path"]: f["error"] for f in report.failed}
    assert "UTF-8" in reasons[str(notes / "bad.md")] and "binary" in reasons[str(notes / "image.md")]
    assert {row["file_path"] for row in indexer.store.vectors.values()} == {str(notes / "good.md")}


def test_every_token_of_a_long_section_reaches_a_window_within_the_models_limit(
    indexer, notes, fake_embedder
):
    words = " ".join(f"lighthouse{i}" for i in range(400))
    write(notes / "long.md", f"# Long\n\n{words}\n")
    indexer.reconcile()
    windows = sorted(indexer.store.vectors.values(), key=lambda row: row["window_index"])
    assert len(windows) > 1
    limit = fake_embedder.max_seq_length - 2
    assert all(fake_embedder.count_tokens([row["embedded_text"]])[0] <= limit for row in windows)
    covered = set()
    for row in windows:
        covered.update(row["embedded_text"].split())
    assert set(words.split()) <= covered

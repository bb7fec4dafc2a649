"""The indexer's bookkeeping, fast: the real tokenizer and sectioning, a fake model and an in-memory store.

What is embedded, reused, replaced and deleted does not depend on what the vectors mean; the
real model and Milvus Lite cover the same paths end to end in test_indexer.py.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np
import pytest

from mdrag import keys
from mdrag.catalog import Catalog
from mdrag.index.indexer import Indexer
from mdrag.index.reading import LARGE_NOTE_BYTES, NoteReader
from mdrag.index.rows import PreparedNote
from mdrag.notes.scanner import NoteFilter
from mdrag.notes.sections import Outline, Sectioner
from tests.conftest import write
from tests.fakes import HashingRunner, MemoryStore
from tests.fakes import fake_embedder as make_embedder

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


def test_a_copied_note_reads_its_vectors_by_key_from_the_note_it_copies(indexer, notes):
    write(notes / "bread.md", SOURDOUGH)
    indexer.reconcile()
    store = indexer.store
    scans = store.section_lookups
    write(notes / "copy" / "bread.md", SOURDOUGH)
    report = indexer.reconcile()
    assert (report.added, report.sections_embedded, report.sections_reused) == (1, 0, 2)
    assert store.row_lookups == 1 and store.section_lookups == scans  # no scan by section
    by_path: dict[str, list[Any]] = {}
    for row in sorted(store.vectors.values(), key=lambda r: r["display"]["start_line"]):
        by_path.setdefault(row["file_path"], []).append(list(row["embedding"]))
    assert by_path[str(notes / "copy" / "bread.md")] == by_path[str(notes / "bread.md")]


def test_rows_of_the_copied_note_that_its_sectioning_does_not_expect_are_not_reused(indexer, notes):
    write(notes / "bread.md", SOURDOUGH)
    indexer.reconcile()
    store = indexer.store
    # As if sectioned by another mdrag: other section ids, hence other row keys.
    rows = [{**row, "section_id": "0" * 32} for row in store.vectors.values()]
    store.vectors = {
        keys.row_id(row["file_path"], row["file_hash"], row["section_id"], ordinal, row["window_index"]): row
        for ordinal, row in enumerate(rows)
    }
    write(notes / "copy.md", SOURDOUGH)
    report = indexer.reconcile()
    assert (report.added, report.sections_embedded) == (1, 2)


def test_a_deleted_note_loses_its_rows_its_metadata_and_its_catalog_record(indexer, notes):
    write(notes / "bread.md", SOURDOUGH)
    git = write(notes / "git.md", GIT)
    indexer.reconcile()
    git.unlink()
    assert indexer.reconcile().deleted == 1
    assert {row["file_path"] for row in indexer.store.vectors.values()} == {str(notes / "bread.md")}
    assert set(indexer.store.metadata) == {str(notes / "bread.md")}
    assert indexer.catalog.get(str(git)) is None


@pytest.mark.parametrize("count", [3, 25])
def test_a_run_names_each_note_it_removes_or_counts_them_when_they_are_many(indexer, notes, count):
    from loguru import logger

    from mdrag.index.indexer import REMOVED_NAMED

    for n in range(count):
        write(notes / "old" / f"note-{n:02}.md", f"# Note {n}\n\nAbout lighthouse number {n}.\n")
    indexer.reconcile()
    for path in (notes / "old").iterdir():
        path.unlink()
    said: list[str] = []
    sink = logger.add(lambda message: said.append(message.record["message"]), level="INFO")
    try:
        assert indexer.reconcile().deleted == count
    finally:
        logger.remove(sink)
    removed = [line for line in said if line.startswith("removed ")]
    if count <= REMOVED_NAMED:
        assert len(removed) == count
    else:  # a folder moved out: one line, not one a note
        assert removed == [f"removed {count} notes (e.g. {notes / 'old' / 'note-00.md'})"]


def test_a_run_names_the_roots_it_leaves_without_a_note_and_only_those_it_ran_over(fake_embedder, tmp_path):
    # The class: a mistyped folder, one of archives or other files, one whose notes are all hidden.
    notes, archives, hidden = tmp_path / "notes", tmp_path / "archives", tmp_path / "hidden"
    write(notes / "sub" / "bread.md", SOURDOUGH)
    write(archives / "vault.tar.gz", "packed notes")
    write(hidden / ".obsidian" / "workspace.md", "# hidden\n")
    indexer = Indexer(fake_embedder, MemoryStore(), Catalog(), NoteFilter([notes, archives, hidden]))
    assert indexer.reconcile().roots_without_notes == [str(archives), str(hidden)]
    assert indexer.reconcile([archives]).roots_without_notes == [str(archives)]  # named by a person
    assert indexer.reconcile([notes / "sub"]).roots_without_notes == []  # a folder of a root: not its roots
    write(archives / "b.md", GIT)
    assert indexer.reconcile().roots_without_notes == [str(hidden)]


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


class WatchedStore(MemoryStore):
    """Which call wrote each note's rows, and what the catalog showed of a note when its rows and
    its metadata row were written."""

    def __init__(self) -> None:
        super().__init__()
        self.catalog: Catalog | None = None
        self.calls: list[tuple[str, str]] = []  # (method, file_path) per row written
        self.seen_at_rows: list[str | None] = []  # the visible hash of a note when its rows went in
        self.seen_at_metadata: list[bool] = []  # whether the catalog named the version then

    def _rows(self, how: str, rows: list[dict[str, Any]]) -> None:
        assert self.catalog is not None
        self.calls += [(how, row["file_path"]) for row in rows]
        self.seen_at_rows += [self.catalog.visible_hash(row["file_path"]) for row in rows]

    def insert_vectors(self, rows: list[dict[str, Any]]) -> None:
        self._rows("insert", rows)
        super().insert_vectors(rows)

    def upsert_vectors(self, rows: list[dict[str, Any]]) -> None:
        self._rows("upsert", rows)
        super().upsert_vectors(rows)

    def upsert_metadata(self, rows: list[dict[str, Any]]) -> None:
        assert self.catalog is not None
        self.seen_at_metadata += [self.catalog.visible_hash(r["file_path"]) == r["file_hash"] for r in rows]
        super().upsert_metadata(rows)


@pytest.fixture()
def watched(fake_embedder, notes):
    store = WatchedStore()
    indexer = Indexer(fake_embedder, store, Catalog(), NoteFilter([notes]))
    store.catalog = indexer.catalog
    return indexer


@pytest.mark.parametrize(
    "versions",
    [
        [SOURDOUGH],
        [SOURDOUGH, SOURDOUGH + "\n## Baking\n\nBake at 250 degrees.\n"],
        [SOURDOUGH, SOURDOUGH.replace("five", "six"), SOURDOUGH],  # back to an earlier version
        [GIT, SOURDOUGH, GIT + "\nMore.\n", GIT],
    ],
)
def test_a_new_version_of_a_note_is_inserted_not_upserted(watched, notes, versions):
    # An upsert also deletes on Milvus Lite: a version the index never held has no rows to replace
    # (MemoryStore refuses a duplicate insert, so a wrong guess fails here).
    note = notes / "bread.md"
    for text in versions:
        write(note, text)
        watched.reconcile()
    assert {how for how, _ in watched.store.calls} == {"insert"}
    hashes = {row["file_hash"] for row in watched.store.vectors.values()}
    assert hashes == {watched.catalog.visible_hash(str(note))}


def test_a_forced_reread_of_the_same_version_upserts_its_rows(watched, notes):
    write(notes / "bread.md", SOURDOUGH)
    write(notes / "git.md", GIT)
    watched.reconcile()
    rows = len(watched.store.vectors)
    watched.store.calls.clear()
    report = watched.reconcile(force=True)
    assert report.updated == 2
    assert [how for how, _ in watched.store.calls] == ["upsert"] * rows
    assert len(watched.store.vectors) == rows


def test_a_new_version_is_visible_once_its_rows_are_in_and_before_its_metadata_is_written(watched, notes):
    note = write(notes / "bread.md", SOURDOUGH)
    write(notes / "git.md", GIT)
    watched.reconcile()
    old = watched.catalog.visible_hash(str(note))
    write(note, SOURDOUGH.replace("five hours", "a night"))
    watched.store.seen_at_rows.clear()
    watched.reconcile()
    # Never a version without its rows: each row went in while the catalog showed the old one.
    assert watched.store.seen_at_rows and set(watched.store.seen_at_rows) == {old}
    # And every note's new version was searchable by the time its metadata row was written.
    assert watched.store.seen_at_metadata and all(watched.store.seen_at_metadata)


def test_a_reconcile_indexes_the_most_recently_modified_notes_first(indexer, notes):
    now = 1_790_000_000
    ages = {"alpha.md": 300, "beta.md": 10, "gamma.md": 200, "delta.md": 10, "sub/epsilon.md": 1}
    for name, age in ages.items():
        note = write(notes / name, f"# {name}\n\nA note named {name}.\n")
        os.utime(note, (now - age, now - age))
    indexer.reconcile()
    order = [os.path.relpath(path, notes) for path in indexer.store.metadata]
    # Newest first; beta and delta were modified at the same moment: the scan's order between them.
    assert order == ["sub/epsilon.md", "beta.md", "delta.md", "gamma.md", "alpha.md"]


class StopsAfter(HashingRunner):
    """A model that asks its run to stop once it has embedded `texts` texts, as a save does while
    a large note is embedded (serve/writer.py's _Turn)."""

    def __init__(self, texts: int) -> None:
        super().__init__()
        self.texts, self.stop = texts, threading.Event()

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = super().encode(texts, batch_size)
        if self.texts_encoded >= self.texts:
            self.stop.set()
        return vectors


def test_a_large_note_that_steps_aside_is_sectioned_once_and_no_text_is_embedded_twice(notes, monkeypatch):
    runner = StopsAfter(texts=128)
    indexer = Indexer(make_embedder(runner=runner), MemoryStore(), Catalog(), NoteFilter([notes]))
    split = indexer.sectioner.split
    splits = []
    monkeypatch.setattr(indexer.sectioner, "split", lambda *a: splits.append(1) or split(*a))
    paragraph = " ".join(f"Soundings of the estuary reach, fathom {i}." for i in range(60))
    large = write(notes / "estuary.md", "".join(f"## Reach {i}\n\n{paragraph}\n\n" for i in range(120)))
    assert large.stat().st_size > LARGE_NOTE_BYTES
    first = indexer.index_files([str(large)], cancel=runner.stop)
    assert first.added == 0 and runner.texts_encoded >= 128  # stopped after some model batches
    second = indexer.index_files([str(large)])
    assert second.added == 1
    windows = len(indexer.store.vectors)
    assert runner.texts_encoded == windows  # what the first turn embedded was kept for the second
    assert len(splits) == 1  # and what it read and sectioned


def test_a_reader_of_a_large_note_waits_for_one_already_sectioning_it_and_takes_its_work(
    fake_embedder, notes
):
    calls = []

    class Slow(Sectioner):
        def split(self, text: str, body_offset: int = 0, unread_end: int = 0) -> Outline:
            calls.append(1)
            time.sleep(0.3)  # a reader the last turn left behind, still at work
            return super().split(text, body_offset, unread_end)

    reader = NoteReader(Slow(fake_embedder.count_tokens), fake_embedder)
    data = ("# Big\n\n" + "A long ledger line about the harbour. " * 8000).encode()
    notes_read = [
        PreparedNote(path="/n/big.md", is_new=True, file_hash="h1", size=len(data)) for _ in range(2)
    ]
    threads = [threading.Thread(target=reader.read, args=(note, data)) for note in notes_read]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert notes_read[0].windows == notes_read[1].windows and notes_read[1].windows

"""Keywords ahead of the model: a first index's notes are found by their words before they are embedded."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from mdrag.errors import NotFoundError, StoreError
from mdrag.files import indexfiles
from mdrag.index import indexer, prepass
from mdrag.index.rows import PreparedNote
from mdrag.milvus import PendingKeywords, pending
from mdrag.milvus.pending import LAYOUT
from mdrag.params.scope import Scope
from mdrag.params.search import SearchParams
from mdrag.progress import ProgressMeter, progress_line, search_banner
from tests.conftest import write

# One rare word per note, so a query names exactly one note.
ANIMALS = [
    "aardvark", "axolotl", "binturong", "capybara", "dugong", "echidna", "fossa", "gharial",
    "hoatzin", "ibex", "jerboa", "kinkajou", "lemming", "margay", "narwhal", "okapi", "pangolin",
    "quokka", "rhea", "saiga", "tapir", "uakari", "vicuna", "wombat", "xerus", "yapok", "zorilla",
    "agouti", "bongo", "coati",
]  # fmt: skip


def _window(path: str, text: str, section: str = "s1", tags: tuple[str, ...] = ()) -> dict:
    display = {"file_path": path, "section_id": section, "start_position": 0, "file_hash": "h-" + path}
    return {
        "id": f"{path}:{section}",
        "doc_id": "doc-" + path,
        "section_id": section,
        "file_path": path,
        "tags": list(tags),
        "embedded_text": text,
        "display": display,
    }


def test_waiting_notes_are_found_by_their_words_replaced_per_note_and_kept_across_opens(tmp_path):
    path = tmp_path / "milvus.pending.keywords"
    waiting = PendingKeywords(path)
    assert not waiting.active and not path.exists()  # no folder until a run reads ahead
    assert waiting.rows("capybara", 10) == []
    assert waiting.unheard("capybara swims") == {"capybara", "swims"}
    waiting.add(
        [_window("/n/a.md", "The capybara swims"), _window("/n/b.md", "A wombat digs", tags=("zoo",))]
    )
    assert waiting.active and path.is_dir()
    (score, row), *rest = waiting.rows("capybara", 10)
    assert rest == [] and score > 0 and row["display"]["file_path"] == "/n/a.md"
    assert row["embedded_text"] == "The capybara swims"
    assert [r["file_path"] for _, r in waiting.rows("wombat", 10, Scope(tags=("zoo",)))] == ["/n/b.md"]
    assert waiting.rows("wombat", 10, Scope(tags=("other",))) == []
    assert waiting.rows("wombat", 10, Scope(path_prefix="/n/a")) == []
    assert waiting.unheard("capybara swimming okapi") == {"okapi"}  # stems held, as the index reads them
    # A note read again replaces its windows; another process (a restart) finds them.
    waiting.add([_window("/n/a.md", "The okapi hides")])
    again = PendingKeywords(path)
    assert again.rows("capybara", 10) == []
    assert [r["file_path"] for _, r in again.rows("okapi", 10)] == ["/n/a.md"]
    again.drop(["doc-/n/a.md"])
    assert again.rows("okapi", 10) == [] and again.active
    again.discard()
    assert not again.active and not path.exists()


@pytest.mark.parametrize("kind", ["unreadable", "another layout"])
def test_a_pending_folder_that_cannot_be_used_is_removed_and_written_again(tmp_path, kind):
    path = tmp_path / "milvus.pending.keywords"
    PendingKeywords(path).add([_window("/n/a.md", "The capybara swims")])
    if kind == "unreadable":
        (path / "meta.json").write_text("not json")
    else:
        (path / LAYOUT).unlink()  # written by an mdrag whose rows had another shape
    waiting = PendingKeywords(path)
    assert not waiting.active and not path.exists()
    assert waiting.add([_window("/n/b.md", "A wombat digs")])
    assert [r["file_path"] for _, r in waiting.rows("wombat", 10)] == ["/n/b.md"]


def test_a_pending_index_that_fails_under_the_writer_is_given_up_without_an_error(tmp_path):
    path = tmp_path / "milvus.pending.keywords"
    waiting = PendingKeywords(path)
    waiting.add([_window("/n/a.md", "The capybara swims")])
    shutil.rmtree(path)  # removed under it (a cleaner, a full disk's failure)
    lost = []
    # No error: the notes are indexed by the model's pass anyway; whoever counted them is told.
    assert not waiting.drop(["doc-/n/a.md"], lost=lambda: lost.append(True))
    assert lost == [True]
    assert not waiting.active and waiting.rows("capybara", 10) == []
    assert waiting.add([_window("/n/b.md", "A wombat digs")])  # the next write starts it anew
    assert [r["file_path"] for _, r in waiting.rows("wombat", 10)] == ["/n/b.md"]


def test_a_word_only_notes_that_left_the_pending_index_held_is_unheard_there(tmp_path):
    waiting = PendingKeywords(tmp_path / "milvus.pending.keywords")
    waiting.add([_window("/n/a.md", "The capybara swims"), _window("/n/b.md", "A wombat digs")])
    assert waiting.unheard("capybara wombat") == set()
    assert waiting.drop(["doc-/n/a.md"])  # its real rows are in the index now
    assert waiting.unheard("capybara wombat") == {"capybara"}


def test_reading_ahead_stops_and_frees_its_folder_while_the_disk_is_nearly_full(tmp_path, monkeypatch):
    path = tmp_path / "milvus.pending.keywords"
    waiting = PendingKeywords(path)
    assert waiting.add([_window("/n/a.md", "The capybara swims")])
    assert indexfiles.free_bytes(tmp_path) is not None  # the real disk's room is read
    monkeypatch.setattr(indexfiles, "free_bytes", lambda folder: pending.MIN_FREE_BYTES - 1)
    assert not waiting.add([_window("/n/b.md", "A wombat digs")])  # the pass stops here
    assert not waiting.active and not path.exists()  # and its folder's room goes back to the index
    monkeypatch.setattr(indexfiles, "free_bytes", lambda folder: pending.MIN_FREE_BYTES)
    assert waiting.add([_window("/n/b.md", "A wombat digs")])  # room again: the next run reads ahead


def test_a_pass_whose_index_gives_up_no_longer_claims_its_notes_are_found_by_their_words(
    tmp_path, monkeypatch
):
    meter = ProgressMeter()
    meter.begin(300)
    meter.ahead(0)
    waiting = PendingKeywords(tmp_path / "milvus.pending.keywords")
    notes = [(i, str(tmp_path / f"n{i}.md")) for i in range(300)]

    def read(path):
        return prepass.Read(PreparedNote(path=path, is_new=True, windows=[["A wombat digs"]], file_hash="h"))

    ahead = prepass.KeywordsAhead(waiting, notes[:150], read, meter).start()
    _wait(lambda: meter.snapshot().keyword_notes == 150)
    ahead.stop()
    monkeypatch.setattr(indexfiles, "free_bytes", lambda folder: 0)  # the disk fills: the pending index goes
    ahead = prepass.KeywordsAhead(waiting, notes[150:], read, meter).start()
    _wait(lambda: meter.snapshot().keyword_notes == 0)  # the 150 read before are no longer claimed
    ahead.stop()
    assert "by their words" not in progress_line(meter.snapshot())


def test_progress_says_how_many_notes_are_searchable_by_their_words_ahead_of_the_model():
    meter = ProgressMeter()
    meter.begin(994)
    for _ in range(412):
        meter.read(3)
    meter.written(412)
    assert "by their words" not in progress_line(meter.snapshot())  # no pass: nothing ahead
    meter.ahead(0)  # the run's notes known before: none
    meter.ahead(600)
    assert meter.snapshot().keyword_notes == 600
    assert progress_line(meter.snapshot()).startswith(
        "indexing 412/994 notes (600 searchable by their words), "
    )
    meter.ahead(394)
    banner = search_banner(meter.snapshot().to_dict())
    assert banner.startswith("indexing: 412 of 994 notes done (all 994 searchable by their words), ")
    meter.finish()
    assert meter.snapshot().keyword_notes == 994 and "by their words" not in progress_line(meter.snapshot())


def test_the_total_counts_the_texts_of_notes_read_ahead_rather_than_guessing_them():
    meter = ProgressMeter()
    meter.begin(10)
    for _ in range(2):
        meter.read(100)  # the newest notes, read first, happen to be long
    assert meter.snapshot().total == 1000  # a guess: the other eight like these two
    meter.sized(1, 100)  # the reader counted that one itself
    for position in range(2, 10):
        meter.sized(position, 5)
    assert meter.snapshot().total == 240  # counted, not guessed
    meter.sized(9, 5)  # told twice: counted once
    for _ in range(2, 6):
        meter.read(5)  # the reader reaches notes the pass counted: the total stays
    meter.unchanged()  # position 6 vanished before the reader came: its 5 texts are not to come
    assert meter.snapshot().total == 235
    meter.sized(20, 5)  # not a note of this run
    assert meter.snapshot().total == 235


def test_the_total_mixes_counted_notes_and_a_guess_for_the_rest():
    meter = ProgressMeter()
    meter.begin(6)
    meter.read(10)
    meter.sized(3, 30)
    # four notes nobody read yet, like the two known ones: 20 texts each
    assert meter.snapshot().total == 10 + 30 + 4 * 20


def _vault(folder: Path) -> list[Path]:
    return [
        write(
            folder / f"animal-{i:02d}.md",
            f"# The {name}\n\nField notes on the {name}: where it lives and what it eats.\n",
        )
        for i, name in enumerate(ANIMALS)
    ]


class HeldModel:
    """The indexing side of a real embedder, held at its `hold_at`-th call (1: the first) until
    `release`; the searches' embedding passes."""

    def __init__(self, embedder, monkeypatch, hold_at: int = 1) -> None:
        self.release = threading.Event()
        self.reached = threading.Event()
        self.calls = 0
        real = embedder.embed

        def held(texts, cancel=None, done=None):
            self.calls += 1
            if self.calls >= hold_at:
                self.reached.set()
                assert self.release.wait(120), "the test never released the model"
            return real(texts, cancel=cancel, done=done)

        monkeypatch.setattr(embedder, "embed", held)


def _held_run(service, embedder, monkeypatch, hold_at: int = 1, cancel=None):
    """A reindex on a thread of its own, its model held at its `hold_at`-th call: (model, meter,
    thread), the thread started."""
    model = HeldModel(embedder, monkeypatch, hold_at=hold_at)
    meter = ProgressMeter()
    run = threading.Thread(target=lambda: service.reindex(progress=meter, cancel=cancel))
    run.start()
    return model, meter, run


def _wait(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _ask(service, query: str, mode: str = "hybrid") -> list[dict]:
    return service.search(SearchParams(query=query, mode=mode, threshold=0.0))["results"]


@pytest.fixture()
def few_notes_ahead(monkeypatch):
    """A pass for runs of 10 new notes or more (the vaults here are small)."""
    monkeypatch.setattr(prepass, "MIN_NOTES", 10)
    monkeypatch.setattr(prepass, "BATCH_NOTES", 7)


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_a_first_index_finds_every_note_by_its_words_before_the_model_reaches_it(
    notes, make_service, embedder, monkeypatch, few_notes_ahead
):
    _vault(notes)
    service = make_service([notes])
    model, meter, run = _held_run(service, embedder, monkeypatch)
    try:
        assert model.reached.wait(60)
        _wait(lambda: meter.snapshot().keyword_notes == len(ANIMALS))
        assert meter.snapshot().notes_done == 0  # the model has embedded nothing yet
        for mode in ("hybrid", "keyword"):
            found = service.search(
                SearchParams(query="where does the kinkajou live", mode=mode, threshold=0.0)
            )
            top = found["results"][0]
            assert top["file_path"].endswith("animal-11.md"), (mode, found)
            assert 0.3 < top["similarity"] < 1.0  # a real cosine: embedded for this query
            assert "kinkajou" in top["section_text"] and "kinkajou" in top["snippet"]["text"]
            assert top["metadata"]["waiting"] is True
            assert found["confidence"]["reason"] == ""  # the word is a waiting note's: not "no note mentions"
        assert _ask(service, "where does the kinkajou live", mode="dense") == []  # meaning needs the model
        missing = service.search(SearchParams(query="where does the walrus live", mode="hybrid"))
        assert "walrus" in missing["confidence"]["reason"]
        # A waiting note can be read (a preview, the page), as it is; no other file can.
        note = service.handle("note", {"note": top["file_path"]})
        assert note["status"] == "pending" and "kinkajou" in note["text"] and not note["fresh"]
        with pytest.raises(NotFoundError):
            service.handle("note", {"note": str(notes.parent / "elsewhere.md")})
    finally:
        model.release.set()
        run.join(120)
    assert not service.files.pending_keywords.exists()  # every note is indexed: none waits
    top = _ask(service, "where does the kinkajou live")[0]
    assert top["file_path"].endswith("animal-11.md") and top["metadata"]["waiting"] is False


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_a_first_index_counts_its_texts_once_the_pass_has_read_every_note(
    notes, make_service, embedder, monkeypatch, few_notes_ahead
):
    monkeypatch.setattr(indexer, "READ_AHEAD", 1)  # the model's reader stays a note or two ahead
    for i, name in enumerate(ANIMALS):  # the newest notes, read first, are long: no sample of the rest
        days = "".join(
            f"\n## Day {d}\n\nThe {name} slept, then foraged at dusk.\n" for d in range(20 * (i >= 25))
        )
        path = write(notes / f"animal-{i:02d}.md", f"# The {name}\n\nField notes on the {name}.\n{days}")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    service = make_service([notes])
    model, meter, run = _held_run(service, embedder, monkeypatch)
    try:
        assert model.reached.wait(60)
        _wait(lambda: meter.snapshot().keyword_notes == len(ANIMALS))
        while_held = meter.snapshot()
        assert while_held.notes_done == 0 and while_held.done == 0
    finally:
        model.release.set()
        run.join(120)
    assert meter.snapshot().done == while_held.total  # the total was the texts the run embedded


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_each_batch_the_model_writes_leaves_the_pending_index_and_is_never_shown_twice(
    notes, make_service, embedder, monkeypatch, few_notes_ahead
):
    monkeypatch.setattr(indexer, "BATCH_FILES", 6)  # batches of six notes
    _vault(notes)
    service = make_service([notes])
    model, meter, run = _held_run(service, embedder, monkeypatch, hold_at=2)  # the first batch goes through
    try:
        assert model.reached.wait(60)
        _wait(lambda: meter.snapshot().notes_done == 6 and meter.snapshot().keyword_notes == len(ANIMALS))
        written = service.catalog.paths()
        assert len(written) == 6
        for path in written:  # the newest first: which six does not matter, only that they left
            name = ANIMALS[int(path[-5:-3])]
            assert not any(r["file_path"] == path for _, r in service.waiting.rows(name, 50))
            hits = [h for h in _ask(service, f"the {name}") if h["file_path"] == path]
            assert len(hits) == 1 and hits[0]["metadata"]["waiting"] is False
        assert service.waiting.active  # the other 24 still wait
    finally:
        model.release.set()
        run.join(120)
    assert not service.files.pending_keywords.exists()


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_a_pending_index_that_gives_up_under_the_writer_no_longer_claims_the_waiting_notes(
    notes, make_service, embedder, monkeypatch, few_notes_ahead
):
    monkeypatch.setattr(indexer, "BATCH_FILES", 6)
    _vault(notes)

    def fails(self, field, values):
        raise StoreError("the disk went away")

    monkeypatch.setattr(pending._RowsIndex, "delete", fails)  # reading ahead works, forgetting fails
    service = make_service([notes])
    first, meter, run = _held_run(service, embedder, monkeypatch)
    rest = None
    try:
        assert first.reached.wait(60)
        _wait(lambda: meter.snapshot().keyword_notes == len(ANIMALS))  # the pass has read every note
        rest = HeldModel(embedder, monkeypatch)  # the model's next call waits: the run is mid-way
        first.release.set()
        assert rest.reached.wait(60)
        held = meter.snapshot()
        assert held.notes_done == 6 and held.keyword_notes == 6  # the written six, not all 30
        assert "by their words" not in progress_line(held)
        assert not service.waiting.active and not service.files.pending_keywords.exists()
    finally:
        first.release.set()
        if rest is not None:
            rest.release.set()
        run.join(120)
    assert len(service.catalog.paths()) == len(ANIMALS)  # the model's pass indexed every note anyway


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_notes_read_ahead_stay_searchable_across_a_restart_until_the_next_run_indexes_them(
    notes, make_service, embedder, monkeypatch, few_notes_ahead
):
    files = _vault(notes)
    service = make_service([notes])
    cancel = threading.Event()
    model, meter, run = _held_run(service, embedder, monkeypatch, cancel=cancel)
    assert model.reached.wait(60)
    _wait(lambda: meter.snapshot().keyword_notes == len(ANIMALS))
    cancel.set()  # a stop (the daemon's restart) before the model wrote anything
    model.release.set()
    run.join(120)
    assert len(service.catalog) == 0 and service.files.pending_keywords.is_dir()
    service.close()
    files[3].write_text("# The capybara\n\nThis note was rewritten: now about the manatee.\n")  # changed
    files[4].unlink()  # gone
    # The second run is held too, until its pass is done: what it reads again is then known.
    model = HeldModel(embedder, monkeypatch)
    reopened = make_service([notes], exclude=("animal-05.md",))  # and one left out since
    found = _ask(reopened, "binturong habitat")  # found at once, from what the first run read
    assert found[0]["file_path"].endswith("animal-02.md") and found[0]["metadata"]["waiting"] is True
    for word, gone in (("capybara", "animal-03.md"), ("dugong", "animal-04.md"), ("echidna", "animal-05.md")):
        hits = _ask(reopened, f"{word} field notes")
        assert not any(h["file_path"].endswith(gone) for h in hits), (word, hits)
    sectioned_ahead: list[str] = []
    real_section = reopened.indexer.reader.section

    def section(prepared, document):
        if threading.current_thread().name == "mdrag-keywords-ahead":
            sectioned_ahead.append(prepared.path)
        return real_section(prepared, document)

    monkeypatch.setattr(reopened.indexer.reader, "section", section)
    monkeypatch.setattr(indexer, "READ_AHEAD", 1)  # the model's reader stays a note or two ahead
    monkeypatch.setattr(indexer, "FIRST_BATCH_TEXTS", 1)  # of a model held at its first note
    meter = ProgressMeter()
    run = threading.Thread(target=lambda: reopened.reindex(progress=meter))
    run.start()
    try:
        assert model.reached.wait(60)
        _wait(lambda: meter.snapshot().keyword_notes == len(ANIMALS) - 2)
        # Only the changed note is read again: the others are kept as the first run read them.
        assert sectioned_ahead == [str(files[3])]
        # The kept notes were not sectioned: their texts are estimated (one window each, as the
        # notes read), never counted as none.
        assert meter.snapshot().total == len(ANIMALS) - 2
        assert _ask(reopened, "manatee")[0]["file_path"] == str(files[3])
    finally:
        model.release.set()
        run.join(120)
    assert not reopened.files.pending_keywords.exists()
    assert _ask(reopened, "manatee")[0]["metadata"]["waiting"] is False


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_a_run_of_fewer_new_notes_reads_nothing_ahead(notes, make_service, monkeypatch):
    started: list[int] = []
    real_start = prepass.KeywordsAhead.start
    monkeypatch.setattr(prepass.KeywordsAhead, "start", lambda self: started.append(1) or real_start(self))
    _vault(notes)  # 30 notes: under MIN_NOTES
    service = make_service([notes])
    meter = ProgressMeter()
    service.reindex(progress=meter)
    assert started == [] and not service.files.pending_keywords.exists()
    assert meter.snapshot().keyword_notes == len(ANIMALS)
    assert meter.snapshot().notes_held == 0  # a first index: no note was held before it
    again = ProgressMeter()
    service.reindex(progress=again)  # a restart's check: every note held, each answers meanwhile
    assert again.snapshot().notes_held == again.snapshot().notes_total == len(ANIMALS)
    monkeypatch.setattr(prepass, "MIN_NOTES", 10)
    write(notes / "more" / "x.md", "# x\n")
    for i in range(12):
        write(notes / "more" / f"m{i}.md", f"# More {i}\n\nmore text\n")
    service.reindex()
    assert started == [1]  # 13 new notes: a pass

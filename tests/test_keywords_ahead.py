"""Keywords ahead of the model: a first index's notes are found by their words before they are embedded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mdrag.index import prepass
from mdrag.milvus import PendingKeywords
from mdrag.params import SearchParams
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
    assert [r["file_path"] for _, r in waiting.rows("wombat", 10, tags=("zoo",))] == ["/n/b.md"]
    assert waiting.rows("wombat", 10, tags=("other",)) == []
    assert waiting.rows("wombat", 10, path_prefix="/n/a") == []
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


def test_an_unreadable_pending_folder_is_removed_and_written_again(tmp_path):
    path = tmp_path / "milvus.pending.keywords"
    path.mkdir()
    (path / "meta.json").write_text("not json")
    waiting = PendingKeywords(path)
    assert not waiting.active and not path.exists()
    waiting.add([_window("/n/a.md", "The capybara swims")])
    assert [r["file_path"] for _, r in waiting.rows("capybara", 10)] == ["/n/a.md"]


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


def _vault(folder: Path) -> list[Path]:
    return [
        write(
            folder / f"animal-{i:02d}.md",
            f"# The {name}\n\nField notes on the {name}: where it lives and what it eats.\n",
        )
        for i, name in enumerate(ANIMALS)
    ]


class HeldModel:
    """The indexing side of a real embedder held at its first batch until `release` (queries pass)."""

    def __init__(self, embedder, monkeypatch) -> None:
        self.release = threading.Event()
        self.reached = threading.Event()
        real = embedder.embed

        def held(texts, cancel=None, done=None):
            self.reached.set()
            assert self.release.wait(120), "the test never released the model"
            return real(texts, cancel=cancel, done=done)

        monkeypatch.setattr(embedder, "embed", held)


def _wait(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_a_first_index_finds_every_note_by_its_words_before_the_model_reaches_it(
    notes, make_service, embedder, monkeypatch
):
    monkeypatch.setattr(prepass, "MIN_NOTES", 10)
    monkeypatch.setattr(prepass, "BATCH_NOTES", 7)
    _vault(notes)
    service = make_service([notes])
    model = HeldModel(embedder, monkeypatch)
    meter = ProgressMeter()
    run = threading.Thread(target=lambda: service.reindex(progress=meter))
    run.start()
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
            assert "kinkajou" in top["section_text"]
            assert found["confidence"]["reason"] == ""  # the word is a waiting note's: not "no note mentions"
        dense = service.search(
            SearchParams(query="where does the kinkajou live", mode="dense", threshold=0.0)
        )
        assert dense["results"] == []  # meaning needs the model: nothing is embedded yet
        missing = service.search(SearchParams(query="where does the walrus live", mode="hybrid"))
        assert "walrus" in missing["confidence"]["reason"]
    finally:
        model.release.set()
        run.join(120)
    assert not service.files.pending_keywords.exists()  # every note is indexed: none waits
    found = service.search(SearchParams(query="where does the kinkajou live", threshold=0.0))
    assert found["results"][0]["file_path"].endswith("animal-11.md")


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_notes_read_ahead_stay_searchable_across_a_restart_until_the_next_run_indexes_them(
    notes, make_service, embedder, monkeypatch
):
    monkeypatch.setattr(prepass, "MIN_NOTES", 10)
    files = _vault(notes)
    service = make_service([notes])
    model = HeldModel(embedder, monkeypatch)
    meter = ProgressMeter()
    cancel = threading.Event()
    run = threading.Thread(target=lambda: service.reindex(progress=meter, cancel=cancel))
    run.start()
    assert model.reached.wait(60)
    _wait(lambda: meter.snapshot().keyword_notes == len(ANIMALS))
    cancel.set()  # a stop (the daemon's restart) before the model wrote anything
    model.release.set()
    run.join(120)
    assert len(service.catalog) == 0
    service.close()
    files[3].write_text("# The dugong\n\nThis note was rewritten: now about the manatee.\n")
    files[4].unlink()
    monkeypatch.setattr(embedder, "embed", type(embedder).embed.__get__(embedder))
    reopened = make_service([notes])
    found = reopened.search(SearchParams(query="binturong habitat", threshold=0.0))
    assert found["results"][0]["file_path"].endswith("animal-02.md")
    # A note changed or deleted since it was read is not shown from what was read.
    for word in ("dugong", "echidna"):
        hits = reopened.search(SearchParams(query=f"{word} field notes", threshold=0.0))["results"]
        assert not any(h["file_path"].endswith(("animal-03.md", "animal-04.md")) for h in hits), hits
    # The next run's pass reads again only what changed: the notes it finds waiting are kept.
    sectioned_ahead: list[str] = []
    real_section = reopened.indexer._section

    def section(prepared, document):
        if threading.current_thread().name == "mdrag-keywords-ahead":
            sectioned_ahead.append(prepared.path)
        return real_section(prepared, document)

    monkeypatch.setattr(reopened.indexer, "_section", section)
    reopened.reindex()
    assert set(sectioned_ahead) <= {str(files[3])}, sectioned_ahead
    assert not reopened.files.pending_keywords.exists()
    hits = reopened.search(SearchParams(query="manatee", threshold=0.0))["results"]
    assert hits[0]["file_path"].endswith("animal-03.md")


@pytest.mark.parametrize("milvus_uri", ["lite"], indirect=True)
def test_a_small_run_reads_nothing_ahead(notes, make_service):
    _vault(notes)  # 30 notes: under MIN_NOTES
    service = make_service([notes])
    meter = ProgressMeter()
    service.reindex(progress=meter)
    assert not service.files.pending_keywords.exists()
    assert meter.snapshot().keyword_notes == len(ANIMALS)

"""Unicode forms: a word written composed ("é", as most systems type it) or decomposed ("e" and
a combining accent, as macOS names files, and Korean as its letters' parts) is one word to the
index: in a note's text, its file name, a link and a query, through a real search."""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata

import pytest

from mdrag.client.paths import Paths
from mdrag.client.paths import on_disk as spelled_on_disk
from mdrag.notes.document import decode_text, file_title
from mdrag.notes.links import LinkResolver
from mdrag.params.search import SearchParams
from mdrag.text.canonical import STREAM_SAFE_RUN, canonical
from tests.daemon_process import DaemonProcess, mdrag_cli

WORDS = ["Crème brûlée", "Ångström", "김치찌개", "Ελληνικά", "naïve café"]


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@pytest.mark.parametrize("word", WORDS)
def test_a_notes_text_a_file_title_and_a_query_are_read_composed_whichever_form_they_came_in(word):
    assert nfd(word) != word  # each is written differently decomposed
    for form in (nfc, nfd):
        assert decode_text(form(f"# {word}\n\n{word}\n").encode()) == f"# {nfc(word)}\n\n{nfc(word)}\n"
        assert file_title(f"/notes/{form(word)}.md") == nfc(word)
        assert SearchParams.parse({"query": f" {form(word)} "}).query == nfc(word)


@pytest.mark.parametrize("word", WORDS)
def test_a_link_finds_the_note_in_either_form_of_its_name(word):
    for on_disk, in_link in [(nfd, nfc), (nfc, nfd)]:
        path = f"/n/{on_disk(word)}/{on_disk(word)}.md"
        resolver = LinkResolver([path, "/n/trip.md"])
        for kind, target in [
            ("wikilink", in_link(word)),
            ("markdown", f"{in_link(word)}/{in_link(word)}.md"),
        ]:
            assert resolver.resolve("/n/trip.md", {"kind": kind, "target": target}) == path


@pytest.mark.parametrize(
    "marks",
    [
        "\u0301\u0316",
        "\u0316\u0301",
        "\u0301",
        "\u05b0\u05b1\u05b2",
        "\u0e38\u0e39\u0e48",
        "\u0f73",
        "\u0f75\u0f81",
    ],
    ids=[
        "above-below",
        "below-above",
        "one-mark",
        "hebrew-points",
        "thai-marks",
        "tibetan-two",
        "tibetan-mixed",
    ],
)
def test_a_run_of_combining_marks_made_to_be_slow_is_composed_in_linear_time(marks):
    # Canonical ordering sorts a run of marks in time that grew with its square: 100,000 took 5.5 s.
    hostile = "a" + marks * (120_000 // len(marks)) + " cafe\u0301"
    started = time.perf_counter()
    text = canonical(hostile)
    assert time.perf_counter() - started < 1.0
    assert text.endswith(" café") and unicodedata.is_normalized("NFC", text)
    # Tibetan's three vowel signs decompose into two marks each: no run longer than the format's.
    runs = re.findall(r"[^\u034f a-z]+", unicodedata.normalize("NFD", text[:100_000]))
    assert max(len(run) for run in runs) <= STREAM_SAFE_RUN


def test_real_letters_with_several_marks_compose_as_unicode_says():
    for word in ["Tiếng Việt có dấu ệ ở ữ", "ཀྵྼ", "שָׁלוֹם", "ญี่ปุ่น"]:
        assert canonical(nfd(word)) == nfc(word)


def test_a_search_finds_a_decomposed_note_by_its_words_and_a_decomposed_query_a_composed_one(
    make_service, notes
):
    (notes / nfd("Crème brûlée.md")).write_text(nfd("# Crème brûlée\n\nTorch the sugar until it crackles.\n"))
    (notes / "김치찌개.md").write_text("# 김치찌개\n\n김치와 돼지고기를 넣고 끓입니다.\n")
    (notes / "pancakes.md").write_text("# Pancakes\n\nWhisk flour, eggs and milk.\n")
    service = make_service([notes])
    service.reindex()
    for query, note in [("crème brûlée", nfd("Crème brûlée.md")), (nfd("김치찌개"), "김치찌개.md")]:
        for mode in ("keyword", "hybrid"):
            hits = service.search({"query": query, "mode": mode, "threshold": 0.0, "top_k": 1})["results"]
            assert [os.path.basename(hit["file_path"]) for hit in hits] == [note]  # the path as on disk
            assert hits[0]["confidence_score"] >= 0.7, (query, mode)  # its title, said whole
    hit = service.search({"query": "crème brûlée", "threshold": 0.0, "top_k": 1})["results"][0]
    assert hit["metadata"]["title"] == "Crème brûlée" == nfc(hit["metadata"]["title"])


FORMS = [("composed", nfc), ("decomposed", nfd)]


@pytest.mark.parametrize(("on_disk_form", "disk"), FORMS)
@pytest.mark.parametrize(("typed_form", "typed"), FORMS)
def test_a_path_typed_in_either_form_names_the_folder_and_note_as_spelled_on_disk(
    tmp_path, monkeypatch, on_disk_form, disk, typed_form, typed
):
    vault = tmp_path / "vault"
    note = vault / disk("Crème") / disk("brûlée.md")
    note.parent.mkdir(parents=True)
    note.write_text("# Brûlée\n")
    monkeypatch.chdir(tmp_path)
    paths = Paths([str(vault)])
    assert paths.typed(typed("vault/Crème")) == str(note.parent)  # a --path
    assert paths.typed(typed("vault/Crème/brûlée.md")) == str(note)  # a note for similar, related
    assert paths.typed(typed(f"{vault}/Crème/brûlée.md")) == str(note)  # absolute
    assert spelled_on_disk(typed(str(note))) == str(note)  # as `mdrag mcp` reads an assistant's path
    # A name in neither form, and what follows it, stay as typed; a partial name too (a --path
    # prefix that ends inside a name is matched as text).
    assert paths.typed(typed("vault/Crème/gone/brûlée.md")) == os.path.join(
        str(note.parent), "gone", typed("brûlée.md")
    )
    assert paths.typed("vault/Cr") == str(vault / "Cr")
    # As `mdrag mcp` reads a path: relative, and a folder's trailing slash kept (a --path prefix).
    monkeypatch.chdir(vault)
    assert spelled_on_disk(typed("Crème/")) == disk("Crème") + "/"
    assert spelled_on_disk(typed("Crème/brûlée.md")) == os.path.join(disk("Crème"), disk("brûlée.md"))


def test_a_search_under_a_folder_macos_named_decomposed_finds_it_typed_composed(tmp_path):
    notes = tmp_path / "notes"
    folder = notes / nfd("Café")
    folder.mkdir(parents=True)
    (folder / "menu.md").write_text("# Menu\n\nEspresso, cortado and a flat white.\n")
    (notes / "elsewhere.md").write_text("# Elsewhere\n\nEspresso beans to order.\n")
    process = DaemonProcess(notes, tmp_path / "state").start()
    try:
        process.wait_fresh()
        found = mdrag_cli(
            process.env, "search", "espresso", "--path", "notes/Café", "--threshold", "0", "--json"
        )
        assert found.returncode == 0, found.stderr
        assert [hit["file_path"] for hit in json.loads(found.stdout)["results"]] == [str(folder / "menu.md")]
        related = mdrag_cli(process.env, "related", nfc("notes/Café/menu.md"), "--json")
        assert related.returncode == 0, related.stderr
        assert json.loads(related.stdout)["note"] == str(folder / "menu.md")
    finally:
        process.close()

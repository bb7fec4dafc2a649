"""Hit text: a hit's section text comes from its note when the note still holds the indexed version."""

from __future__ import annotations

import codecs
import os

import pytest

from mdrag import keys
from mdrag.retrieval.hittext import attach_texts
from tests.conftest import write

NOTES = {
    "ascii": "# Title\n\nIntro.\n\n## Restore\n\nUse pg_restore to restore a backup.\n",
    "non-ascii": "# Café\n\nÜber die Brücke — naïve 😀 text.\n\n## Zweite\n\nMehr Wörter hier.\n",
    "crlf": "# Title\r\n\r\nWindows line ends.\r\n\r\n## Part\r\n\r\nMore.\r\n",
}


def row_of(path, data: bytes, text: str, section: str, row_id: str = "r1") -> dict:
    start = text.index(section)
    return {
        "id": row_id,
        "file_path": str(path),
        "file_hash": keys.file_hash(data),
        "start_position": start,
        "end_position": start + len(section),
    }


def no_fallback(rows):
    raise AssertionError(f"asked the index for {len(rows)} rows")


@pytest.mark.parametrize("name", sorted(NOTES))
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_the_text_is_the_section_of_the_note_as_indexed(tmp_path, name, encoding):
    text = NOTES[name]
    data = text.encode(encoding) if encoding != "utf-16" else codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    path = tmp_path / f"{name}.md"
    path.write_bytes(data)
    section = text[text.index("## ") :]
    rows = [row_of(path, data, text, section)]
    attach_texts(rows, no_fallback)
    assert rows[0]["section_text"] == section


def test_a_note_read_once_serves_all_its_rows_and_a_row_with_text_is_left_alone(tmp_path, monkeypatch):
    text = NOTES["ascii"]
    path = write(tmp_path / "a.md", text)
    data = path.read_bytes()
    rows = [row_of(path, data, text, part, f"r{i}") for i, part in enumerate(["# Title", "## Restore"])]
    rows.append({**rows[0], "id": "kept", "section_text": "already here"})
    reads = []
    real_open = os.open  # notes/regular opens a note by its descriptor
    monkeypatch.setattr("os.open", lambda *a, **k: reads.append(a[0]) or real_open(*a, **k))
    attach_texts(rows, no_fallback)
    assert [r["section_text"] for r in rows] == ["# Title", "## Restore", "already here"]
    assert len(reads) == 1


@pytest.mark.parametrize("change", ["edited", "deleted", "made binary"])
def test_a_note_changed_since_it_was_indexed_shows_what_the_index_embedded(tmp_path, change):
    text = NOTES["ascii"]
    path = write(tmp_path / "a.md", text)
    rows = [row_of(path, path.read_bytes(), text, "## Restore")]
    if change == "edited":
        path.write_text("## Restore\n\nSomething else at the same place, longer than before.\n")
    elif change == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"\x00\x01binary")
    asked = []

    def fallback(stale):
        asked.extend(stale)
        return {"r1": "Use pg_restore to restore a backup."}

    attach_texts(rows, fallback)
    assert rows[0]["section_text"] == "Use pg_restore to restore a backup."
    assert [r["id"] for r in asked] == ["r1"]


def test_search_shows_the_notes_text_and_after_an_edit_the_indexed_one(make_service, notes):
    note = write(notes / "bread.md", "# Bread\n\n## Proofing\n\nLet the sourdough rise for five hours.\n")
    service = make_service([notes])
    service.reindex()
    query = {"query": "how long should sourdough rise", "threshold": 0.0, "mode": "hybrid"}
    hit = service.search(query)["results"][0]
    assert hit["section_text"].rstrip() == "## Proofing\n\nLet the sourdough rise for five hours."
    assert hit["snippet"]["text"].strip() == "Let the sourdough rise for five hours."
    # Changed on disk, not indexed yet (no watcher here): the hit still shows the indexed text.
    note.write_text("# Bread\n\n## Baking\n\nBake at 250 degrees for forty minutes, covered.\n")
    hit = service.search(query)["results"][0]
    assert "five hours" in hit["section_text"] and "degrees" not in hit["section_text"]

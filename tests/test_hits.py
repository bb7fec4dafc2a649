"""Hits a person can read: the matched window as snippet, the title-led heading path, clean headings."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.conftest import write

FILLER = " ".join(
    f"Paragraph {i} talks about the weather in the valley, the rain and the clouds over the hills."
    for i in range(40)
)
HUGO_PAGE = f"""---
title: Host on GitHub Pages
---
Intro text about hosting a site.

## Configuration {{#configuration-pages}}

{FILLER}

The sourdough starter needs rye flour and warm water every morning.

## Other resources

Links to more reading about 2nd&ndash;4th deploys &amp; previews.
"""


def prepared(embedder, path, text):
    """A note as the indexer prepares it, with zero vectors (no model run)."""
    from mdrag.index.rows import PreparedNote
    from mdrag.notes.document import parse_document
    from mdrag.notes.sections import Sectioner, embedding_inputs

    document = parse_document(str(path), text.encode())
    outline, title, inputs = embedding_inputs(Sectioner(embedder.count_tokens, 1000), document)
    note = PreparedNote(str(path), True, document, outline.sections, title=title, file_hash="h")
    for n, (prefix, body) in enumerate(inputs):
        lead, spans = embedder.window_spans(prefix, body)
        note.section_ids.append(f"s{n}")
        note.windows.append([lead + body[a:b] for a, b in spans])
        note.spans.append(spans)
    return note, inputs


def test_each_rows_window_place_is_the_text_it_embedded_after_its_heading_path(embedder, tmp_path):
    from mdrag.index.rows import vector_rows

    note, _ = prepared(embedder, tmp_path / "page.md", HUGO_PAGE)
    vectors = {
        (sid, w): np.zeros(4)
        for sid, ws in zip(note.section_ids, note.windows, strict=True)
        for w in range(len(ws))
    }
    rows = vector_rows(note, vectors)
    assert len({r["section_id"] for r in rows if r["window_index"] > 0}) == 1  # one long section
    for r in rows:
        d = r["display"]
        window = HUGO_PAGE[d["window_start"] : d["window_end"]]
        assert r["embedded_text"].endswith(window) and window.strip()
        assert d["start_position"] <= d["window_start"] < d["window_end"] <= d["end_position"]
    paths = [r["display"]["heading_path"] for r in rows if r["window_index"] == 0]
    assert paths == [
        "Host on GitHub Pages",
        "Host on GitHub Pages > Configuration",
        "Host on GitHub Pages > Other resources",
    ]
    assert [r["display"]["anchor"] for r in rows if r["window_index"] == 0] == [
        "",
        "configuration-pages",
        "other-resources",
    ]


def test_a_note_without_a_title_keeps_its_heading_path_and_its_file_name_does_not_lead_it(embedder, tmp_path):
    from mdrag.index.rows import vector_rows

    note, _ = prepared(embedder, tmp_path / "plain.md", "## Only a section\n\nwords here\n")
    rows = vector_rows(note, {("s0", 0): np.zeros(4)})
    assert rows[0]["display"]["heading_path"] == "Only a section"
    assert rows[0]["embedded_text"].startswith("plain > Only a section")  # embedded as before


@pytest.mark.slow
def test_a_search_hit_shows_the_window_that_matched_under_the_title_led_heading_path(make_service, notes):
    page = write(notes / "hosting.md", HUGO_PAGE)
    service = make_service([notes])
    service.reindex()
    response = service.search({"query": "sourdough starter rye flour", "threshold": 0.0, "mode": "dense"})
    hit = response["results"][0]
    assert hit["heading_path"] == "Host on GitHub Pages > Configuration"
    assert hit["source"]["anchor"] == f"{page}#configuration-pages"
    shown = hit["snippet"]
    assert "sourdough starter needs rye flour" in shown["text"]
    assert "Paragraph 0 " not in shown["text"]  # not the section's start
    assert HUGO_PAGE.splitlines()[shown["end_line"] - 1].startswith("The sourdough starter")
    assert {shown["text"][a:b].casefold() for a, b in shown["highlights"]} >= {"sourdough", "starter", "rye"}
    other = service.search({"query": "deploys and previews", "threshold": 0.2, "mode": "keyword"})["results"]
    assert any(h["heading_path"] == "Host on GitHub Pages > Other resources" for h in other)


MARKED_UP = """# The **Great** `PowerShell` Guide

## [Start-Transcript](Start-Transcript.md)

Start-Transcript records a console session in a transcript file.

## See [[Sessions|remote sessions]] <kbd>Ctrl</kbd>+<kbd>C</kbd>

Stop a remote session with a keystroke.
"""


def test_a_hits_heading_path_heading_and_title_read_as_rendered_not_as_markup(make_service, notes):
    write(notes / "guide.md", MARKED_UP)
    service = make_service([notes])
    service.reindex()
    hit = service.search({"query": "record the console session to a file", "threshold": 0.0})["results"][0]
    assert (
        hit["heading_path"]
        == hit["source"]["heading_path"]
        == "The Great PowerShell Guide > Start-Transcript"
    )
    assert (hit["section_heading"], hit["metadata"]["title"]) == (
        "Start-Transcript",
        "The Great PowerShell Guide",
    )
    other = service.search({"query": "stop a remote session keystroke", "threshold": 0.0})["results"][0]
    assert (
        other["heading_path"]
        == "The Great PowerShell Guide > See remote sessions <kbd>Ctrl</kbd>+<kbd>C</kbd>"
    )
    # Below the threshold the closest notes are named the same way.
    closest = service.search({"query": "record the console session to a file", "threshold": 1.0})["closest"]
    assert closest[0]["heading_path"] == "The Great PowerShell Guide > Start-Transcript"


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("Cmdlets > [Start-Transcript](Start-Transcript.md)", "Cmdlets > Start-Transcript"),
        ("Using `2**64` threshold", "Using 2**64 threshold"),  # code as written
        ("The `__init__` method", "The __init__ method"),
        ("__AllParameterSets", "__AllParameterSets"),  # no emphasis: nothing closes it
        ("a **bold** and _em_ b", "a bold and em b"),
        ("See [[Packing List|what to pack]] and [[Note#Part]]", "See what to pack and Note > Part"),
        ("The <details> element", "The <details> element"),  # its author may have escaped it
        ("Receivers   <img src=x>  y", "Receivers <img src=x> y"),
        ("x\\*y and Tom & Jerry", "x*y and Tom & Jerry"),
        ("![logo](logo.png)", "![logo](logo.png)"),  # shows no text: as written
    ],
)
def test_a_stored_heading_is_shown_as_rendered_and_nothing_else_is_lost(stored, shown):
    from mdrag.retrieval.hits import shown_heading

    assert shown_heading(stored) == shown


@pytest.mark.slow
def test_an_older_index_upgrades_by_itself_and_embeds_again_only_the_headings_that_changed(
    upgraded_from_older_layout, notes
):
    from mdrag.notes import blocks, sections

    write(notes / "hosting.md", HUGO_PAGE)
    write(notes / "plain.md", "# Plain\n\nA note whose headings need no change.\n\n## Part\n\nMore words.\n")
    # As a layout before read them: headings kept their attribute lists and entities.
    upgraded = upgraded_from_older_layout(
        [notes],
        (blocks, "split_attributes", lambda heading: (heading, "")),
        (blocks, "decode_entities", lambda text: text),
        (sections, "decode_entities", lambda text: text),
    )
    try:
        report = upgraded.reindex()
        assert report.added == 2
        assert report.sections_embedded == 1  # "Configuration {#configuration-pages}" only
        assert report.sections_reused == 4
        hit = upgraded.search({"query": "sourdough starter rye flour", "threshold": 0.0})["results"][0]
        assert hit["heading_path"] == "Host on GitHub Pages > Configuration"
    finally:
        upgraded.close()


def _said_snippet(hit, capsys) -> str:
    from mdrag.cli.output import say
    from mdrag.cli.render import snippet_parts

    say(*snippet_parts(hit))
    return capsys.readouterr().out.rstrip("\n")


def test_marks_are_bold_only_on_a_terminal_without_no_color(monkeypatch, capsys):
    hit = {"snippet": {"text": "use restore now", "highlights": [[4, 11]]}}
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[1m" in _said_snippet(hit, capsys)
    monkeypatch.setenv("NO_COLOR", "1")
    assert _said_snippet(hit, capsys) == "use restore now"
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert _said_snippet(hit, capsys) == "use restore now"


def test_a_hit_from_a_daemon_without_snippets_shows_its_section_under_the_heading(capsys):
    assert _said_snippet({"section_text": "## Head\n\nbody  text"}, capsys) == "body text"

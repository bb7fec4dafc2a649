"""Line endings: a note saved with any ending an editor writes (LF, CRLF, a classic Mac's CR, a
mix) is read, split, shown and searched as the same note with LF endings."""

from __future__ import annotations

import pytest

from mdrag import keys
from mdrag.embedding.embedder import Embedder
from mdrag.notes.document import decode_text, parse_document
from mdrag.notes.sections import Sectioner
from mdrag.retrieval.hittext import attach_texts

NOTE = (
    "---\ntitle: Bikes\naliases: [cycling]\n---\n# Bikes\n\nIntro line about bikes.\n\n"
    "## Brakes\n\nReplace brake pads when the groove wears flat.\nCheck cables monthly.\n\n"
    "```\ncode line\n```\n\n## Tyres\n\nKeep tyre pressure at 4 bar.\n"
)


def mixed(text: str) -> str:
    """Each line ended by the next of LF, CR and CRLF in turn (a file edited on three systems).
    In this order no CR is followed by an empty line's LF, which any reader takes as one CRLF."""
    lines = text.split("\n")
    ends = ["\n", "\r", "\r\n"]
    return "".join(line + ends[i % 3] for i, line in enumerate(lines[:-1])) + lines[-1]


ENDINGS = {
    "LF": lambda t: t,
    "CRLF": lambda t: t.replace("\n", "\r\n"),
    "CR": lambda t: t.replace("\n", "\r"),
    "mixed": mixed,
}


@pytest.fixture(scope="module")
def sectioner() -> Sectioner:
    return Sectioner(Embedder().count_tokens, 1000)  # the tokenizer alone: no model is loaded


def outline_of(sectioner: Sectioner, data: bytes):
    document = parse_document("/notes/bikes.md", data)
    outline = sectioner.split(document.text, document.body_offset)
    sections = [
        (s.heading_path, s.start_line, s.end_line, document.text[s.start_position : s.end_position])
        for s in outline.sections
    ]
    return document, sections


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_note_reads_as_the_same_note_whatever_its_line_endings(sectioner, ending):
    plain, expected = outline_of(sectioner, NOTE.encode())
    document, sections = outline_of(sectioner, ENDINGS[ending](NOTE).encode())
    assert document.frontmatter == plain.frontmatter == {"title": "Bikes", "aliases": ["cycling"]}
    assert document.aliases == ["cycling"]
    assert [(path, first, last) for path, first, last, _ in sections] == [
        (path, first, last) for path, first, last, _ in expected
    ]
    assert [text.replace("\r\n", "\n") for *_, text in sections] == [text for *_, text in expected]
    assert ("Bikes", "Brakes") in {path for path, *_ in sections}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_hit_shows_the_section_as_indexed_whatever_the_line_endings(tmp_path, sectioner, ending):
    data = ENDINGS[ending](NOTE).encode()
    path = tmp_path / "bikes.md"
    path.write_bytes(data)
    document, sections = outline_of(sectioner, data)
    start = document.text.index("## Brakes")
    section = next(text for _, _, _, text in sections if text.startswith("## Brakes"))
    row = {
        "id": "r1",
        "file_path": str(path),
        "file_hash": keys.file_hash(data),
        "start_position": start,
        "end_position": start + len(section),
    }
    attach_texts([row], lambda rows: pytest.fail("the note was read, not the index"))
    assert row["section_text"] == section
    assert "\r" not in section.replace("\r\n", "")  # no carriage return left to write over a line


def test_a_lone_carriage_return_reads_as_a_newline_of_the_same_length():
    for data in [b"a\rb", b"a\r\nb", b"a\r\r\nb", b"\r", b"a\r"]:
        text = decode_text(data)
        assert len(text) == len(data.decode())
        assert "\r" not in text.replace("\r\n", "")
    assert decode_text(b"a\r\r\nb") == "a\n\r\nb"
    assert decode_text("# T\r\r".encode("utf-16")) == "# T\n\n"


def test_search_finds_each_endings_note_by_its_section_title_and_lines(make_service, notes):
    for name, convert in ENDINGS.items():
        (notes / f"{name}.md").write_bytes(convert(NOTE).encode())
    service = make_service([notes])
    service.reindex()
    hits = service.search({"query": "when to replace brake pads", "threshold": 0.0, "top_k": 4})["results"]
    assert {hit["file_path"].rsplit("/", 1)[-1] for hit in hits} == {f"{name}.md" for name in ENDINGS}
    for hit in hits:
        assert (hit["heading_path"], hit["start_line"], hit["metadata"]["title"]) == (
            "Bikes > Brakes",
            9,
            "Bikes",
        )
        assert hit["similarity"] == pytest.approx(hits[0]["similarity"], abs=0.01)  # the same text embedded

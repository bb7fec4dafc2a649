"""Document reading: hashing, frontmatter fields, and clean failures on files that are not text."""

from __future__ import annotations

import hashlib

import pytest

from mdrag.errors import DocumentError
from mdrag.notes.document import parse_document, read_bytes


def parse(tmp_path, data: bytes, name: str = "n.md"):
    path = tmp_path / name
    path.write_bytes(data)
    return parse_document(path, read_bytes(path))


def test_file_hash_is_the_sha256_of_the_bytes(tmp_path):
    data = b"# Hello\n\nworld\n"
    assert parse(tmp_path, data).file_hash == hashlib.sha256(data).hexdigest()


def test_tags_topics_keywords_become_lists_from_yaml_lists_or_comma_strings(tmp_path):
    doc = parse(tmp_path, b"---\ntags: [a, b]\ntopics: x, y ,z\nkeywords: single\n---\nbody\n")
    assert doc.fm_list("tags") == ["a", "b"]
    assert doc.fm_list("topics") == ["x", "y", "z"]
    assert doc.fm_list("keywords") == ["single"]
    assert doc.has_frontmatter


@pytest.mark.parametrize(
    ("frontmatter", "aliases"),
    [
        (b"aliases: [k8s, kube]", ["k8s", "kube"]),
        (b"aliases: k8s, kube", ["k8s", "kube"]),  # a comma-separated string
        (b"alias: k8s", ["k8s"]),  # Obsidian's older key
        (b"aliases: [K8s, k8s, '  Kube  control ']", ["K8s", "Kube control"]),  # once, spaces closed
        (b"aliases: [/about/privacy/, docs/old, 'C:\\\\notes', k8s]", ["k8s"]),  # a site's old URLs
        (b"aliases: [null, {a: b}, [x], 2024]", ["2024"]),  # no mapping, list or null is a name
        (b"aliases: ['" + b"x" * 121 + b"', k8s]", ["k8s"]),  # a paragraph is no name
        (b"aliases: [a, b, c, d, e, f, g, h, i, j]", ["a", "b", "c", "d", "e", "f", "g", "h"]),
        (b"aliases: {a: b}", []),  # a mapping, not names
        (b"aliases: [yes, no, k8s]", ["k8s"]),  # YAML's booleans are no names
        (b"aliases:\nalias: k8s", ["k8s"]),  # an empty `aliases` leaves the older key its say
        (b"aliases:", []),
        (b"title: T", []),
    ],
)
def test_aliases_are_the_notes_other_names_and_nothing_else(tmp_path, frontmatter, aliases):
    assert parse(tmp_path, b"---\n" + frontmatter + b"\n---\nbody\n").aliases == aliases


@pytest.mark.parametrize(
    ("frontmatter", "description"),
    [
        (b"description: Deploy a site to Netlify.", "Deploy a site to Netlify."),
        (b"summary: Fees burn.", "Fees burn."),  # a proposal's or an article's key
        (b"description: Fees burn.\nsummary: other", "Fees burn."),
        (b"description: |\n  Two\n  lines,   spaced", "Two lines, spaced"),  # one line
        (b"description: [a, b]", ""),  # a list or a mapping is no description
        (b"description: {a: b}", ""),
        (b"description:", ""),
        (b"description: 2024", ""),  # a number, a date or a yes is no description
        (b"description: 12.5", ""),
        (b"description: no", ""),
        (b"description: [a]\nsummary: Fees burn.", "Fees burn."),  # then the summary says it
        (b"title: T", ""),
    ],
)
def test_a_notes_description_is_its_frontmatters_one_line_about_it(tmp_path, frontmatter, description):
    assert parse(tmp_path, b"---\n" + frontmatter + b"\n---\nbody\n").description == description


def test_a_long_description_is_cut_to_what_the_model_reads(tmp_path):
    from mdrag.notes.document import DESCRIPTION_CHARS

    doc = parse(tmp_path, b"---\ndescription: " + b"word " * 12_000 + b"\n---\nbody\n")
    assert len(doc.description) == DESCRIPTION_CHARS - 1  # "word word … word" ends at a space, stripped
    assert doc.description.startswith("word word")


def test_frontmatter_is_not_part_of_the_body(tmp_path):
    doc = parse(tmp_path, b"---\ntitle: T\nsecret: frontmatter-only\n---\n# Body\n\ntext\n")
    assert "frontmatter-only" not in doc.body
    assert doc.body.startswith("# Body")
    assert doc.text[doc.body_offset :] == doc.body


def test_language_defaults_to_english_and_reads_frontmatter(tmp_path):
    assert parse(tmp_path, b"plain\n").language == "en"
    assert parse(tmp_path, b"---\nlanguage: de\n---\nText\n", "de.md").language == "de"


def test_malformed_frontmatter_keeps_the_whole_text_and_records_a_warning(tmp_path):
    doc = parse(tmp_path, b"---\ntitle: [unclosed\n---\n# Note\n\nkayak trip\n")
    assert "malformed YAML frontmatter" in doc.warning
    assert "kayak trip" in doc.body and doc.frontmatter == {}


def test_frontmatter_that_is_not_a_mapping_is_indexed_as_text(tmp_path):
    doc = parse(tmp_path, b"---\n- just\n- a list\n---\nbody\n")
    assert "not a mapping" in doc.warning and "body" in doc.body


def test_yaml_dates_are_stored_as_text(tmp_path):
    doc = parse(tmp_path, b"---\ndate: 2024-01-02\n---\nx\n")
    assert doc.frontmatter["date"] == "2024-01-02"


def test_invalid_utf8_fails_with_the_offending_byte(tmp_path):
    with pytest.raises(DocumentError, match=r"not valid UTF-8.*0xff"):
        parse(tmp_path, b"# ok\n\xff\xfe\n")


def test_binary_file_named_md_fails_cleanly(tmp_path):
    with pytest.raises(DocumentError, match="binary"):
        parse(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00")


def test_unreadable_file_fails_with_a_reason(tmp_path):
    with pytest.raises(DocumentError, match="disappeared"):
        read_bytes(tmp_path / "gone.md")

"""Frontmatter formats: a YAML block between `---` lines (or closed by `...`, as pandoc's may be),
a TOML one between `+++` (Hugo's `hugo new`, Zola) and a JSON object (Hugo's third format) give a note the same title, aliases, tags and description, in a real index and
search, and the page shows neither block as text."""

from __future__ import annotations

import pytest

from mdrag.notes.document import parse_document
from mdrag.ui.render import render_note

BODY = "Push the public folder and the site builds on every commit.\n\n## Build settings\n\nSet the Hugo version.\n"
YAML = (
    "---\ntitle: Deploy to Netlify\naliases: [netlify hosting]\ntags: [hosting, ci]\n"
    "description: Publish a site on Netlify from a git repository.\n---\n" + BODY
)
PANDOC = YAML.replace("---\nPush", "...\nPush")
TOML = (
    "+++\ntitle = 'Deploy to Netlify'\naliases = ['netlify hosting']\ntags = ['hosting', 'ci']\n"
    "description = 'Publish a site on Netlify from a git repository.'\n+++\n" + BODY
)

# The nested object closes at the line's start: the block ends where the object does.
JSON = (
    '{\n  "title": "Deploy to Netlify",\n  "aliases": ["netlify hosting"],\n  "tags": ["hosting", "ci"],\n'
    '  "description": "Publish a site on Netlify from a git repository.",\n  "build": {\n"minify": true\n}\n}\n'
    + BODY
)
FORMATS = pytest.mark.parametrize(
    "text",
    [YAML, PANDOC, TOML, JSON, JSON.replace("\n", "\r\n")],
    ids=["yaml", "yaml-dots", "toml", "json", "json-crlf"],
)


@FORMATS
def test_each_format_gives_the_same_names_and_body(text):
    document = parse_document("/notes/deploy.md", text.encode())
    assert (document.fm_text("title"), document.aliases, document.fm_list("tags"), document.description) == (
        "Deploy to Netlify",
        ["netlify hosting"],
        ["hosting", "ci"],
        "Publish a site on Netlify from a git repository.",
    )
    assert document.body.replace("\r\n", "\n") == BODY


@FORMATS
def test_the_page_shows_the_body_not_the_block(text):
    html, toc = render_note(text, [])
    assert "Deploy to Netlify" not in html and "+++" not in html and "title" not in html and "{" not in html
    assert [entry["text"] for entry in toc] == ["Build settings"]


def test_a_search_finds_a_toml_and_a_json_note_by_their_title_as_it_finds_a_yaml_one(make_service, notes):
    (notes / "yaml.md").write_text(YAML)
    (notes / "toml.md").write_text(TOML)
    (notes / "json.md").write_text(JSON)
    service = make_service([notes])
    report = service.reindex()
    assert report.descriptions_embedded == 1  # the same description, embedded once
    hits = service.search({"query": "deploy to netlify", "threshold": 0.0, "top_k": 3})["results"]
    assert sorted(hit["file_path"].rsplit("/", 1)[-1] for hit in hits) == ["json.md", "toml.md", "yaml.md"]
    for hit in hits:
        assert hit["metadata"]["title"] == "Deploy to Netlify"
        assert hit["heading_path"].startswith("Deploy to Netlify")
    assert hits[0]["similarity"] == pytest.approx(hits[2]["similarity"], abs=0.01)


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        (
            '{\n"title": Deploy\n}\nbody\n',
            "malformed JSON frontmatter, indexed as text: Expecting value: line 2",
        ),
        ('{\n"title": "Deploy"\n', "frontmatter opened with '{' but never closed; indexed as text"),
        (
            '{\n"title": "Deploy"\n} and more\nbody\n',
            "malformed JSON frontmatter, indexed as text: Extra data",
        ),
        ('{{< figure src="x.jpg" >}}\nbody\n', ""),  # a Hugo shortcode, no block: text, no warning
        ('{ "title": "Deploy" }\nbody\n', ""),  # Hugo's block opens with a brace alone on its line
        ('}\n"title": "Deploy"\n}\nbody\n', ""),  # a closing brace opens none
    ],
)
def test_text_that_opens_with_a_brace_and_is_no_json_block_stays_text(text, warning):
    document = parse_document("/notes/deploy.md", text.encode())
    assert (document.frontmatter, document.body) == ({}, text)
    assert document.warning.startswith(warning) and bool(document.warning) == bool(warning)

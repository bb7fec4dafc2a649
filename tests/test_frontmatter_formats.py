"""Frontmatter formats: a YAML block between `---` lines (or closed by `...`, as pandoc's may be),
a TOML one between `+++` (Hugo's `hugo new`, Zola) and a JSON object (Hugo's third format) give a note the same title, aliases, tags and description, in a real index and
search, and the page shows neither block as text."""

from __future__ import annotations

import pytest

from mdrag.notes.document import parse_document
from mdrag.notes.sections import Sectioner, embedding_inputs
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


# Blocks that open and close but are not read: a colon unquoted in a title, an Obsidian template's
# `{{date}}` (a YAML mapping), a comment in malformed TOML, malformed JSON, a block past its
# bounds. As markdown each makes a rule and a heading of its lines.
UNREAD = {
    "yaml-colon": "---\ntitle: Kubernetes: the hard way\ntags: [k8s]\n---\n",
    "obsidian-template": "---\ncreated: {{date}}\ntags:\n---\n",
    "toml-comment": "+++\n# drafted in a hurry\ntitle = = 'x'\n+++\n",
    "json": '{\n"title": Kubernetes\n}\n',
    "yaml-deep": "---\ntitle: T\nx: " + "[" * 100 + "]" * 100 + "\n---\n",
}


@pytest.mark.parametrize("block", UNREAD.values(), ids=UNREAD.keys())
def test_a_block_the_index_cannot_read_is_text_in_the_note_never_markup(block):
    text = block + "Notes from the course.\n\n## Setup\n\nInstall kubectl.\n"
    document = parse_document("/notes/course.md", text.encode())
    assert document.warning and document.frontmatter == {} and document.body == text  # nothing lost
    outline, title, inputs = embedding_inputs(
        Sectioner(lambda texts: [len(t.split()) for t in texts]), document
    )
    assert title == "course"  # no heading made of the block's lines
    assert [s.heading_path for s in outline.sections][-1] == ("Setup",)
    before = [s for s in outline.sections if not s.heading_path]  # the huge block is cut in parts
    assert before[0].start_line == 1 and len(before) == len(outline.sections) - 1
    assert before[-1].text.endswith("Notes from the course.")
    kept = "\n".join(s.text for s in before)
    assert all(line in kept for line in block.splitlines())  # its words kept
    assert inputs[0] == ("course", before[0].text)  # embedded as written
    html, toc = render_note(text, [])
    assert [entry["text"] for entry in toc] == ["Setup"]  # the page: the block as code, no heading
    assert html.startswith("<pre><code>") and "<hr" not in html


@pytest.mark.parametrize(
    "text",
    [
        # A rule over markdown, and a `...` in code below it: no block of keys, so markdown.
        "---\n# Guide\n\n## Install\n\n```python\ndef f():\n...\n```\n\n## Usage\n\nRun it.\n---\n",
        # Past the size bound: read as markdown, as before.
        "---\n# Guide\n\n" + "".join(f"## Part {i}\n\n{'word ' * 40}\n\n" for i in range(400)) + "---\n",
    ],
    ids=["rule-over-markdown", "past-the-bound"],
)
def test_a_note_that_opens_with_a_rule_over_its_markdown_keeps_its_headings(text):
    document = parse_document("/notes/guide.md", text.encode())
    assert document.unread_end == 0
    outline = Sectioner(lambda texts: [len(t.split()) for t in texts]).split(document.text, 0)
    assert outline.first_h1 == "Guide" and ("Guide", "Install" if "Install" in text else "Part 0") in {
        s.heading_path for s in outline.sections
    }

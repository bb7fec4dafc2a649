"""Links and anchors: wikilinks (aliases, headings) and relative links found, resolved, slugged as on GitHub."""

from __future__ import annotations

from mdrag.notes.anchors import Slugger, github_slug
from mdrag.notes.links import LinkResolver
from mdrag.notes.sections import Sectioner


def outline(text: str):
    return Sectioner(lambda texts: [len(t.split()) for t in texts]).split(text)


def test_wikilinks_with_alias_and_heading_and_relative_links_are_found_outside_code():
    text = (
        "# Trip\n\nSee [[Packing List#Tent|what to pack]] and [[Budget]].\n"
        "Also [the map](../maps/route%20one.md#day-2), [web](https://example.com) and [top](#trip).\n\n"
        "`[[not a link]]`\n\n```\n[[nor this]]\n```\n"
    )
    links = outline(text).links
    assert [(link["kind"], link["target"], link["anchor"], link["alias"]) for link in links] == [
        ("wikilink", "Packing List", "Tent", "what to pack"),
        ("wikilink", "Budget", "", ""),
        ("markdown", "../maps/route one.md", "day-2", ""),
    ]
    assert [link["line"] for link in links] == [3, 3, 4]


def test_wikilinks_resolve_by_name_nearest_first_and_markdown_links_by_relative_path():
    paths = ["/n/a/Budget.md", "/n/b/budget.md", "/n/a/trip.md", "/n/maps/route one.md"]
    resolver = LinkResolver(paths)

    def resolve(target: str, kind: str = "wikilink") -> str | None:
        return resolver.resolve("/n/a/trip.md", {"kind": kind, "target": target})

    assert resolve("budget") == "/n/a/Budget.md"  # same folder wins
    assert resolve("b/Budget") == "/n/b/budget.md"
    assert resolve("Budget.md") == "/n/a/Budget.md"
    assert resolve("Nowhere") is None
    assert resolve("../maps/route one.md", "markdown") == "/n/maps/route one.md"
    assert resolve("../maps/route one", "markdown") == "/n/maps/route one.md"
    assert resolve("missing.md", "markdown") is None


def test_heading_anchors_follow_githubs_slugs_and_number_repeats():
    assert github_slug("A & B") == "a--b"
    slugger = Slugger()
    assert [slugger.slug(h) for h in ["Notes", "Notes", "Notes"]] == ["notes", "notes-1", "notes-2"]
    sections = outline("# Log\n\n## Day\n\nrain\n\n## Day\n\nsun\n").sections
    assert [s.anchor for s in sections] == ["day", "day-1"]
    headings = [
        "## my_function",
        "## `snake_case` API",
        "## Foo\\_bar",
        "## A &amp; B",
        "## Install **mdrag** on <br> Linux!",
        "## See [the docs](x.md) now",
    ]
    anchors = [outline(h + "\n\ntext\n").sections[0].anchor for h in headings]
    assert anchors == [
        "my_function",
        "snake_case-api",
        "foo_bar",
        "a--b",
        "install-mdrag-on--linux",
        "see-the-docs-now",
    ]


def test_a_wikilink_with_a_dot_in_its_name_is_to_a_note_unless_it_names_an_attachment():
    # Obsidian reads [[Node.js]] as the note Node.js.md; the Excalidraw plugin's drawings are
    # notes named *.excalidraw.md and linked as [[Name.excalidraw]]. A markdown link to script.js
    # is to the script.
    text = (
        "Uses [[Node.js]], [[Vue.js|Vue]], [[ASP.NET#Setup]], [[Drawing 2024-01-05 10.12.excalidraw]]"
        " and [[v1.2]].\n\n![[diagram.png]] ![[talk.mp4]] [[slides.pdf]] [[notes.txt]] [[Archive/]]"
        " [code](script.js) [other](Other.md)\n"
    )
    assert [(link["kind"], link["target"]) for link in outline(text).links] == [
        ("wikilink", "Node.js"),
        ("wikilink", "Vue.js"),
        ("wikilink", "ASP.NET"),
        ("wikilink", "Drawing 2024-01-05 10.12.excalidraw"),
        ("wikilink", "v1.2"),
        ("markdown", "Other.md"),
    ]
    resolver = LinkResolver(["/v/Node.js.md", "/v/Drawing 2024-01-05 10.12.excalidraw.md", "/v/notes.md"])
    for target, path in [
        ("Node.js", "/v/Node.js.md"),
        ("Drawing 2024-01-05 10.12.excalidraw", "/v/Drawing 2024-01-05 10.12.excalidraw.md"),
    ]:
        assert resolver.resolve("/v/notes.md", {"kind": "wikilink", "target": target}) == path

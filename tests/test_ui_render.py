"""The page's rendering of untrusted notes: raw HTML escaped, scripting links refused, marks escaped,
and a note of brackets rendered in time linear in its length."""

from __future__ import annotations

import re
import time

from mdrag.ui.render import marked_snippet, render_note, split_frontmatter

HOSTILE = """---
title: hostile
---
# Hostile <b>note</b>

<script>document.title = "pwned"; window.pwned = 1;</script>

<img src="x" onerror="window.pwned = 2">

[a link](javascript:window.pwned=3) and [another](JAVASCRIPT:alert(1)) and [data](data:text/html,<script>x</script>)

<a href="javascript:window.pwned=4">raw anchor</a>

[[evil"><script>window.pwned=5</script>|label" onmouseover="x]]
"""


def tags(html: str) -> list[str]:
    return re.findall(r"<([a-zA-Z][^>]*)>", html)


def test_a_hostile_note_renders_as_text_with_no_script_handler_or_scripting_link():
    html, _ = render_note(
        HOSTILE, [{"kind": "wikilink", "target": 'evil"><script>window.pwned=5</script>', "path": "/n/e.md"}]
    )
    opened = tags(html)
    assert not [t for t in opened if t.lower().startswith(("script", "img", "iframe"))], opened
    assert not [t for t in opened if re.search(r"\son\w+\s*=", t)], opened
    assert "javascript:" not in " ".join(opened).lower()
    assert "data:text/html" not in " ".join(opened)
    assert "&lt;script&gt;document.title" in html  # shown to the reader as the text it is


def test_the_matched_lines_are_marked_and_anchored_and_headings_listed():
    text = "---\ntags: [a]\n---\n# Title\n\nintro\n\n## Part\n\nthe matched paragraph\n"
    html, toc = render_note(text, [], start_line=10, end_line=10)
    assert '<span id="match"></span>\n<p class="match">the matched paragraph</p>' in html
    assert [(h["level"], h["text"]) for h in toc] == [(1, "Title"), (2, "Part")]
    assert split_frontmatter(text)[1] == 3


def test_wikilinks_and_note_links_lead_to_the_notes_they_resolve_to():
    links = [
        {"kind": "wikilink", "target": "Other Note", "path": "/n/other note.md"},
        {"kind": "markdown", "target": "sub/b.md", "path": "/n/sub/b.md"},
    ]
    html, _ = render_note(
        "See [[other note|the other]], [b](sub/b.md), [[missing]] and [web](https://example.org).", links
    )
    # Relative to the page, so that they carry its key (the first segment of its address).
    assert '<a class="wikilink" href="note?path=%2Fn%2Fother+note.md">the other</a>' in html
    assert 'href="note?path=%2Fn%2Fsub%2Fb.md"' in html
    assert '<span class="broken" title="no indexed note by this name">missing</span>' in html
    assert 'href="https://example.org" rel="noopener noreferrer nofollow" target="_blank"' in html


def test_a_snippet_marks_the_query_words_and_escapes_the_rest():
    assert marked_snippet("<b>restore</b> it", [(3, 10)]) == "&lt;b&gt;<mark>restore</mark>&lt;/b&gt; it"


def _render_seconds(text: str) -> float:
    started = time.perf_counter()
    render_note(text, [])
    return time.perf_counter() - started


def test_a_note_of_unclosed_brackets_renders_in_time_linear_in_its_length():
    """Each `[[` once looked for its `]]` to the end of the note, and markdown-it scanned each `[`
    for a label's end: 100,000 `[` took 14 s, 200,000 over 40 s."""
    for make in (lambda n: "[" * n, lambda n: "[[" * (n // 2) + " text", lambda n: "![" * (n // 2)):
        small, large = _render_seconds(make(20_000)), _render_seconds(make(80_000))
        assert large < 6 * max(small, 0.02), (small, large)  # 4x the text: about 4x the time, not 16x
        assert _render_seconds(make(200_000)) < 1.0


def test_wikilinks_are_found_only_as_far_as_one_reaches():
    far = "[[" + "x" * 600 + "]]"  # longer than any wikilink: text, not a link
    html, _ = render_note(
        f"{far} and [[near]]", [{"kind": "wikilink", "target": "near", "path": "/n/near.md"}]
    )
    assert html.count('class="wikilink"') == 1 and "x" * 600 in html

"""Rendering a note for the page: markdown to HTML with raw HTML escaped, wikilinks to their notes.

Notes are untrusted input. markdown-it runs with `html` off, so `<script>`, `<img onerror=…>`
and every other tag in a note come out as text; its validateLink refuses `javascript:`,
`vbscript:`, `file:` and non-image `data:` URLs, so such a link renders as its text. Links to
other notes point at their preview on this page, relative to it (the address holds the page's key).

Every inline rule here costs time linear in the note: a `[[` looks for its `]]` only as far as a
wikilink may reach, and a `[` with no `]` anywhere after it is text at once, never a link label
markdown-it would scan for (100,000 `[` took 14 s, each looking to the end of the note).
"""

from __future__ import annotations

import html
import urllib.parse
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from mdrag.answers.notes import ResolvedLink
from mdrag.notes import frontblock
from mdrag.notes.blocks import add_block_rules

MAX_WIKILINK_CHARS = 500


def note_href(path: str, line: int | None = None, end: int | None = None) -> str:
    """The page's preview of a note (at lines line-end, the match), relative to the page."""
    query = {"path": path, **({"line": str(line)} if line else {}), **({"end": str(end)} if end else {})}
    return "note?" + urllib.parse.urlencode(query) + ("#match" if line else "")


def _wikilink(state: StateInline, silent: bool) -> bool:
    """[[target#anchor|label]] as one token, its target resolved when rendered."""
    if not state.src.startswith("[[", state.pos):
        return False
    start = state.pos + 2
    end = state.src.find("]]", start, start + MAX_WIKILINK_CHARS + 2)  # no further than a link reaches
    inner = state.src[start:end] if end != -1 else ""
    if not inner.strip() or "\n" in inner:
        return False
    if not silent:
        target, _, label = inner.partition("|")
        name, _, anchor = target.partition("#")
        token = state.push("wikilink", "", 0)
        token.meta = {"target": name.strip(), "anchor": anchor.strip(), "label": (label or target).strip()}
    state.pos = end + 2
    return True


def _last_close(state: StateInline) -> int:
    """Where the inline text's last `]` is (-1: none), found once per text."""
    found: int | None = getattr(state, "mdrag_last_close", None)
    if found is None:
        found = state.src.rfind("]")
        setattr(state, "mdrag_last_close", found)  # noqa: B010 (markdown-it's state has no slot for it)
    return found


def _unclosed(state: StateInline, silent: bool) -> bool:
    """A run of `[` and `!` with no `]` after it is text: none of them can open a link or an image."""
    if state.src[state.pos] not in "[!" or state.pos < _last_close(state):
        return False
    end = state.pos
    while end < state.posMax and state.src[end] in "[!":
        end += 1
    if not silent:
        state.pending += state.src[state.pos : end]
    state.pos = end
    return True


def _render_wikilink(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    meta = tokens[idx].meta
    label = html.escape(meta["label"])
    path = env.get("wikilinks", {}).get(meta["target"].casefold())
    if not path:
        return f'<span class="broken" title="no indexed note by this name">{label}</span>'
    return f'<a class="wikilink" href="{html.escape(note_href(path))}">{label}</a>'


def _render_link_open(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    """A link to another indexed note goes to its preview; any other link opens outside the page."""
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    target = urllib.parse.unquote(href.split("#", 1)[0])
    path = env.get("note_links", {}).get(target)
    if path:
        token.attrSet("href", note_href(path))
    elif href and not href.startswith("#"):
        token.attrSet("rel", "noopener noreferrer nofollow")
        token.attrSet("target", "_blank")
    return str(self.renderToken(tokens, idx, options, env))


def _render_comment(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    token.attrJoin("class", "comment")
    return f"<pre{self.renderAttrs(token)}>{html.escape(token.content)}</pre>\n"


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # The blocks as the index reads them: a highlight shortcode is code, an Obsidian comment of
    # several lines is shown as written and muted (as Obsidian's editor shows it).
    add_block_rules(md)
    md.add_render_rule("obsidian_comment", _render_comment)
    md.inline.ruler.before("link", "unclosed", _unclosed)
    md.inline.ruler.before("link", "wikilink", _wikilink)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("link_open", _render_link_open)
    return md


_MD = _parser()


def split_frontmatter(text: str) -> tuple[str, int, Token | None]:
    """The note's body without its frontmatter block, as the index reads it, how many lines the
    block took, and a block the index could not read (malformed YAML, say) as a code block: its
    lines are shown as written, not as the rule and heading markdown would make of them."""
    _, offset, read, _ = frontblock.split_frontmatter(text)
    offset = offset if read else frontblock.block_end(text)
    lines = text.count("\n", 0, offset)
    unread = None
    if offset and not read:
        last = 0 if text.endswith("\n", 0, offset) else 1  # its closing line ends the file
        unread = Token("fence", "code", 0, map=[-lines, last], markup="```", content=text[:offset])
    return text[offset:], lines, unread


def render_note(
    text: str, links: list[ResolvedLink], start_line: int | None = None, end_line: int | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """The note as HTML (the blocks of lines start_line-end_line, 1-based, marked as the match,
    the first with id="match"), and its table of contents: [{level, text, id}]."""
    body, offset, unread = split_frontmatter(text)
    env = {
        "wikilinks": {
            link["target"].casefold(): link["path"]
            for link in links
            if link["kind"] != "markdown" and link.get("path")
        },
        "note_links": {link["target"]: link["path"] for link in links if link["kind"] == "markdown"},
    }
    tokens = ([unread] if unread is not None else []) + _MD.parse(body, env)
    toc: list[dict[str, Any]] = []
    anchor_at = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            token.attrSet("id", f"h{len(toc) + 1}")
            toc.append({"level": int(token.tag[1]), "text": tokens[i + 1].content, "id": f"h{len(toc) + 1}"})
        if token.level != 0 or token.nesting == -1 or not token.map or start_line is None:
            continue
        first, last = token.map[0] + offset + 1, token.map[1] + offset  # 1-based file lines
        if first <= (end_line or start_line) and last >= start_line:
            token.attrJoin("class", "match")
            anchor_at = i if anchor_at is None else anchor_at
    if anchor_at is not None:
        # Where #match scrolls to, with or without JavaScript (our own markup, not the note's).
        anchor = Token("html_block", "", 0)
        anchor.content = '<span id="match"></span>\n'
        tokens.insert(anchor_at, anchor)
    return _MD.renderer.render(tokens, _MD.options, env), toc


def marked_snippet(text: str, highlights: list[tuple[int, int]]) -> str:
    """The snippet as HTML, escaped, with the query's words in <mark>."""
    out, last = [], 0
    for a, b in sorted(highlights):
        if a < last or b > len(text):
            continue
        out.append(html.escape(text[last:a]))
        out.append(f"<mark>{html.escape(text[a:b])}</mark>")
        last = b
    out.append(html.escape(text[last:]))
    return "".join(out)

"""Blocks: a note's top-level markdown blocks and links, parsed a window at a time (markdown-it-py)."""

from __future__ import annotations

import bisect
import functools
import re
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.ruler import RuleOptionsType
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token

from mdrag.answers.notes import Link
from mdrag.notes.comments import comment_spans
from mdrag.notes.counting import pieces
from mdrag.notes.inline import decode_entities, split_attributes
from mdrag.notes.lines import LineIndex
from mdrag.notes.links import MAX_LINKS, extract_links, wikilinks_as_text

BLOCK_TYPES = {
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "fence": "code_block",
    "code_block": "code_block",
    "blockquote_open": "paragraph",
    "html_block": "paragraph",
    "hr": "paragraph",
    "obsidian_comment": "paragraph",  # comment_block, below
}
# markdown-it holds a token of ~450 bytes for each block and item, and arrays for each line: a note
# of 1.6 million one-word paragraphs held 2.2 GB at once. It parses this much text at a time.
WINDOW_CHARS = 65_536
NOTE_ENDS = "mdrag_note_ends"  # in a parse's env: whether its text runs to the note's end
INLINE_LIMIT = 32_768  # inline markup is parsed in pieces this long (one piece holds a heading)
_CONTAINERS = ("bullet_list_open", "ordered_list_open", "blockquote_open", "table_open")
_PLAIN = re.compile(r"[A-Za-z]|[0-9]+(?![0-9.)])")  # a line only a paragraph can hold
_QUOTED_PLAIN = re.compile(r"> ?(?:[A-Za-z]|[0-9]+(?![0-9.)]))")


@dataclass
class Block:
    """A top-level block: its body lines (end exclusive) and the line ranges to split it at."""

    kind: str  # heading or one of BLOCK_TYPES' values
    first_line: int
    end_line: int
    # The first and end line of each list item or table row, flat: 16 bytes a part, not ~100 as
    # tuples (a list of a million items).
    parts: array[int] = field(default_factory=lambda: array("q"))
    heading: str = ""
    level: int = 0
    plain: str = ""  # the heading as rendered, without markup: what its anchor is made from
    anchor_id: str = ""  # the id its attribute list gives (`{#id}`), which the page uses as anchor

    def ranges(self) -> Iterator[tuple[int, int]]:
        """Its parts' (first line, end line), or, with none, its lines one by one."""
        if not self.parts:
            return ((n, n + 1) for n in range(self.first_line, self.end_line))
        return ((self.parts[i], self.parts[i + 1]) for i in range(0, len(self.parts), 2))


class Blocks:
    """The blocks of one note's body, in order, as markdown-it reads them, a window at a time; its
    first H1, its links and where its HTML comments are, are known once they are all read.

    A window ends before its last top-level block, which the next window reads whole (every block
    before it ends inside the window, so it is read as in the whole note). A lone block longer than
    the window is read in a window twice as long, unless it is a list, quote or table of several
    items: those are cut before their last item, and the rest read as a block of its own.
    """

    def __init__(self, md: MarkdownIt, text: str, lines: LineIndex, first_line: int = 0) -> None:
        self.md, self.text, self.lines = md, text, lines
        self.first_line = first_line  # the body line read from (those before are not markdown)
        self.env: dict[str, object] = {}  # the link reference definitions read so far
        self.first_h1 = ""
        self.links: list[Link] = []
        self.comments = array("q")  # each HTML comment block's comments: start, end offsets, flat

    def __iter__(self) -> Iterator[Block]:
        starts, size = self.lines.starts, len(self.text)
        line, window = self.first_line, WINDOW_CHARS
        held: Block | None = None  # a list, quote or table longer than a window, read on in the next
        windows: list[tuple[int, int, str, int]] = []  # each window's first line, end, header, cut
        known = -1  # link definitions known when the first window's links were read
        while line < len(starts) and starts[line] < size:
            end_line = bisect.bisect_left(starts, starts[line] + window)
            end = starts[end_line] if end_line < len(starts) else size
            header = self._header(held)  # a table's rows read as rows only under its header
            skip = header.count("\n")  # window lines that are the header, not this window's text
            self.env[NOTE_ENDS] = end >= size  # see _block_to
            tokens = self.md.parse(header + self.text[starts[line] : end], self.env)
            found = _cut(tokens, skip, skip + end_line - line, last=end >= size)
            if found is None:
                found = self._plain_line(tokens, line, end_line, skip)
            if found is None:
                window *= 2
                continue
            cut, continues = found
            blocks = list(self._blocks(tokens, line - skip, cut))
            if held is not None:
                if blocks and blocks[0].kind == held.kind and blocks[0].first_line <= line:
                    held.end_line = blocks[0].end_line
                    rows = blocks[0].parts  # a table's header rows, read again above, are its own
                    held.parts.extend(
                        n for i in range(0, len(rows), 2) if rows[i] >= line for n in rows[i : i + 2]
                    )
                    blocks[0] = held
                else:
                    blocks.insert(0, held)
            held = blocks.pop() if continues else None
            yield from blocks
            self._links(tokens, line - skip, skip, cut)
            known = self._definitions() if known < 0 else known
            windows.append((line, end, header, cut))
            line, window = line + cut - skip, WINDOW_CHARS
        if held is not None:
            yield held
        if self._definitions() > known >= 0:
            # A link may name a definition further down (docs keep them at the end): read again.
            self.links = []
            for first, end, header, cut in windows:
                self.env[NOTE_ENDS] = end >= size
                tokens = self.md.parse(header + self.text[starts[first] : end], self.env)
                self._links(tokens, first - header.count("\n"), header.count("\n"), cut)

    def _plain_line(
        self, tokens: list[Token], line: int, end_line: int, skip: int
    ) -> tuple[int, bool] | None:
        """For a lone paragraph or quote past the window (a log pasted as a note: one paragraph of
        a million lines), the last of its lines that starts as plain text (a letter, or digits not
        ending a list marker; `> ` before it in a quote) and holds no `|`: read on from there, it
        goes on as the same paragraph or quote. None when there is none."""
        quoted = tokens[0].type == "blockquote_open"
        if skip or tokens[0].type not in ("paragraph_open", "blockquote_open"):
            return None
        # A quoted line inside a quote's HTML block (a comment) is no place to cut: read on from
        # there, the rest of the block would read as a paragraph.
        html = [t.map for t in tokens if t.type == "html_block" and t.map is not None]
        starts, first = self.lines.starts, line + (tokens[0].map or [0])[0]
        for at in range(end_line - 1, first, -1):
            if any(a <= at - line < b for a, b in html):
                continue
            start, stop = starts[at], starts[at + 1] if at + 1 < len(starts) else len(self.text)
            plain = (_QUOTED_PLAIN if quoted else _PLAIN).match(self.text, start, stop)
            if plain is not None and self.text.find("|", start, stop) == -1:
                return at - line, True
        return None

    def _header(self, held: Block | None) -> str:
        """A table's header and delimiter rows, to read its next rows under; else nothing."""
        if held is None or held.kind != "table":
            return ""
        start, end = self.lines.chars(held.first_line, held.first_line + 2)
        return self.text[start:end] + "\n"

    def _links(self, tokens: list[Token], offset: int, skip: int, cut: int) -> None:
        """The links of the window's inline tokens from line `skip` to `cut`, up to MAX_LINKS."""
        if len(self.links) < MAX_LINKS:
            inline = (
                t for t in tokens if t.type == "inline" and t.map is not None and skip <= t.map[0] < cut
            )
            found = extract_links(self._inline(inline), self.lines.first_file_line + 1 + offset)
            self.links.extend(found[: MAX_LINKS - len(self.links)])

    def _definitions(self) -> int:
        references = self.env.get("references")
        return len(references) if isinstance(references, dict) else 0

    def _blocks(self, tokens: list[Token], offset: int, cut: int) -> Iterator[Block]:
        """The window's blocks that begin before `cut` (window lines), in note lines."""
        block: Block | None = None
        for index, token in enumerate(tokens):
            if token.map is None or token.map[0] >= cut:
                continue
            first, end = offset + token.map[0], offset + min(token.map[1], cut)
            if _is_comment_block(token):  # at any depth: in a list or quote too
                self.comments.extend(comment_spans(self.text, *self.lines.chars(first, end)))
            if token.level == 0 and token.type == "heading_open":
                if block is not None:
                    yield block
                inline = tokens[index + 1] if index + 1 < len(tokens) else Token("inline", "", 0)
                title, anchor_id = split_attributes(" ".join(inline.content.split()))
                level, plain = int(token.tag[1:]), split_attributes(self._plain(inline))[0]
                block = Block(
                    "heading", first, end, array("q"), decode_entities(title), level, plain, anchor_id
                )
                if level == 1 and not self.first_h1:
                    self.first_h1 = block.heading
            elif token.level == 0 and token.type in BLOCK_TYPES:
                if block is not None:
                    yield block
                block = Block(BLOCK_TYPES[token.type], first, end)
            elif block is not None and token.level == 1 and token.type == "list_item_open":
                block.parts.extend((first, end))
            elif block is not None and token.type == "tr_open":
                block.parts.extend((first, end))
        if block is not None:
            yield block

    def _plain(self, inline: Token) -> str:
        """A heading as rendered (its markup dropped); one too long to parse is taken as written."""
        if len(inline.content) > INLINE_LIMIT:
            return inline.content
        return _rendered(self.md.inline.parse(inline.content, self.md, self.env, []))

    def _inline(self, tokens: Iterator[Token]) -> Iterator[Token]:
        """The inline tokens with their children, one at a time (a long one in pieces of whole
        lines, or cut at white space), each let go once the next is asked for."""
        for token in tokens:
            assert token.map is not None
            line = token.map[0]
            for start, end in pieces(token.content, INLINE_LIMIT):
                piece = Token("inline", "", 0, content=token.content[start:end], map=[line, token.map[1]])
                piece.children = self.md.inline.parse(piece.content, self.md, self.env, [])
                yield piece
                line += piece.content.count("\n")


def _cut(tokens: list[Token], skip: int, lines: int, last: bool) -> tuple[int, bool] | None:
    """The window line before which its blocks are read as in the whole note, and whether the block
    before it goes on: the start of its last top-level block; or of a lone list, quote or table's
    last item past line `skip`, the block going on; its end when it is the note's last window or
    holds no block (blank lines, link definitions). None for a lone block to read whole."""
    tops = [i for i, t in enumerate(tokens) if t.level == 0 and t.nesting >= 0 and t.map is not None]
    if last or not tops:
        return lines, False
    top = tokens[tops[-1]]
    assert top.map is not None
    if len(tops) > 1:
        return (top.map[0] if top.map[0] > skip else lines), False
    if len(tops) == 1 and top.type in _CONTAINERS:
        items = [t.map[0] for t in tokens[tops[-1] + 1 :] if _is_item(t) and t.map is not None]
        if items and items[-1] > max(skip, top.map[0]):
            return items[-1], True
    return None


def _is_comment_block(token: Token) -> bool:
    """Whether markdown-it read the token as an HTML block that opens with a comment (a generated
    page's "Do not edit" header, a template's commented-out lines, a linter's directive)."""
    return token.type == "html_block" and token.content.lstrip().startswith("<!--")


def _is_item(token: Token) -> bool:
    return token.nesting >= 0 and (token.type == "tr_open" or (token.level == 1 and token.type != "inline"))


_SHOWN = MarkdownIt("commonmark")


@functools.lru_cache(maxsize=4096)  # a vault's headings recur in its hits
def shown_inline(text: str) -> str:
    """A heading, a path of them or a title, as stored (its entities read), the way a reader sees
    it rendered: `[Start-Transcript](Start-Transcript.md)` as Start-Transcript, `**Bold**` as
    Bold, `` `2**64` `` as 2**64 (code as written), a [[wikilink]] as Obsidian shows it, white
    space collapsed. An angle bracket stays text: the stored heading's `<` may be one its author
    escaped (`&lt;details&gt;`), so HTML is left as written. As written when it shows nothing."""
    if len(text) > INLINE_LIMIT:
        return text
    tokens = _SHOWN.inline.parse(text.replace("<", "&lt;"), _SHOWN, {}, [])
    return " ".join(wikilinks_as_text(_rendered(tokens)).split()) or text


def _rendered(children: list[Token]) -> str:
    """Inline tokens' text as a reader sees it: link labels and code kept, markup and HTML dropped."""
    parts = []
    for child in children:
        if child.type in ("text", "code_inline", "text_special"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def add_block_rules(md: MarkdownIt) -> None:
    """Teach `md` the blocks a notes folder holds that CommonMark does not know, each one block as
    a fence is, each able to end a paragraph: an Obsidian comment of several lines
    (`comment_block`) and a site generator's highlight shortcode (`highlight_block`)."""
    options: RuleOptionsType = {"alt": ["paragraph", "reference", "blockquote", "list"]}
    md.block.ruler.before("fence", "obsidian_comment", comment_block, options)
    md.block.ruler.before("fence", "highlight", highlight_block, options)


def comment_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """markdown-it's block rule for an Obsidian comment of several lines: a line that opens with
    "%%" and does not close it, to the next line that holds "%%". Obsidian hides it whole, so what
    it holds is no markup: a section commented out (a "## Old ideas" between them) is no heading.
    Its words stay (a writer hides there what they may look for). One never closed is no block."""
    start, end = state.bMarks[start_line] + state.tShift[start_line], state.eMarks[start_line]
    if state.is_code_block(start_line) or not state.src.startswith("%%", start):
        return False
    if state.src.find("%%", start + 2, end) != -1:
        return False  # "%% a note to self %%": a comment on one line, read where it stands
    return _block_to(state, start_line, end_line, silent, "obsidian_comment", lambda line: "%%" in line)


# Hugo's and Jekyll's highlight shortcodes, each alone on its line: `{{< highlight bash >}}` …
# `{{< /highlight >}}`, `{% highlight ruby %}` … `{% endhighlight %}` (GitHub Pages).
_HIGHLIGHT = re.compile(
    r"(?:\{\{[<%]-?\s*highlight\b([^\n]*?)-?[>%]\}\}|\{%-?\s*highlight\b([^\n]*?)-?%\})\s*"
)
_HIGHLIGHT_END = re.compile(r"\s*(?:\{\{[<%]-?\s*/\s*highlight\s*-?[>%]\}\}|\{%-?\s*endhighlight\s*-?%\})\s*")


def highlight_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """markdown-it's block rule for a site generator's highlight shortcode: a fence, as those sites
    render it (its `# install the deps` is a shell comment, not a heading over the rest of the
    note; on the page, code). One never closed is no block."""
    start, end = state.bMarks[start_line] + state.tShift[start_line], state.eMarks[start_line]
    if state.is_code_block(start_line) or not state.src.startswith(("{{", "{%"), start):
        return False
    if (opening := _HIGHLIGHT.fullmatch(state.src, start, end)) is None:
        return False
    if not _block_to(state, start_line, end_line, silent, "fence", _closes_highlight, inner=True):
        return False
    if not silent:
        token = state.tokens[-1]
        token.tag, token.markup = "code", "```"
        token.info = (opening.group(1) or opening.group(2) or "").strip()
    return True


def _closes_highlight(line: str) -> bool:
    return _HIGHLIGHT_END.fullmatch(line) is not None


def _block_to(
    state: StateBlock,
    start_line: int,
    end_line: int,
    silent: bool,
    kind: str,
    closes: Callable[[str], bool],
    inner: bool = False,
) -> bool:
    """One block of type `kind` from `start_line` to the first line after it that `closes`, its
    lines as written its content (`inner`: those between its opening and closing lines).

    Left open where the note ends it is no block. Left open where only a window of the note ends
    (Blocks reads a long note a window at a time, and says which in env[NOTE_ENDS]) it runs to
    the window's end, as an open fence does, so the next window reads it whole. Each scan that
    finds no closing line is remembered for the parse: a later opener (a paragraph asks of each
    of its lines too) would scan the same lines again, and a note of a thousand openers left open
    would cost the square of its length."""
    open_from: dict[tuple[str, int], int] = state.__dict__.setdefault("mdrag_open_from", {})
    if start_line >= open_from.get((kind, end_line), end_line):
        line = end_line  # a scan from an earlier line found no closing line before end_line
    else:
        line = start_line + 1
        while line < end_line and not closes(state.src[state.bMarks[line] : state.eMarks[line]]):
            line += 1
    if line >= end_line:
        open_from[(kind, end_line)] = min(start_line, open_from.get((kind, end_line), end_line))
        if state.env.get(NOTE_ENDS, True):
            return False
        line = end_line - 1
    if not silent:
        token = state.push(kind, "", 0)
        token.map = [start_line, line + 1]
        token.block = True
        token.content = state.getLines(start_line + inner, line + 1 - inner, state.sCount[start_line], True)
    state.line = line + 1
    return True

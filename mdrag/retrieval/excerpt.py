"""Excerpts: a hit's snippet cut to one terminal line around its marks, the marks rendered."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import TypeVar

from mdrag.notes.comments import COMMENT, code_mask

Mark = TypeVar("Mark")

EXCERPT_CHARS = 240  # what the text output shows of a window
# Markup a reader sees rendered: a wiki link or embed as its shown words (`[[Modal/open|open()]]`
# as "open()"), a link as its text, the marks of strong emphasis and code gone.
# A link's target may hold balanced parentheses, as CommonMark reads it (`Workspace/on('rename').md`).
# Each part is bounded: "[" after "[" with no close would otherwise scan to the line's end from
# every one (1.2 s for 8,000 of them).
LINKS = re.compile(
    r"!?\[\[(?:[^\]|\n]{0,300}\|)?(?P<wiki>[^\]|\n]{0,300})\]\]"
    r"|!?\[(?P<link>[^\]\n]{0,300})\]\((?:[^()\n]|\([^()\n]{0,200}\)){0,500}\)"
)
MARKS = re.compile(r"\*\*|__|`+")
# Inline HTML a reader sees rendered, not as tags (a generated API table's `<code>abstract</code>`,
# `<p>…</p>`), except in code, where it is the text; and a table's delimiter row.
# An attribute as HTML writes it (`class="x"`, `id=y`, `hidden`): "<b = 3>" is no tag but text.
_VALUE = r"""(?:"[^"\n]{0,200}"|'[^'\n]{0,200}'|[^\s"'=<>`]{1,200})"""
_ATTRIBUTE = rf"\s{{1,5}}[A-Za-z_:][\w:.-]{{0,50}}(?:\s{{0,5}}=\s{{0,5}}{_VALUE})?"
# A block's tag parts words as a space does ("leaf.</p><p>1.6.6"); an inline one joins them.
TAGS = re.compile(
    r"</?(?:(?P<block>p|br|hr|div|li|ul|ol|tr|td|th|table|h[1-6]|blockquote|details|summary|center)"
    r"|code|b|i|em|strong|sup|sub|span|kbd|mark|u|s|del|ins|small|a|button|img|abbr|cite|q|font)"
    rf"(?:{_ATTRIBUTE}){{0,20}}\s{{0,5}}/?>",
    re.IGNORECASE,
)
# A code fence's line, its language with it ("```typescript"): a reader sees the code, not these.
FENCE = re.compile(r"^[ \t]{0,3}(?:`{3,20}|~{3,20})[^`\n]{0,100}$", re.M)
_RULE_CELL = r"[ \t]{0,20}:?-{1,300}:?[ \t]{0,20}"  # "---", " :---: "
TABLE_RULE = re.compile(rf"^[ \t]{{0,20}}\|?(?:{_RULE_CELL}\|){{1,100}}(?:{_RULE_CELL})?$", re.M)


def without_comments(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """The text with what its reader never sees rendered blanked: HTML comments (a generated
    page's "do not edit" header), each to its end or to the text's end if left open
    (notes/comments.py), the same length so every other span keeps its place; and the spans
    that fell inside one dropped. Obsidian's %% comments %% are the snippet's to hide (it knows
    the section they open in, and shows one that holds a marked word: snippets.py)."""
    hidden = [m.span() for m in COMMENT.finditer(text)]
    if not hidden:
        return text, spans
    kept = [(a, b) for a, b in spans if not any(start <= a < end for start, end in hidden)]
    return COMMENT.sub(lambda comment: " " * len(comment.group()), text), kept


def plain(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """The text with its links, marks, inline HTML, table rules and code fences as a reader sees
    them rendered (LINKS, MARKS, TAGS, TABLE_RULE, FENCE), the spans moved to match: one inside a
    part left out (a link's target) becomes empty, its word left out with it; a link a span
    straddles stays as written."""
    code = code_mask(text)  # tags and rules in code are its text: one look each, however many
    tags = [m for m in TAGS.finditer(text) if not code[m.start()]]
    rules = [m for m in TABLE_RULE.finditer(text) if not code[m.start()]]
    if any(m.group("block") for m in tags):  # blanked, the same length: other spans keep their place
        chars, blank = list(text), bytearray(len(text))
        for match in (m for m in tags if m.group("block")):
            x, y = match.span()
            chars[x:y], blank[x:y] = " " * (y - x), b"\x01" * (y - x)
        text = "".join(chars)
        spans = [(a, a) if a < len(blank) and blank[a] else (a, b) for a, b in spans]
    dropped = bytearray(len(text))
    inline = [m for m in tags if not m.group("block")]
    for match in [
        *LINKS.finditer(text),
        # Emphasis marks in code are its text (`2**64`, `__init__`); its backticks are not.
        *(m for m in MARKS.finditer(text) if m.group()[0] == "`" or not code[m.start()]),
        *inline,
        *rules,
        *FENCE.finditer(text),
    ]:
        start, end = match.span()
        named = [name for name, value in match.groupdict().items() if value is not None]
        shown = match.span(named[0]) if named else (end, end)  # a mark shows nothing
        parts = ((start, shown[0]), (shown[1], end))
        inside = [(a, b) for a, b in spans if a < end and b > start]
        if any(
            not (shown[0] <= a and b <= shown[1]) and not any(x <= a and b <= y for x, y in parts)
            for a, b in inside
        ):
            continue
        for x, y in parts:
            dropped[x:y] = b"\x01" * (y - x)
    if not any(dropped):
        return text, spans
    out: list[str] = []
    position = []  # the new offset of each old one
    for char, gone in zip(text, dropped, strict=True):
        position.append(len(out))
        if not gone:
            out.append(char)
    position.append(len(out))
    return "".join(out), [(position[a], position[a] if dropped[a] else position[b]) for a, b in spans]


def excerpt(
    text: str, spans: list[tuple[int, int]], width: int = EXCERPT_CHARS
) -> tuple[str, list[tuple[int, int]]]:
    """At most `width` characters of `text` on one line, around where the most of `spans` fall,
    with the spans moved to match; "…" marks a cut at either end. Comments are left out, links
    and marks shown as rendered (`plain`)."""
    flat, _, moved, lines = _rendered(text, spans)
    if len(flat) <= width:
        return flat, moved
    start = _best_start(flat, moved, width, lines)
    end = start + width
    if end < len(flat):  # end at a word boundary, after every mark the start was chosen for
        marked = max((y for x, y in moved if start <= x and y <= end), default=start)
        space = flat.rfind(" ", start, end)
        end = space if space > start + width // 2 and space >= marked else end
    lead = "… " if start > 0 else ""
    tail = " …" if end < len(flat) else ""
    shift = len(lead) - start
    kept = [(a + shift, b + shift) for a, b in moved if a >= start and b <= end]
    return f"{lead}{flat[start:end]}{tail}", kept


def shown_mark(text: str, spans: list[tuple[int, int]], width: int = EXCERPT_CHARS) -> int | None:
    """Where in `text` the first mark that `excerpt` shows begins (the line `open` goes to is the
    one a person read the words on), or None without marks."""
    flat, kept, moved, lines = _rendered(text, spans)
    if not moved:
        return None
    start = 0 if len(flat) <= width else _best_start(flat, moved, width, lines)
    return next((k for (k, _), (at, _) in zip(kept, moved, strict=True) if at >= start), kept[0][0])


def _rendered(
    text: str, spans: list[tuple[int, int]]
) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]], list[int]]:
    """The text on one line as a reader sees it rendered, the spans it still shows (as given),
    where each of them is in it (a comment's marks, and those left out with a link's target, go),
    and where in it each of the text's lines begins."""
    blanked, kept = without_comments(text, spans)
    flat, moved, lines = _one_line(*plain(blanked, kept))
    shown = [(span, at) for span, at in zip(kept, moved, strict=True) if at[0] < at[1]]
    return flat, [span for span, _ in shown], [at for _, at in shown], lines


def _one_line(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]], list[int]]:
    """The text with each run of white space as one space (and none at the ends), spans kept,
    and the offsets where a line of the text begins in it."""
    out: list[str] = []
    position = []  # the new offset of each old one
    lines: list[int] = []
    space = newline = False
    for char in text:
        if char.isspace():
            space = bool(out)
            newline = newline or char == "\n"
            position.append(len(out))
            continue
        if space:
            out.append(" ")
            space = False
        if newline and out:
            lines.append(len(out))
        newline = False
        position.append(len(out))
        out.append(char)
    position.append(len(out))
    return "".join(out), [(position[a], position[b]) for a, b in spans if b <= len(text)], lines


def _best_start(flat: str, spans: list[tuple[int, int]], width: int, lines: list[int]) -> int:
    """Where a `width`-character excerpt holding the most distinct marked words begins: the
    text's start if it holds as many as any, else a little before a mark: where a line begins if
    one does there (not in the tail of the line before: "… %}} The Resize method"), else at a
    word's start."""
    best, best_count = 0, -1
    ordered = sorted(spans)
    starts = [a for a, _ in ordered]
    for mark in [None, *(a for a, _ in spans)]:
        start = 0 if mark is None else max(0, mark - width // 5)
        line = bisect.bisect_left(lines, start)
        if mark is not None and line < len(lines) and lines[line] <= mark:
            start = lines[line]
        elif mark is not None and start > 0:
            space = flat.find(" ", start, mark)
            start = space + 1 if space != -1 else mark
        # Only the spans starting within the window can be in it: found by bisection, so a text
        # with thousands of marks costs each mark a window's worth, not every other mark.
        window = ordered[bisect.bisect_left(starts, start) : bisect.bisect_right(starts, start + width)]
        inside = {flat[a:b].casefold() for a, b in window if b <= start + width}
        if len(inside) > best_count:
            best, best_count = start, len(inside)
    return best


def render(text: str, spans: list[tuple[int, int]], mark: Callable[[str], str]) -> str:
    """The text with each span passed through `mark`."""
    return "".join(marked(text, spans, mark))


def marked(text: str, spans: list[tuple[int, int]], mark: Callable[[str], Mark]) -> list[str | Mark]:
    """The text in pieces, each span's passed through `mark` (a bold part on a terminal)."""
    out: list[str | Mark] = []
    last = 0
    for a, b in sorted(spans):
        if a < last:
            continue
        out.append(text[last:a])
        out.append(mark(text[a:b]))
        last = b
    out.append(text[last:])
    return out

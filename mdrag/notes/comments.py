"""Comments: the HTML comments a note's reader never sees, blanked from the text its sections embed."""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterator

# An HTML comment, to its end or, left open, to the end of the text it is sought in.
COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_SEEN = re.compile(r"[^\n]")


def comment_spans(text: str, start: int, end: int) -> Iterator[int]:
    """The start and end offset of each comment in text[start:end] (a comment block's lines: the
    text after a comment's end on its last line is shown, so it stays)."""
    for match in COMMENT.finditer(text, start, end):
        yield from match.span()


def blank(piece: str, offset: int, comments: array[int]) -> str:
    """`piece` (the note's text from `offset` on) with the parts of it that `comments` (flat,
    ordered start and end offsets in the note) cover blanked: each character a space but line
    ends, so every offset into it still points where it did."""
    first = bisect.bisect_right(comments, offset) // 2 * 2  # the first comment that ends past it
    end = offset + len(piece)
    parts, at = [], 0
    for i in range(first, len(comments), 2):
        if comments[i] >= end:
            break
        a, b = max(comments[i], offset) - offset, min(comments[i + 1], end) - offset
        parts += [piece[at:a], _SEEN.sub(" ", piece[a:b])]
        at = b
    return "".join(parts) + piece[at:] if parts else piece


# Obsidian's `%% comment %%`: its reader's view hides it, an excerpt shows it only where it holds
# a word the search marked (the words stay indexed: a writer hides there what they may look for).
_PERCENTS = re.compile(r"%%")
# A fence opens on a line of three or more ` or ~ (a backtick fence's info holds no backtick, so
# "```x``` inline" is a code span) and closes on a line of the same, at least as long, alone.
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}(?=[^`\n]*$)|~{3,})", re.M)
_CODE_SPAN = re.compile(r"`[^`\n]{1,300}`")
_PRINTF = re.compile(r"[-+#0-9.]{0,6}[diouxXeEfFgGcs](?![^\W_])")  # a conversion after "%"


def code_mask(text: str) -> bytearray:
    """1 for each character of `text` in code (a fenced block, its fences too, or a code span),
    0 elsewhere. A fence left open runs to the text's end, as CommonMark reads it."""
    code = bytearray(len(text))
    at = 0
    while (opening := _FENCE_OPEN.search(text, at)) is not None:
        fence = opening.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        line_end = text.find("\n", opening.end())
        closed = None if line_end == -1 else closing.search(text, line_end + 1)
        end = len(text) if closed is None else closed.end()
        code[opening.start() : end] = b"\x01" * (end - opening.start())
        at = end if end > opening.start() else end + 1
    for match in _CODE_SPAN.finditer(text):
        code[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
    return code


def obsidian_comments(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each `%% … %%` in `text` a reader of Obsidian does not see: outside
    code, each "%%" opens a comment and the next closes it, as Obsidian pairs them. With an odd
    count nothing is hidden (the text may begin inside a comment, or "%%" mean a percent sign);
    nor is a pair whose "%%" stand inside words ("100%%", "%%d" in a printf pattern): a comment's
    opener stands after white space or at the start, its closer before white space, punctuation
    or the end, and a printf conversion ("%%d") opens none."""
    code = code_mask(text)
    marks = [m.start() for m in _PERCENTS.finditer(text) if not code[m.start()]]
    if len(marks) % 2:
        return []
    spans = []
    for opener, closer in zip(marks[::2], marks[1::2], strict=True):
        before, after = text[opener - 1 : opener], text[closer + 2 : closer + 3]
        printf = _PRINTF.match(text, opener + 2) is not None  # "%%d items": a percent sign
        if (not before or before.isspace()) and not after.isalnum() and not printf:
            spans.append((opener, closer + 2))
    return spans

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
_FENCE = re.compile(r"^[ \t]{0,3}(?:`{3,}|~{3,})", re.M)
_CODE_SPAN = re.compile(r"`[^`\n]{1,300}`")


def obsidian_comments(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each `%% … %%` in `text`, read from its start: from a "%%" followed by
    white space or the text's end to the next "%%" and past it. None in code (a fenced block, a
    code span); a "%%" with a word right after it is none ("%%d" in a printf pattern), and one
    left open hides nothing."""
    code = bytearray(len(text))
    fences = [m.start() for m in _FENCE.finditer(text)]
    for opened, closed in zip(fences[::2], [*fences[1::2], len(text)], strict=False):
        code[opened:closed] = b"\x01" * (closed - opened)
    for match in _CODE_SPAN.finditer(text):
        code[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
    marks = [m.start() for m in _PERCENTS.finditer(text) if not code[m.start()]]
    spans, i = [], 0
    while i < len(marks) - 1:
        after = text[marks[i] + 2 : marks[i] + 3]
        if after == "" or after.isspace():
            spans.append((marks[i], marks[i + 1] + 2))
            i += 2
        else:
            i += 1
    return spans

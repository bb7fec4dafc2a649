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

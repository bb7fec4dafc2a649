"""Lines: markdown-it's body line numbers mapped to character offsets in a note's text, and back."""

from __future__ import annotations

import bisect
import re
from array import array

_NEWLINE = re.compile("\n")


class LineIndex:
    """Maps body line numbers (markdown-it's token.map) to character offsets in the file text."""

    def __init__(self, text: str, body_offset: int) -> None:
        self.text = text
        self.first_file_line = text.count("\n", 0, body_offset)
        # An array, not a list of ints: a note of a million short lines holds 8 MB here, not 36.
        self.starts = array("q", [body_offset])
        self.starts.extend(m.end() for m in _NEWLINE.finditer(text, body_offset))

    def chars(self, first_line: int, end_line: int) -> tuple[int, int]:
        start = self.starts[min(first_line, len(self.starts) - 1)]
        end = self.starts[end_line] - 1 if end_line < len(self.starts) else len(self.text)
        return start, max(start, end)

    def line_of(self, offset: int) -> int:
        """The body line holding a file offset (binary search over line starts)."""
        return max(0, bisect.bisect_right(self.starts, offset) - 1)

"""Path text: a file's path as the index stores it (valid UTF-8 even for byte names), and back.

A name that is not valid UTF-8 (latin-1 bytes from an old zip, a Windows share) reaches Python
as surrogate escapes (PEP 383), which no UTF-8 field can hold. The stored form writes each such
byte as `\\xHH` (lowercase hex, 80-ff), as `ls -b` would, and doubles a backslash only where it
would otherwise read as one of these escapes: every valid UTF-8 name is stored unchanged, and
the mapping is reversible, so the daemon opens, re-hashes and deletes the file by its stored form.
"""

from __future__ import annotations

import os
import re

_ESCAPE = re.compile(r"\\(\\|x[89a-f][0-9a-f])")
_HIGH_HEX = frozenset("89abcdef")
_HEX = frozenset("0123456789abcdef")


def to_text(path: str | bytes | os.PathLike[str]) -> str:
    """The stored form of a path as the OS gave it (bytes, or str with surrogate escapes)."""
    raw = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    if "\\" not in raw and not _has_surrogates(raw):
        return raw  # the common case, unchanged
    out = []
    for i, char in enumerate(raw):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char == "\\" and _reads_as_escape(raw, i + 1):
            out.append("\\\\")
        else:
            out.append(char)
    return "".join(out)


def to_fs(text: str) -> str:
    """The path to hand to the OS for a stored form (undecodable bytes as surrogate escapes)."""
    if "\\" not in text:
        return text

    def unescape(match: re.Match[str]) -> str:
        body = match.group(1)
        return "\\" if body == "\\" else chr(0xDC00 + int(body[1:], 16))

    return _ESCAPE.sub(unescape, text)


def _reads_as_escape(raw: str, at: int) -> bool:
    """Whether what follows a literal backslash at `at` would make the pair read as an escape."""
    if at >= len(raw):
        return False
    nxt = raw[at]
    if nxt == "\\" or 0xDC80 <= ord(nxt) <= 0xDCFF:
        return True  # the next thing written starts with a backslash
    return nxt == "x" and raw[at + 1 : at + 2] in _HIGH_HEX and raw[at + 2 : at + 3] in _HEX


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False

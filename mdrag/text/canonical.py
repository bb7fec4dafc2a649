"""Canonical text: Unicode's composed form (NFC), so a word matches however its system wrote it."""

from __future__ import annotations

import unicodedata


def canonical(text: str) -> str:
    """The text in NFC: "é" as one character, as most systems type it, where macOS names files
    (and text copied from some of its apps) with "e" and a combining accent, and Korean as its
    letters' parts. The two look alike and the model reads them alike, but a word, a file name
    or a link written one way never equals the other; matched composed, each finds the other.
    Already composed, the text is returned as it is (a check, no copy)."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)

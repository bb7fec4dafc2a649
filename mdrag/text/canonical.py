"""Canonical text: Unicode's composed form (NFC), so a word matches however its system wrote it."""

from __future__ import annotations

import unicodedata

import regex

# Unicode's Stream-Safe Text Format (UAX #15): no more than 30 non-starters (combining marks
# that canonical ordering sorts) in a row. CPython sorts a run in time that grows with its
# square (100,000 marks took 5.5 s, a 5 MB note of them would take hours); a real letter
# carries a few (Vietnamese two, the most stacked scripts under ten), so only a run made to
# be slow ("Zalgo" text) is cut, by an invisible combining grapheme joiner. Three Tibetan vowel
# signs are no marks but decompose into two each, so a run counts them too, and is cut every
# 15 characters: at most 30 marks once decomposed.
STREAM_SAFE_RUN = 30
_CUT_EVERY = STREAM_SAFE_RUN // 2
_LONG_RUN = regex.compile(r"(?:\P{ccc=0}|[\u0F73\u0F75\u0F81]){" + str(_CUT_EVERY + 1) + ",}")
_JOINER = "\u034f"


def canonical(text: str) -> str:
    """The text in NFC: "é" as one character, as most systems type it, where macOS names files
    (and text copied from some of its apps) with "e" and a combining accent, and Korean as its
    letters' parts. The two look alike and the model reads them alike, but a word, a file name
    or a link written one way never equals the other; matched composed, each finds the other.
    Already composed, the text is returned as it is (a check, no copy)."""
    if unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", _stream_safe(text))


def _stream_safe(text: str) -> str:
    """The text with a joiner after every _CUT_EVERY characters of a run of non-starters."""

    def joined(run: regex.Match[str]) -> str:
        marks = run.group()
        return _JOINER.join(marks[i : i + _CUT_EVERY] for i in range(0, len(marks), _CUT_EVERY))

    safe: str = _LONG_RUN.sub(joined, text)
    return safe

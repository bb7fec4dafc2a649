"""Spelling: a query word no note holds, read as the word the notes hold one typing slip away."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping

# Only words this long are corrected: a short word is one slip from many others ("loki" from
# "look", "bun" from "run"), and a name the notes lack must stay a word no note holds.
MIN_LETTERS = 5
LETTERS = string.ascii_lowercase
# A word of the notes' text: letters, any script ("übersetzung" whole, never its ASCII tail).
_WORD = re.compile(r"[^\W\d_]+")


def corrected(
    word: str, notes_holding: Callable[[str], int], counted: Callable[[str], int] | None = None
) -> str | None:
    """The word one slip from `word` (a letter dropped, added, changed, or two swapped) that the
    most notes hold, or None: for a word that is no plain lower-case ASCII word of MIN_LETTERS or
    more, one some note holds itself (`notes_holding`: how many rows hold a word), or one with no
    such neighbour. `counted` counts a neighbour instead where given (the index leaves out one
    whose stem is too short to mean it). Ties go to the alphabetically first, so the same index
    always corrects alike."""
    if not correctable(word) or notes_holding(word) > 0:
        return None
    best, best_count = None, 0
    for candidate in sorted(set(_one_slip(word))):
        count = (counted or notes_holding)(candidate)
        if count > best_count:
            best, best_count = candidate, count
    return best


def said(texts: Iterable[str]) -> Counter[str]:
    """How often each word occurs in `texts` (lower case: what a search found)."""
    return Counter(word for text in texts for word in _WORD.findall(text))


def meant(word: str, counts: Mapping[str, int]) -> str | None:
    """The word one slip from `word` that `counts` (said: the words a search found) holds most
    often, or None: what a reader most likely meant by a word no note holds. The index holds
    stems ("databas"), so the word as written is taken from the notes. Ties go to the
    alphabetically first."""
    if not correctable(word):
        return None
    near = [found for found in set(_one_slip(word)) if counts.get(found, 0) > 0]
    return min(near, key=lambda found: (-counts[found], found)) if near else None


def correctable(word: str) -> bool:
    """Whether `word` is one spelling may correct: plain lower-case ASCII letters, MIN_LETTERS or more."""
    return len(word) >= MIN_LETTERS and word.isascii() and word.isalpha() and word.islower()


def _one_slip(word: str) -> Iterator[str]:
    """Every word one edit from `word` (Damerau: adjacent letters swapped count as one)."""
    for cut in range(len(word) + 1):
        head, tail = word[:cut], word[cut:]
        if tail:
            yield head + tail[1:]
            for letter in LETTERS:
                if letter != tail[0]:
                    yield head + letter + tail[1:]
        if len(tail) > 1:
            yield head + tail[1] + tail[0] + tail[2:]
        for letter in LETTERS:
            yield head + letter + tail

"""Query words: one tokenizer and one stop-word list for the score, the keyword search and the marks."""

from __future__ import annotations

import re

from mdrag.text import unspaced

# Grammar and question words: a natural question has more of these than subject ("how do I put
# the output onto the clipboard"), so the score's word coverage, the keyword search's query and
# the marks in a hit all leave them out.
STOP_WORDS = frozenset(
    "a an and are as at be but by can do does for from how i if in into is it its my of on or "
    "so than that the their then there these this to was what when where which who why will "
    "with you your me we our not no yes get use using used have has had should would could "
    "about after before between more most other some such only own same too very just over "
    "way something anything thing want need let possible able here else somewhere like also "
    "really even still keep go got put any all one don doesn didn isn won wasn aren".split()
)
# A word: letters, digits and underscores (pg_restore is one word; Get-ChildItem is two).
WORD = re.compile(r"\w+")
# A query term that looks like an identifier (pg_restore, Get-ChildItem, EIP-1559, v2.5, 0x1f):
# rare by its shape, so a note holding it verbatim is strong evidence.
TERM = re.compile(r"[^\W_][\w.\-]*[^\W_]|[^\W_]")


def is_stop(word: str) -> bool:
    return word.lower() in STOP_WORDS


def words(text: str, keep_case: bool = False) -> list[str]:
    """The words of `text` worth weighing, in order: no stop words, none of one letter; lower
    case unless `keep_case` (the keyword search is asked the words as they were written). In a
    script written without spaces a word is a pair of neighbouring characters (unspaced.py)."""
    found: list[str] = []
    for part, run in unspaced.parts(text if keep_case else text.lower()):
        found += unspaced.pairs(part) if run else WORD.findall(part)  # \w would cut off a Thai sign
    return [word for word in found if len(word) > 1 and not is_stop(word)]

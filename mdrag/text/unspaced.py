"""Scripts written without spaces (Chinese, Japanese, Thai...): a word there is a pair of characters."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import regex

# The scripts whose text runs on without spaces: Lucene's CJK set (Hangul too: a Korean word
# carries its particle, 파일을 for 파일) and the scripts of South-East Asia. With no dictionary
# to cut such a run into words, the keyword index holds it a character at a time and a query
# asks for each pair of neighbouring characters as a phrase (Lucene's CJK bigrams, matched on
# the characters' positions): "创建存档" finds "创建存档并将其写入文件" and "存档" in any note.
# Japanese's prolonged sound mark ー (サーバー) and its halfwidth forms belong to no script of their
# own (Common), nor does 〆: inside a word all the same.
SCRIPTS = (
    r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
    r"\u30FC\uFF70\uFF9E\uFF9F\u3006"
)
# A character of those scripts with its marks (a Thai vowel or tone sign stays on its consonant;
# an emoji's variation selector is no part of it).
_CHARACTER_PATTERN = rf"[{SCRIPTS}][\p{{M}}--\p{{Variation_Selector}}]*"
# The keyword index's tokens, in the syntax of Rust's regex crate (tantivy's): such a character,
# or a word of any other script as tantivy's simple tokenizer reads one (letters and digits, as
# Rust's `is_alphanumeric`: "pg_restore" is two words), so no other text is read anew.
TOKEN_PATTERN = rf"{_CHARACTER_PATTERN}|[[\p{{Alphabetic}}\p{{N}}]--[{SCRIPTS}]]+"
_CHARACTER = regex.compile(rf"(?V1){_CHARACTER_PATTERN}")
_RUN = regex.compile(rf"(?V1)(?:{_CHARACTER_PATTERN})+")


def spaced(text: str) -> str:
    """`text` with each run of those scripts written as its pairs of neighbouring characters,
    set apart ("如何创建存档" as " 如何 何创 创建 建存 存档 "; a lone character stays as it is),
    so that whatever splits words at spaces reads a word of these scripts as the index holds it.
    Other text is unchanged."""
    return str(_RUN.sub(_pairs, text))


def parts(text: str) -> Iterator[tuple[str, bool]]:
    """`text` in order as the runs of those scripts (True) and the text between them (False)."""
    at = 0
    for run in _RUN.finditer(text):
        if run.start() > at:
            yield text[at : run.start()], False
        yield run.group(), True
        at = run.end()
    if at < len(text):
        yield text[at:], False


def pairs(run: str) -> list[str]:
    """A run's words: its pairs of neighbouring characters (its one character, alone)."""
    characters = _CHARACTER.findall(run)
    return [a + b for a, b in itertools.pairwise(characters)] or characters


def holds(text: str) -> bool:
    """Whether `text` has a character of a script written without spaces."""
    return _CHARACTER.search(text) is not None


def _pairs(run: regex.Match[str]) -> str:
    return " " + " ".join(pairs(run.group())) + " "

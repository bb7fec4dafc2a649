"""Snippets: the window of a hit's section that matched the query, and where the query's words are in it."""

from __future__ import annotations

import functools
import re

from mdrag.answers.search import Snippet
from mdrag.notes.comments import obsidian_comments
from mdrag.retrieval.candidate import Candidate
from mdrag.retrieval.excerpt import EXCERPT_CHARS
from mdrag.retrieval.query import Query, whole_term
from mdrag.retrieval.words import is_stop
from mdrag.retrieval.words import words as query_words
from mdrag.text import unspaced

# Endings dropped from a query word before matching: a plural's first, then one of the others
# (each with the shortest root it may leave), so "restoring" and "restores" mark "restore" and
# "configuration" marks "configure", as the keyword search's english stemmer joins them. A root
# too short to stand for its word is kept whole: "note" leaving "not" marked "nothing", "theme"
# leaving "them" marked "them"; a longer root for "ation" keeps "relation" from marking "release".
_PLURALS = (("ies", 3), ("es", 3), ("s", 3))
_ENDINGS = (("ation", 5), ("ing", 4), ("ed", 4), ("e", 5))
_SIBILANT = ("s", "x", "z", "ch", "sh")  # "matches" is "match" + es; "notes" is "note" + s
# Letters and digits: "disqus_identifier" and "Get-Item" are two words each, so "disqus" marks
# the first part rather than the whole name.
_WORD = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s+")
LINE_REACH = 200  # characters a window may widen by to start and end on whole lines


def query_terms(query: str) -> list[str]:
    """The query's words worth marking (the score's words: see words.py), lower case and stripped
    of common endings, each once; a word's parts between underscores are marked apart, as the
    text's words are read below."""
    terms: list[str] = []
    for word in (part for whole in query_words(query.casefold()) for part in _parts(whole)):
        if len(word) < 2 or is_stop(word):
            continue
        root = _root(word)
        if root not in terms:
            terms.append(root)
    return terms


def _parts(word: str) -> list[str]:
    # A pair of a script written without spaces is one (\w would cut off a Thai sign).
    return [word] if unspaced.holds(word) else _WORD.findall(word)


def _root(word: str) -> str:
    for ending, shortest in _PLURALS:
        root = word[: -len(ending)]
        plural = word.endswith(ending) and len(root) >= shortest and not word.endswith("ss")
        if plural and (ending != "es" or root.endswith(_SIBILANT)):
            word = root
            break
    for ending, shortest in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= shortest:
            return word[: -len(ending)]
    return word


def highlights(text: str, terms: list[str], rare: tuple[str, ...] = ()) -> list[tuple[int, int]]:
    """(start, end) of every word in `text` that a query term begins (a root of three or more
    letters) or equals (a shorter one), and of every whole `rare` identifier (pg_restore is one
    mark, not "pg" and "restore"). A term of a script written without spaces (a pair of its
    characters) is marked wherever it stands, and marks that overlap are one."""
    names = [m.span() for term in rare for m in whole_term(term).finditer(text)]
    found = list(names)
    run_on = [term for term in terms if unspaced.holds(term)]
    found += [m.span() for term in run_on for m in re.finditer(re.escape(term), text)]
    spaced_terms = [term for term in terms if term not in run_on]
    for match in _WORD.finditer(text) if spaced_terms else ():
        word = match.group().casefold()
        if is_stop(word):  # never a query's word: "theme" leaves the root "them", not to mark "them"
            continue
        if any(word == t or (len(t) >= 3 and word.startswith(t)) for t in spaced_terms) and not any(
            a <= match.start() and match.end() <= b for a, b in names
        ):
            found.append(match.span())
    return _joined(sorted(found))


def _joined(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans with those that overlap made one ("创建" and "建存" mark "创建存")."""
    joined: list[tuple[int, int]] = []
    for start, end in spans:
        if joined and start < joined[-1][1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


def window_text(row: Candidate) -> tuple[str, int]:
    """The text of the window that matched and its offset in the file: the part of the section the
    hit's vector stands for. Rows without a window's place (an older layout) give the section."""
    text, start = row["section_text"], row["start_position"]
    window_start, window_end = row.get("window_start"), row.get("window_end")
    if isinstance(window_start, int) and isinstance(window_end, int):
        a, b = window_start - start, window_end - start
        if 0 <= a < b <= len(text):
            # A window begins and ends where the model's word pieces ran out, often inside a
            # line: widen it to whole lines (a little at most) so it reads from a line's start.
            line_start = text.rfind("\n", max(0, a - LINE_REACH), a) + 1
            a = line_start if line_start > 0 or a <= LINE_REACH else a
            line_end = text.find("\n", b, b + LINE_REACH)
            b = line_end if line_end != -1 else (b if b + LINE_REACH < len(text) else len(text))
            return text[a:b], start + a
    if text.startswith("#"):  # the heading line: a hit shows its heading path already
        under = text.find("\n") + 1 or len(text)
        return text[under:], start + under
    return text, start


def snippet(row: Candidate, query: str) -> Snippet:
    """A hit's snippet: the matched window's text (plain), its lines in the file, and the
    (start, end) offsets in that text of the query's words."""
    rare, terms = _marks(query)
    text, offset = _holding(row, rare, *window_text(row))
    section_text = row["section_text"]
    first = row["start_line"] + section_text.count("\n", 0, offset - row["start_position"])
    marks = highlights(text, terms, rare)
    return {
        "text": _unmarked_comments_blanked(text, offset - row["start_position"], section_text, marks),
        "start_line": first,
        "end_line": first + text.count("\n"),
        "highlights": [list(span) for span in marks],
    }


def _unmarked_comments_blanked(text: str, at: int, section: str, marks: list[tuple[int, int]]) -> str:
    """The window (`at` in its section) with each Obsidian comment that holds no mark blanked,
    each character a space but line ends, so offsets and lines hold (a plugin page's "%% Hub
    footer: Please don't edit anything below this line %%"); a window that is only comments
    stays as written."""
    chars, end = list(text), at + len(text)
    for a, b in obsidian_comments(section) if "%%" in text else ():
        a, b = max(a, at) - at, min(b, end) - at
        if a < b and not any(x < b and y > a for x, y in marks):
            chars[a:b] = ["\n" if c == "\n" else " " for c in chars[a:b]]
    blanked = "".join(chars)
    return blanked if blanked.strip() else text


@functools.lru_cache(maxsize=64)
def _marks(query: str) -> tuple[tuple[str, ...], list[str]]:
    """The query's identifiers and its other words to mark, worked out once per query rather
    than once per hit (callers only read them)."""
    rare = Query.of(query).rare if query else ()
    return rare, query_terms(_without(query, rare))


def _without(query: str, rare: tuple[str, ...]) -> str:
    """The query less its identifiers: pg_restore is marked whole, never by its parts ("pg" in
    pg_dump, every "restore")."""
    for term in rare:
        query = whole_term(term).sub(" ", query)
    return query


def _holding(row: Candidate, rare: tuple[str, ...], text: str, offset: int) -> tuple[str, int]:
    """The window, or, when it lacks every identifier asked for (pg_restore) and its section holds
    one, the whole lines around the identifier's first place: what a keyword search matched."""
    if not rare or any(whole_term(term).search(text) for term in rare):
        return text, offset
    section = row["section_text"]
    found = min(
        (m for m in (whole_term(term).search(section) for term in rare) if m is not None),
        key=lambda m: m.start(),
        default=None,
    )
    if found is None:
        return text, offset
    reach = EXCERPT_CHARS // 2
    a = max(section.rfind("\n", 0, max(0, found.start() - reach)) + 1, found.start() - reach - LINE_REACH)
    b = section.find("\n", found.end() + reach, found.end() + reach + LINE_REACH)
    b = b if b != -1 else min(len(section), found.end() + reach + LINE_REACH)
    return section[a:b].rstrip("\n"), row["start_position"] + a

"""The RRF baseline's fuzzy title match (#57): a note's titles as words, matched to a query's.

A note's titles are its frontmatter `title` and its first `#` heading, or else its file name, and
each of its `aliases`; title and query are split into words (lower case, hyphen/underscore/space/
camelCase split, plurals and -ing/-ed stripped, English stop words dropped), a query word matches
a title word when equal or, for words of 5 letters or more, one edit apart (a transposition counts
one); two or three adjacent query words joined match a joined title word ("data view" meets
"Dataview"). Used by bench.baseline's third ranking.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

_STOP: frozenset[str] | None = None
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PARTS = re.compile(r"[A-Za-z0-9]+")
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _stop_words() -> frozenset[str]:
    global _STOP
    if _STOP is None:
        from mdrag.retrieval.words import STOP_WORDS

        _STOP = STOP_WORDS
    return _STOP


def stem(word: str) -> str:
    """Plurals and -ing/-ed off: a light suffix stripper, the same on both sides of a match."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    return word


def raw_words(text: str) -> list[str]:
    """The words of a title or query, split at hyphens, spaces, underscores and camelCase, lower case."""
    found = []
    for part in _PARTS.findall(text):
        found += [w.lower() for w in _CAMEL.split(part) if w]
    return found


def title_words(text: str) -> list[str]:
    stop = _stop_words()
    return [stem(w) for w in raw_words(text) if w not in stop and (len(w) > 1 or w.isdigit())]


def one_edit(a: str, b: str) -> bool:
    """Whether a and b are at most one edit apart (insert, delete, substitute, or swap two neighbours)."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    if la > lb:
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1 :]


def matches(query_word: str, title_word: str) -> bool:
    if query_word == title_word:
        return True
    return len(query_word) >= 5 and len(title_word) >= 5 and one_edit(query_word, title_word)


def note_titles(path: Path) -> list[str]:
    """A note's titles: frontmatter title and first `#` heading, else its file name; each alias."""
    from mdrag.notes.frontblock import split_frontmatter

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        frontmatter, offset, _, _ = split_frontmatter(text)
    except Exception:
        text, frontmatter, offset = "", {}, 0
    titles: list[str] = []
    if not isinstance(frontmatter, dict):
        frontmatter = {}
    title = frontmatter.get("title")
    if isinstance(title, (str, int, float)) and str(title).strip():
        titles.append(str(title))
    heading = _first_h1(text[offset:])
    if heading:
        titles.append(heading)
    if not titles:
        titles.append(path.stem)
    aliases = frontmatter.get("aliases", frontmatter.get("alias"))
    if isinstance(aliases, (str, int, float)):
        aliases = [aliases]
    if isinstance(aliases, list):
        titles += [str(a) for a in aliases if isinstance(a, (str, int, float)) and str(a).strip()]
    return titles


def _first_h1(body: str) -> str:
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            found = _H1.match(line)
            if found:
                return found.group(1)
    return ""


class TitleIndex:
    """Every note's titles as word sets, and a vocabulary of their words for the fuzzy lookup."""

    def __init__(self, paths: Iterable[Path]) -> None:
        # note path -> list of (title words, the joined title)
        self.titles: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        vocabulary: set[str] = set()
        self.df: dict[str, int] = {}  # a title word -> how many notes hold it in a title
        for path in paths:
            variants = []
            for title in note_titles(path):
                words = tuple(title_words(title))
                if words:
                    joined = "".join(w for w in raw_words(title) if w not in _stop_words())
                    variants.append((words, joined))
                    vocabulary.update(words)
                    vocabulary.add(joined)
            if variants:
                self.titles[str(path.resolve())] = variants
                for word in {w for words, joined in variants for w in (*words, joined)}:
                    self.df[word] = self.df.get(word, 0) + 1
        self.vocabulary = vocabulary
        self._by_length: dict[int, list[str]] = {}
        for word in vocabulary:
            self._by_length.setdefault(len(word), []).append(word)

    def _near(self, word: str) -> set[str]:
        """The vocabulary's words this query word matches."""
        found = {word} if word in self.vocabulary else set()
        if len(word) >= 5:
            for length in (len(word) - 1, len(word), len(word) + 1):
                found.update(w for w in self._by_length.get(length, ()) if matches(word, w))
        return found

    def ranking(self, query: str, depth: int, score: str = "both") -> list[tuple[str, int, float]]:
        """(note path, rank, score) best first, to rank `depth`; tied notes share the best rank of their tie.
        `score`: "both" (the share of the title's words the query covers times the share of the
        query's words the title covers), "share" (the title's share alone, the query's share
        breaking ties) or "idf" (as "both", each word weighing its idf among the notes' titles,
        log((N + 1) / df): a word most titles hold, "obsidian" or "plugin", weighs little)."""
        raw = [w for w in raw_words(query) if w not in _stop_words()]
        words = [stem(w) for w in raw if len(w) > 1 or w.isdigit()]
        if not words:
            return []
        near = {w: self._near(w) for w in set(words)}
        joined_near: dict[str, int] = {}  # a joined title word -> the most query words joined to it
        joined_words: dict[str, set[str]] = {}  # ... and those query words
        spelled: set[str] = set()  # title words that two or three query words joined spell exactly
        for n in (1, 2, 3):
            for i in range(len(raw) - n + 1):
                run = "".join(raw[i : i + n])
                if n > 1 and run in self.vocabulary:
                    spelled.add(run)
                for word in self._near(run):
                    if n > joined_near.get(word, 0):
                        joined_near[word] = n
                        joined_words[word] = {stem(w) for w in raw[i : i + n]}

        def whole(title: tuple[str, ...], joined: str) -> bool:
            """Whether joined query words cover this title whole: any near match for a title of
            several words ("dataview" meets "Data View"), only the exact spelling for one word
            ("data view" meets "Dataview"; "view post" is not "Viewport")."""
            return joined in joined_near and (len(title) > 1 or joined in spelled)

        total = len(self.titles) + 1
        query_idf = {w: math.log(total / max((self.df[m] for m in near[w]), default=1)) for w in near}
        query_mass = sum(query_idf.values()) or 1.0
        scored = []
        for path, variants in self.titles.items():
            best = (0.0, 0.0)
            for title, joined in variants:
                if whole(title, joined):
                    covered = set(title)
                    query_share = min(1.0, joined_near[joined] / len(words))
                else:
                    covered = {t for t in title if any(t in near[w] for w in near)}
                    query_share = sum(1 for w in words if near[w] & set(title)) / len(words)
                if covered and score == "idf":
                    if whole(title, joined):
                        asked = joined_words[joined] & set(near)
                    else:
                        asked = {w for w in near if near[w] & set(title)}
                    weights = [math.log(total / self.df.get(t, 1)) for t in title]
                    title_share = sum(w for t, w in zip(title, weights, strict=True) if t in covered) / (
                        sum(weights) or 1.0
                    )
                    query_share = sum(query_idf[w] for w in asked) / query_mass
                    best = max(best, (title_share * query_share, title_share))
                elif covered:
                    title_share = len(covered) / len(title)
                    if score == "both":
                        best = max(best, (title_share * query_share, title_share))
                    else:
                        best = max(best, (title_share, query_share))
            if best[0] > 0:
                scored.append((best, path))
        scored.sort(key=lambda item: item[0], reverse=True)
        out: list[tuple[str, int, float]] = []
        rank, previous = 0, None
        for i, (key, path) in enumerate(scored, start=1):
            if key != previous:
                rank, previous = i, key
            if rank > depth:
                break
            out.append((path, rank, key[0] + key[1] / 10))
        return out

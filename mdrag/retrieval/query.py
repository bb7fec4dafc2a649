"""A query's words as search reads them: stems, rare terms, names, and what BM25 is asked."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mdrag.retrieval.words import TERM, WORD, is_stop
from mdrag.retrieval.words import words as query_words
from mdrag.text import unspaced


@dataclass(frozen=True)
class Query:
    """The query's words, prepared once for every candidate."""

    words: frozenset[str]
    rare: tuple[str, ...]
    lookup: bool  # nothing asked but identifiers ("pg_restore", "EIP-4844"): a search for a name
    # The names a query asks about, past its rare terms: capitalized words inside an otherwise
    # lower-case sentence (Loki, MySQL, Pester), lower case; a candidate holds one by its stem.
    # A name no candidate holds is a thing the notes found never mention.
    names: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str) -> Query:
        stems = frozenset(_stem(w) for w in query_words(text))
        terms = TERM.findall(text)
        rare = tuple(sorted({t.lower() for t in terms if _looks_rare(t)}))
        named = {_stem(w) for term in rare for w in WORD.findall(term)}
        capitals = _capitalized(text, named)
        return cls(stems, rare, bool(rare) and stems <= named, capitals)

    def absent(self, texts: Sequence[str]) -> tuple[str, ...]:
        """The query's rare terms (held whole) and names (their stems) that none of these
        lower-case texts holds."""
        missing = [t for t in self.rare if not any(whole_term(t).search(x) for x in texts if t in x)]
        missing += [n for n in self.names if not any(_stem(n) in x for x in texts)]
        return tuple(missing)

    def holds_rare(self, lowered: str) -> bool:
        """Whether the (lowercased) text holds one of the query's rare terms as a whole identifier:
        `pg_restore` is in "run pg_restore." but not in "my_pg_restore" or "pg_restore_all", nor
        EIP-1559 in "EIP-15590" (a longer identifier names something else)."""
        return any(whole_term(term).search(lowered) for term in self.rare if term in lowered)


def keyword_query(text: str) -> str:
    """What the BM25 search is asked: the query without its question words.

    The index's analyzer drops only English grammar words, so "how do I put the output onto the
    clipboard" would rank sections full of "how", "do" and "output" above the one about the
    clipboard: BM25 sums every word's weight, and a natural question has more filler than
    subject. A query of filler only is asked as it is.
    """
    kept = []
    for part, run in unspaced.parts(text):
        if run:
            kept.append(part)  # 如何创建存档, whole: the keyword index asks its pairs (parsed_terms)
            continue
        for term in TERM.findall(part):
            if _looks_rare(term):
                kept.append(term)  # Get-ChildItem stays whole, its "Get" included
            else:
                kept += query_words(term, keep_case=True)
    return " ".join(kept) if kept else text


_SENTENCE_END = re.compile(r"[.!?:;]\s*$")


def _capitalized(text: str, rare_words: set[str]) -> tuple[str, ...]:
    """The capitalized words of a lower-case sentence (lower case), past its first word and not
    after a full stop: a product, tool or standard (Loki, MySQL, Pester). A query in Title Case or
    capitals has no such names: there a capital says nothing."""
    found = [(m.start(), m.group()) for m in WORD.finditer(text) if len(m.group()) > 2]
    capitals = [w for _, w in found if w[0].isupper() or w.isupper()]
    if not found or len(capitals) * 2 > len(found):
        return ()
    names = {
        word.lower()
        for i, (start, word) in enumerate(found)
        if i > 0
        and (word[0].isupper() or any(c.isupper() for c in word[1:]))
        and not _SENTENCE_END.search(text[:start])
        and not is_stop(word)
    }
    return tuple(sorted(n for n in names if _stem(n) not in rare_words))


def _stem(word: str) -> str:
    # Plural and verb -s only: "scripts" meets "script" without a stemmer dependency.
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@functools.lru_cache(maxsize=256)
def whole_term(term: str) -> re.Pattern[str]:
    """The term as a whole identifier, in any case: no word character before it (nor "x-"), and
    no word character after it, nor "-x" or ".x" (a trailing dash or full stop is punctuation).
    A dot before it may be a namespace's or a file name's: path.join is in os.path.join, ps1 in
    script.ps1."""
    return re.compile(rf"(?<!\w)(?<!\w-){re.escape(term)}(?![\w]|[-.]\w)", re.IGNORECASE)


def _looks_rare(term: str) -> bool:
    # Separators and digits, not capitals: "PowerShell" or "GitHub" name a whole corpus's
    # subject, so a note holding them says nothing; "Get-ChildItem", "pg_restore", "EIP-1559" do.
    return len(term) > 2 and (any(c in term for c in "_-.") or any(c.isdigit() for c in term))

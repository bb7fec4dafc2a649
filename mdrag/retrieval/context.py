"""Context: a prompt-ready pack of the best sections for a query, within a token budget, with citations."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mdrag.answers.notes import ContextPack, ContextSource
from mdrag.answers.search import Hit, SearchAnswer
from mdrag.retrieval.confidence import outcome_of

TokenCounter = Callable[[Sequence[str]], list[int]]
DEFAULT_MAX_TOKENS = 2000
SEARCH_DEPTH = 30  # hits fetched to fill the budget; the pack takes them best first
# Lower than search's 0.7 (relevance score, see relevance.py): an assistant reading the pack
# weighs weak evidence itself, and the pack says its confidence level; below "low" (0.5)
# nothing goes in, and the pack names the closest notes instead.
CONTEXT_THRESHOLD = 0.5


def citation(hit: Hit, short: bool = False) -> str:
    """`path#anchor (lines a-b): heading path`; short, the path and lines alone."""
    source = hit["source"]
    where = f"{source['anchor']} (lines {source['start_line']}-{source['end_line']})"
    if short:
        return f"{source['path']} (lines {source['start_line']}-{source['end_line']})"
    return f"{where}: {source['heading_path']}" if source["heading_path"] else where


def build_context(
    response: SearchAnswer, max_tokens: int, count_tokens: TokenCounter, answer_at: float = 0.7
) -> ContextPack:
    """Pack the response's hits, best first, skipping repeats, until the budget is spent.

    A section whose text appears twice (a note copied into two places) goes in once; a hit
    longer than what is left of the budget is cut to fit only when nothing else went in, and
    then under a short citation if the full one leaves no room. The word-piece tokenizer
    splits at whitespace, so blocks joined by blank lines cost the sum of their counts.

    When no section reaches the threshold a script gets `context` "", `sources` [],
    `confidence.level` "none", a `message` saying so, and `closest`: up to 3 nearest notes
    (path, heading path, score, similarity, source), the same list `search --json` gives.

    `confidence.outcome` is a search's at its usual bar (`answer_at`, the configured threshold),
    not the pack's lower one: "answer" when a section reaches it, "related" when the pack holds
    only sections under it (an assistant should say they may not answer), else "none".
    """
    blocks: list[str] = []
    sources: list[ContextSource] = []
    seen: set[str] = set()
    used = 0
    hits = response["results"]
    sizes = count_tokens([h["section_text"].strip() for h in hits])
    for hit, size in zip(hits, sizes, strict=True):
        text = hit["section_text"].strip()
        fingerprint = " ".join(text.split()).casefold()
        if fingerprint in seen:
            continue
        header = f"[{len(sources) + 1}] {citation(hit)}"
        header_cost = count_tokens([header])[0]
        if used + header_cost + size > max_tokens:
            if sources:
                continue  # a smaller hit further down may still fit
            if header_cost * 2 > max_tokens:
                header = f"[1] {citation(hit, short=True)}"
                header_cost = count_tokens([header])[0]
            room = max_tokens - header_cost - 1  # the cut's " …"
            if room < 1:
                break
            text = _cut(text, room, count_tokens)
            size = count_tokens([text])[0]
        seen.add(fingerprint)
        blocks.append(f"{header}\n{text}")
        sources.append({"n": len(sources) + 1, "score": hit["confidence_score"], **hit["source"]})
        used += header_cost + size
    context = "\n\n".join(blocks)
    best = max((source["score"] for source in sources), default=None)
    outcome = outcome_of(int(best is not None and best >= answer_at), len(sources))
    return {
        "query": response["query"],
        "confidence": {**response["confidence"], "outcome": outcome},
        "message": response.get("message", ""),
        # Nothing passed: the nearest notes (path, heading path, score), so a script or an
        # assistant can say what the notes hold rather than that they hold nothing.
        "closest": response.get("closest", []) if not sources else [],
        "tokens": count_tokens([context])[0] if context else 0,
        "max_tokens": max_tokens,
        "sources": sources,
        "context": context,
    }


def _cut(text: str, tokens: int, count_tokens: TokenCounter) -> str:
    """The longest prefix of whole words within `tokens` (a binary search over word counts)."""
    words = text.split(" ")
    low, high = 0, len(words)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens([" ".join(words[:middle])])[0] <= tokens:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]) + " …"

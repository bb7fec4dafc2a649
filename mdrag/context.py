"""Context: a prompt-ready pack of the best sections for a query, within a token budget, with citations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

TokenCounter = Callable[[Sequence[str]], list[int]]
DEFAULT_MAX_TOKENS = 2000
SEARCH_DEPTH = 30  # hits fetched to fill the budget; the pack takes them best first
# Lower than search's 0.7: an assistant reading the pack weighs weak evidence itself, and
# the pack says its confidence level; below "low" (0.5) nothing goes in.
CONTEXT_THRESHOLD = 0.5


def citation(hit: dict[str, Any]) -> str:
    source = hit["source"]
    where = f"{source['anchor']} (lines {source['start_line']}-{source['end_line']})"
    return f"{where}: {source['heading_path']}" if source["heading_path"] else where


def build_context(response: dict[str, Any], max_tokens: int, count_tokens: TokenCounter) -> dict[str, Any]:
    """Pack the response's hits, best first, skipping repeats, until the budget is spent.

    A section whose text appears twice (a note copied into two places) goes in once; a hit
    longer than what is left of the budget is cut to fit only when nothing else went in.
    """
    blocks: list[str] = []
    sources: list[dict[str, Any]] = []
    seen: set[str] = set()
    used = 0
    hits = response["results"]
    sizes = count_tokens([h["section_text"] for h in hits])
    for hit, size in zip(hits, sizes, strict=True):
        text = hit["section_text"].strip()
        fingerprint = " ".join(text.split()).casefold()
        if fingerprint in seen:
            continue
        header = f"[{len(sources) + 1}] {citation(hit)}"
        cost = size + count_tokens([header])[0] + 2
        if used + cost > max_tokens:
            if sources:
                continue  # a smaller hit further down may still fit
            text = _cut(text, max(0, max_tokens - (cost - size)), count_tokens)
            cost = max_tokens
        seen.add(fingerprint)
        blocks.append(f"{header}\n{text}")
        sources.append({"n": len(sources) + 1, "score": hit["confidence_score"], **hit["source"]})
        used += cost
    return {
        "query": response["query"],
        "confidence": response["confidence"],
        "message": response.get("message", ""),
        "tokens": used,
        "max_tokens": max_tokens,
        "sources": sources,
        "context": "\n\n".join(blocks),
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

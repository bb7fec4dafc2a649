"""Confidence in words: a score's level and the lines that sum up an answer (CLI and page alike)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mdrag.answers.search import Evidence, SearchAnswer


NO_ANSWER = "no confident answer in your notes"
# Confidence levels: (level, lowest best score, fewest hits at or above the threshold).
CONFIDENCE_LEVELS = (("high", 0.9, 1), ("medium", 0.70, 1), ("low", 0.50, 1))


# "Possibly related": when nothing reaches the threshold, the sections this close under it are
# shown as hits under that heading (0.5 to 0.7 at the default), not as an answer.
RELATED_BAND = 0.2
RELATED_MAX = 5  # related hits shown at most: a lead to follow, not a list to read
# The three outcomes of a search, the same in the terminal, --json, MCP and context.
ANSWER, RELATED, NONE = "answer", "related", "none"
OUTCOME_WORDS = {
    ANSWER: "answer in your notes",
    RELATED: "possibly related (not a confident answer)",
    NONE: "no confident answer; closest notes",
}


def outcome_of(hits: int, related: int) -> str:
    """answer (hits passed the threshold), related (none did, some came close) or none."""
    return ANSWER if hits else RELATED if related else NONE


def confidence_level(best_score: float | None, hits: int) -> str:
    """high, medium, low or none, from the best returned hit's relevance score.

    With the default threshold 0.7 a returned hit is at least medium; low needs a lower
    threshold; none means no hit was kept (the `closest` notes may still be worth a look).
    """
    for level, lowest, fewest_hits in CONFIDENCE_LEVELS:
        if best_score is not None and best_score >= lowest and hits >= fewest_hits:
            return level
    return "none"


def results_line(response: SearchAnswer) -> str:
    """'2 results, high confidence, in 21 ms'."""
    count = len(response["results"])
    level = response.get("confidence", {}).get("level", "none")
    return (
        f"{count} result{'s' * (count != 1)}, {level} confidence, in {response['execution_time_ms']:.0f} ms"
    )


def nothing_line(response: SearchAnswer, shown: Callable[[str], str] = str) -> str:
    """Why no answer is shown: 'no confident answer in your notes: no section scored 0.7 or more;
    closest notes:', '...: no note mentions loki; possibly related:' (the daemon's message while
    it indexes). The folder a `--path` names is said as `shown` shows paths (`notes/runbooks`, as
    hits are shown, not the absolute path the daemon was sent)."""
    message = response.get("message") or "nothing matched"
    folder = response.get("search_parameters", {}).get("path_prefix")
    if folder:
        message = message.replace(f" under {folder}", f" under {shown(folder)}")
    if response.get("related"):
        return message + "; possibly related:"
    return message + ("; closest notes:" if response.get("closest") else "")


def related_line(response: SearchAnswer) -> str:
    """'(2 possibly related, none at 0.7 or more, in 21 ms)'."""
    threshold = response.get("search_parameters", {}).get("threshold", 0.7)
    return (
        f"{len(response.get('related') or [])} possibly related, none at {threshold:g} or more, "
        f"in {response['execution_time_ms']:.0f} ms"
    )


# The rank features are reciprocal ranks (0 when a list did not find the hit): say so, beside the
# ranks themselves on the line above.
_EVIDENCE = {"dense_rank": "1/dense_rank", "keyword_rank": "1/keyword_rank"}


def explain_lines(explain: Evidence) -> list[str]:
    """A hit's --explain: its similarity and ranks, then the evidence its score weighed."""
    e = explain
    return [
        f"similarity {e['similarity']}, dense rank {e['dense_rank'] or '-'}, "
        f"keyword rank {e['keyword_rank'] or '-'}, score rank {e['score_rank']}",
        "evidence " + ", ".join(f"{_EVIDENCE.get(k, k)} {v:g}" for k, v in e["evidence"].items()),
    ]


# What each piece of evidence measures, in words (`--explain`'s legend; relevance.FEATURES).
EVIDENCE_WORDS = (
    "cosine: how close in meaning the section is to the query (0 to 1)",
    "margin: its cosine's lead over the next note's",
    "1/dense_rank, 1/keyword_rank: one over its place among the closest in meaning and in words"
    " (0: not among them)",
    "bm25: how well its words match (log of the keyword score)",
    "agree: 1 when both lists found it near their top",
    "coverage, title: the share of the query's words its text, and its title and headings, hold",
    "rare: 1 when it holds an identifier of the query whole (pg_restore, EIP-1559)",
    "vault_z, spread: its cosine on this folder's own scale, and the best note's cosine over the tenth's",
    "named, vault_words: 0 when the query names something, or has a word, no note holds",
    "description: how close in meaning the note's frontmatter description is (0: it has none)",
)

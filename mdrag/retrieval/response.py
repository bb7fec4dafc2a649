"""A search's response: the hits that pass, its confidence and outcome in words, the closest notes."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import cast

import numpy as np

from mdrag.answers import search as answers
from mdrag.params.search import SearchParams
from mdrag.retrieval.candidate import Candidate
from mdrag.retrieval.confidence import NO_ANSWER, RELATED_BAND, RELATED_MAX, confidence_level, outcome_of
from mdrag.retrieval.explain import explain
from mdrag.retrieval.hits import Hit, hit_of, shown_heading, source_reference
from mdrag.retrieval.ranking import pass_threshold
from mdrag.retrieval.readable import readable
from mdrag.retrieval.relevance import QueryEvidence
from mdrag.spelling import correctable, meant, said

CLOSEST = 3  # notes shown when nothing passes the threshold, so an answer is never a bare "nothing"
SUGGEST_FROM = 10  # a typo's likely meaning is looked for in this many of the best sections
SUGGESTED = 3  # unheard words a suggestion is looked for, at most
SUGGEST_CHARS = 4000  # of each section's text


@dataclass
class SearchResponse:
    query: str
    results: list[Hit]
    search_parameters: answers.SearchParameters
    execution_time_ms: float
    confidence: answers.Confidence
    best_candidate_score: float | None = None  # the best score seen, passing or not
    closest: list[answers.ClosestNote] = field(default_factory=list)  # when nothing passes: the nearest notes
    related: list[Hit] = field(default_factory=list)  # when nothing passes: hits close under the bar
    message: str = ""
    explain: answers.SearchExplain | None = None  # with --explain: the candidates the threshold dropped
    query_vector: np.ndarray | None = None  # not part of the answer: kept for the gap log

    def to_dict(self) -> answers.SearchAnswer:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "query_vector"}
        data["results"] = [hit.to_dict() for hit in self.results]
        data["related"] = [hit.to_dict() for hit in self.related]
        return cast(answers.SearchAnswer, data)


def respond(
    params: SearchParams,
    ordered: list[Candidate],
    ranked: list[list[Candidate]],
    evidence: QueryEvidence,
    vector: np.ndarray,
    started: float,
    indexing: bool = False,
    empty_scope: bool = False,
    as_scored: bool = False,
) -> SearchResponse:
    """The response to a search whose candidates are `ordered` (scored, best first; `ranked`: the
    engine's lists, for --explain): the hits that pass the threshold (a note's names shown as the
    section after them, which may score under it: readable.py), or else the hits close under it,
    the closest notes and why nothing answered. `started`: its perf_counter start; `empty_scope`:
    its filter holds no indexed note; `as_scored`: each hit shown as scored (for the eval)."""
    chosen, best, dropped = pass_threshold(ordered, params)
    marked = "" if params.passage else params.query
    # What passed, as sections a person can read: a note's names shown as its next section, so
    # top_k is counted after (ordered is best first: what passes is its head).
    passing = itertools.takewhile(lambda c: c["score"] >= params.threshold, ordered)
    shown = chosen if as_scored else readable(passing, ordered, params.top_k)
    hits = [hit_of(c, marked) for c in shown]
    top = max((hit.confidence_score for hit in hits), default=None)
    level = confidence_level(top, len(hits))
    message = reason = ""
    closest: list[answers.ClosestNote] = []
    related: list[Hit] = []
    if not hits:
        floor = params.threshold - RELATED_BAND
        close = [c for c in dropped if c["score"] >= floor]
        room = min(RELATED_MAX, params.top_k)
        related = [hit_of(c, marked) for c in (close[:room] if as_scored else readable(close, ordered, room))]
        reason, message = _why_none(params, best, evidence, indexing, ordered, empty_scope)
        closest = _closest(ordered)  # also beside related hits: a context pack may keep neither
    if level == "none":
        message = NO_ANSWER + (f": {message}" if message else "")
    explained = explain(hits, shown, dropped, ordered, ranked, params) if params.explain else None
    return SearchResponse(
        query=params.query,
        results=hits,
        search_parameters={
            "top_k": params.top_k,
            "threshold": params.threshold,
            "metric": "IP",  # inner product of unit vectors: the cosine
            "mode": params.mode,
            **params.scope.shown(),
        },
        execution_time_ms=round((time.perf_counter() - started) * 1000, 2),
        best_candidate_score=None if best is None else round(best, 4),
        closest=closest,
        related=related,
        confidence={
            "level": level,
            "best_score": top,
            "hits": len(hits),
            "outcome": outcome_of(len(hits), len(related)),
            "reason": reason,
        },
        message=message,
        explain=explained,
        query_vector=vector,
    )


def _why_none(
    params: SearchParams,
    best: float | None,
    evidence: QueryEvidence,
    indexing: bool,
    ordered: Sequence[Candidate],
    empty_scope: bool,
) -> tuple[str, str]:
    """Why no hit passed, when known (the reason), and the message that says it: a word no note
    holds is named, with the word one slip from it that the best sections hold (a typo's meaning)."""
    so_far = " indexed so far" if indexing else ""
    if empty_scope:  # what to say, rather than blame a word
        return "", params.scope.none_words(so_far)
    if best is None and (params.scope.narrows or not evidence.unheard):
        # Nothing to score: among the notes a filter holds (a keyword search, or notes with no
        # sections), or for words no note holds.
        return "", "nothing matched" + params.scope.words()
    reason = ""
    if evidence.unheard:
        suggestion = _did_you_mean(evidence.unheard, ordered[:SUGGEST_FROM])
        reason = f"no note{so_far} mentions " + _either(evidence.unheard) + suggestion + params.scope.words()
    elif evidence.absent:
        reason = "no note found mentions " + _either(evidence.absent)
    return reason, reason or f"no section scored {params.threshold:g} or more"


def _did_you_mean(unheard: Sequence[str], best: Sequence[Candidate]) -> str:
    """' (did you mean database?)' when the best sections hold a word one slip from an unheard one
    (the first SUGGESTED that may be typos, in each section's opening: a pasted page of unheard
    words, or sections of megabytes, cost no more)."""
    typos = [word for word in unheard if correctable(word)][:SUGGESTED]
    if not typos:
        return ""
    counts = said(
        f"{row.get('title') or ''} {row.get('heading_path') or ''} "
        f"{str(row.get('section_text') or '')[:SUGGEST_CHARS]}".lower()
        for row in best
    )
    suggested = [word for word in dict.fromkeys(meant(typed, counts) for typed in typos) if word]
    return f" (did you mean {_either(suggested)}?)" if suggested else ""


def _either(words: Sequence[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _closest(ordered: list[Candidate]) -> list[answers.ClosestNote]:
    """The best-scored section of each of the first few notes, for an answer that kept nothing."""
    closest: list[answers.ClosestNote] = []
    seen: set[str] = set()
    for row in ordered:
        if row["file_path"] in seen:
            continue
        seen.add(row["file_path"])
        closest.append(
            {
                "path": row["file_path"],
                "heading_path": shown_heading(row["heading_path"]),
                "score": round(row["score"], 4),
                "similarity": round(row["cosine"], 4),
                "source": source_reference(row),
            }
        )
        if len(closest) >= CLOSEST:
            break
    return closest

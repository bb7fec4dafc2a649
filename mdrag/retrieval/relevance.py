"""Relevance: a search candidate's evidence (cosine, BM25, ranks, word matches) as one score in [0, 1].

The score says how likely a note section answers the query, from evidence the search already
holds (never another engine call). It is made of two logistic functions, each a bias plus
non-negative weights on features that rise with the evidence:

- **the order** (`ORDER`): which candidate comes first. The default (hybrid) order is fitted per
  question on the judged vaults' answerable questions (`python -m bench.orderfit`: the chance of a
  right note among a question's candidates, maximised, and measured on each vault left out of its
  own fit); the dense and keyword orders are SciFact's (`python -m bench.fit`), which the vault fit
  did not beat held out. One set per search mode, since a dense search holds no BM25 ranks and a
  keyword search no dense ones. The strongest evidence in each is a note's lead over the next one.
- **the answer** (`DECISION`): whether the first candidate answers at all. Fitted per question on
  the judged vaults' training questions (`python -m bench.vaultfit`, its `small decision`: real
  notes folders, questions written as people ask them, a third of them near misses the notes do
  not answer), on the first candidate's place in the order, its cosine, the share of the query's
  words it holds, and whether the query names something no candidate holds (Loki, ERC-1155) or
  has a word no note holds. Its bias places the default threshold 0.7 where, on those questions,
  the lower of two margins (answered over 0.65, silent over 0.80) is highest: a confident answer
  to a question the notes cannot answer misleads more than a right page shown as possibly related.

The first candidate's score is the answer's probability; every other candidate's is lowered from
it by its distance to the first in the order's logit, so the scores keep the order's ranking and
the threshold keeps one meaning: a hit at 0.7 or more is one the decision answers with. A lone
candidate's score never falls as any of its evidence rises; among several, a first candidate
that leads by more leaves the others further below it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mdrag.retrieval.candidate import Candidate
from mdrag.retrieval.query import Query

FEATURES = (
    "cosine",
    "margin",
    "dense_rank",
    "keyword_rank",
    "bm25",
    "agree",
    "coverage",
    "title",
    "rare",
    "vault_z",
    "spread",
    "named",
    "vault_words",
    "description",
)

# The order: (bias, weights in FEATURES order) per mode. Only evidence that differs between a
# query's candidates can order them: the query-level evidence (spread, named, vault_words) has
# weight 0, and so has vault_z (the cosine on the vault's scale: within a query, the cosine again).
# hybrid, the default: fitted on every judged vault's answerable questions by bench/orderfit.py
# (a softmax per question, so it has no bias: only differences of this logit are read). Held out
# a vault at a time it puts a right page first for 0.799 of the sealed questions (mean over seven
# vaults; worst, tldr, 0.70), where SciFact's order did for 0.785 (worst 0.63).
# dense and keyword: fitted on SciFact test by bench/fit.py (python -m bench.fit fit DUMP --anchor);
# fitted on the vaults they held out no better (a right page first within 0.01 either way).
ORDER: dict[str, tuple[float, tuple[float, ...]]] = {
    "dense": (-2.0412, (0.3069, 15.24, 0.2129, 0.0, 0.0, 0.0, 3.777, 1.444, 0.777, 0.0, 0.0, 0.0, 0.0, 0.0)),
    "keyword": (
        -2.3394,
        (1.194, 14.23, 0.0, 1.405, 0.0, 0.0, 1.899, 0.8569, 0.6401, 0.0, 0.0, 0.0, 0.0, 0.0),
    ),
    "hybrid": (
        0.0,
        (7.4189, 9.7501, 0.0259, 1.6078, 0.2857, 0.0, 4.5919, 1.0018, 0.0607, 0.0, 0.0, 0.0, 0.0, 1.4952),
    ),
}
# The answer. Fitted on the judged vaults' train questions (python -m bench.vaultfit, its `small
# decision`, which prints them; `make eval` dumps the evidence): the bias, the weight of the first
# candidate's order logit (`order`) and of its DECISION_FEATURES, per mode. The fit is the exact
# minimum of a convex loss, so the same dumps always print the same constants.
# hybrid's is fitted over the vault order, refitted when the order changes (held out a vault at
# a time, bench/lovo.py: answered 0.65 and silent 0.85 of the sealed questions on average; refitted
# with the description's cosine in the order, 2026-12-04, on the indexes of layout 12).
# A dense search has no keyword list to say what no candidate names (`named` is always 1 there).
DECISION_FEATURES = ("cosine", "coverage", "named", "vault_words")
DECISION: dict[str, dict[str, float]] = {
    "dense": {
        "bias": -6.8802,
        "order": 0.0269,
        "cosine": 8.065,
        "coverage": 3.0246,
        "named": 0.0,
        "vault_words": 1.167,
    },
    "keyword": {
        "bias": -8.0426,
        "order": 0.0489,
        "cosine": 7.5135,
        "coverage": 2.9863,
        "named": 1.9164,
        "vault_words": 0.9522,
    },
    "hybrid": {
        "bias": -7.6548,
        "order": 0.0482,
        "cosine": 6.4069,
        "coverage": 2.9333,
        "named": 1.6582,
        "vault_words": 1.0022,
    },
}
MARGIN_CAP = 0.15  # a lead over the next note counts up to this much cosine
COPY_SHARE = 0.8  # sections sharing this share of their distinct words are copies of each other
COPY_OPENING = 1000  # characters of each section compared
COPY_COSINE = 0.08  # copies are this close to the query (a different title may lead each window)
AGREE_DEPTH = 10  # "dense and keyword agree": the note is in the top this many of both lists
SPREAD_DEPTH = 10  # the spread is the best note's cosine over this note's in the ranking
Z_CAP = 12.0  # a cosine this many spreads above the vault's mean is as sure as it gets


@dataclass(frozen=True)
class QueryEvidence:
    """What the whole candidate pool says about a query, the same for each of its candidates.

    `baseline`: the mean and spread of the query's cosine over a sample of the vault's notes
    (mdrag.retrieval.baseline), None for a vault too small; `spread`: the best note's cosine over the
    SPREAD_DEPTH-th note's (a question the vault answers has a note that stands out of the
    pack); `absent`: the query's rare terms and names (Query.names) that no candidate holds,
    which the keyword search would have found if a note held them (empty without a keyword list);
    `unheard`: the query's words that no note of the whole vault holds (the keyword index's
    term counts; empty without one).
    """

    baseline: tuple[float, float] | None = None
    spread: float = 0.0
    absent: tuple[str, ...] = ()
    unheard: tuple[str, ...] = ()


def features(
    query: Query,
    candidate: Candidate,
    lowered: tuple[str, str],
    dense_rank: int | None,
    keyword_rank: int | None,
    best_other_cosine: float | None,
    pool: QueryEvidence | None = None,
) -> tuple[float, ...]:
    """The evidence for one candidate (`lowered`: its text and its title and headings, lower
    case), each feature rising with it (see FEATURES)."""
    pool = pool or QueryEvidence()
    cosine = float(candidate.get("cosine") or 0.0)
    margin = 0.0 if best_other_cosine is None else cosine - best_other_cosine
    margin = max(-MARGIN_CAP, min(MARGIN_CAP, margin))
    bm25 = float(candidate.get("bm25") or 0.0)
    agree = float(
        dense_rank is not None
        and keyword_rank is not None
        and dense_rank <= AGREE_DEPTH
        and keyword_rank <= AGREE_DEPTH
    )
    text, label = lowered
    return (
        cosine,
        margin,
        1.0 / dense_rank if dense_rank else 0.0,
        1.0 / keyword_rank if keyword_rank else 0.0,
        math.log1p(max(bm25, 0.0)),
        agree,
        _share(query.words, text),
        _share(query.words, label),
        float(query.holds_rare(text) or query.holds_rare(label)),
        _vault_z(cosine, pool.baseline),
        pool.spread,
        0.0 if pool.absent else 1.0,
        0.0 if pool.unheard else 1.0,
        float(candidate.get("description") or 0.0),
    )


def _vault_z(cosine: float, baseline: tuple[float, float] | None) -> float:
    if baseline is None:
        return 0.0
    mean, spread = baseline
    return max(-Z_CAP, min(Z_CAP, (cosine - mean) / spread))


def weighs(feature: str, mode: str) -> bool:
    """Whether the order or the answer of this mode gives the feature any weight."""
    return ORDER[mode][1][FEATURES.index(feature)] != 0 or DECISION[mode].get(feature, 0.0) != 0


def order_logit(values: Sequence[float], mode: str) -> float:
    """Where a candidate stands in the order (ORDER), on the logit scale."""
    bias, weights = ORDER[mode]
    return bias + sum(w * x for w, x in zip(weights, values, strict=True))


def answer_logit(values: Sequence[float], mode: str) -> float:
    """The answer's logit (DECISION) for a query whose first candidate has these features."""
    weights = DECISION[mode]
    z = weights["bias"] + weights["order"] * order_logit(values, mode)
    return z + sum(weights[name] * values[FEATURES.index(name)] for name in DECISION_FEATURES)


def scores(candidates: Sequence[Sequence[float]], mode: str) -> list[float]:
    """Each candidate's score from the features of all a query's candidates (see the module's
    docstring): the first in the order scores the answer's probability, each other one that
    lowered by its distance to the first in the order's logit."""
    if not candidates:
        return []
    order = [order_logit(values, mode) for values in candidates]
    first = max(range(len(order)), key=order.__getitem__)  # the engine's first among equals
    answer = answer_logit(candidates[first], mode)
    return [_logistic(answer + (z - order[first])) for z in order]


def _logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0


def score_candidates(
    query: str,
    dense: list[Candidate],
    keyword: list[Candidate],
    key: Any,
    baseline: tuple[float, float] | None = None,
    keyword_searched: bool = True,
    unheard: tuple[str, ...] = (),
) -> tuple[list[tuple[Candidate, tuple[float, ...]]], QueryEvidence]:
    """Every distinct candidate of the two ranked lists with its features, in first-seen order,
    and what the pool says about the query as a whole (`unheard`: its words no note holds).

    A section found by both keeps its dense row (its best window) with the better cosine and
    the keyword list's BM25 score.
    """
    prepared = Query.of(query)
    dense_ranks = {key(row): rank for rank, row in enumerate(dense, start=1)}
    keyword_ranks = {key(row): rank for rank, row in enumerate(keyword, start=1)}
    merged: dict[Any, Candidate] = {}
    for row in [*dense, *keyword]:
        k = key(row)
        if k not in merged:
            merged[k] = row.copy()
        else:
            merged[k]["cosine"] = max(merged[k]["cosine"], row["cosine"])
        if k in keyword_ranks and "bm25" in row:
            merged[k]["bm25"] = row["bm25"]
    # The best row of each note: a candidate's lead is over the best *other* note that is not
    # a copy of it (a vault's duplicated or versioned notes would otherwise erase each other's lead).
    by_note: dict[str, Candidate] = {}
    for row in merged.values():
        best = by_note.get(row["file_path"])
        if best is None or row["cosine"] > best["cosine"]:
            by_note[row["file_path"]] = row
    leaders = sorted(by_note.values(), key=lambda row: -row["cosine"])
    words: dict[int, frozenset[str]] = {}
    # A search for a name (pg_restore, EIP-4844): a section holding it as a whole word leads among
    # the notes that hold it too; one that lacks it is no rival, however close its meaning (an
    # identifier's words embed alike in every note on its topic). Alone in holding it, its lead
    # is at least nothing, so holding the name never lowers a score. A question that mentions a
    # name keeps every rival: there the meaning around the name decides (held out on SciFact,
    # this rule for every query cost 0.05 of silence on unanswerable claims).
    lowered = {k: _lowered(row) for k, row in merged.items()}
    # Only a search that asked BM25 can say what the vault lacks: it would have brought a note
    # holding a rare name (an empty keyword list says it most plainly). A dense list alone holds
    # the notes near in meaning, not in words.
    texts = [text for pair in lowered.values() for text in pair]
    absent = prepared.absent(texts) if keyword_searched else ()
    pool = QueryEvidence(baseline, _spread(leaders), absent, unheard)
    holding = {k for k in merged if prepared.lookup and any(map(prepared.holds_rare, lowered[k]))}
    holders = {merged[k]["file_path"] for k in holding}
    holding_leaders = [row for row in leaders if row["file_path"] in holders]
    out = []
    for k, row in merged.items():
        rival = _rival(row, leaders, words)
        if k in holding:
            among_holders = _rival(row, holding_leaders, words)
            if among_holders is not None:
                rival = among_holders
            elif rival is not None:
                rival = min(rival, row["cosine"])
        out.append(
            (
                row,
                features(
                    prepared,
                    row,
                    lowered[k],
                    dense_ranks.get(k),
                    keyword_ranks.get(k),
                    rival,
                    pool,
                ),
            )
        )
    return out, pool


def _spread(leaders: list[Candidate]) -> float:
    """The best note's cosine over the SPREAD_DEPTH-th note's (or the last's, in a smaller pool)."""
    if len(leaders) < 2:
        return 0.0
    return float(leaders[0]["cosine"]) - float(leaders[min(SPREAD_DEPTH, len(leaders)) - 1]["cosine"])


def _rival(row: Candidate, leaders: list[Candidate], cache: dict[int, frozenset[str]]) -> float | None:
    """The cosine of the closest other note among `leaders` (best first) that is not a copy of
    the row's, or None."""
    return next(
        (
            other["cosine"]
            for other in leaders
            if other["file_path"] != row["file_path"]
            # Only a note about as close to the query can be a copy (the same words embed
            # alike); the word comparison is paid for those alone.
            and (abs(other["cosine"] - row["cosine"]) > COPY_COSINE or not _copies(row, other, cache))
        ),
        None,
    )


def _lowered(row: Candidate) -> tuple[str, str]:
    text = str(row.get("section_text") or "").lower()
    parts = [str(row.get("title") or ""), *(row.get("aliases") or ()), str(row.get("heading_path") or "")]
    return text, "\n".join(parts).lower()


def _copies(a: Candidate, b: Candidate, cache: dict[int, frozenset[str]]) -> bool:
    """Whether two sections say nearly the same: most words of their openings shared (the
    opening bounds the cost; a copy or a lightly edited version shares it)."""

    def words(row: Candidate) -> frozenset[str]:
        if id(row) not in cache:
            opening = str(row.get("section_text") or "")[:COPY_OPENING].lower()
            cache[id(row)] = frozenset(opening.split())
        return cache[id(row)]

    x, y = words(a), words(b)
    return bool(x and y) and len(x & y) >= COPY_SHARE * len(x | y)


def _share(words: frozenset[str], lowered: str) -> float:
    """The share of the query's words found in the text. A substring test, not a tokenizer: it
    costs microseconds per section, and "restore" finding "restored" is the match wanted. A
    hyphen is no boundary for it: "wifi" is in "Wi-Fi", "email" in "e-mail", "setup" in "set-up"."""
    if not words:
        return 0.0
    joined = lowered.replace("-", "") if "-" in lowered else lowered
    return sum(word in lowered or word in joined for word in words) / len(words)

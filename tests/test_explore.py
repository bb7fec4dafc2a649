"""Beyond search, on real notes with the real model: similar notes, duplicates, links, gaps, confidence, context."""

from __future__ import annotations

import pytest

from mdrag.errors import NotFoundError, QueryError
from mdrag.retrieval import relevance
from mdrag.retrieval.confidence import confidence_level
from mdrag.retrieval.similarity import SIMILAR_FLOOR, duplicate_groups
from tests.conftest import write

SOURDOUGH = """---
tags: [baking]
---
# Sourdough bread

## Starter

Feed the starter with equal weights of flour and water every morning, and keep it
at room temperature until it doubles and smells pleasantly sour.

## Dough

Mix 500 g of bread flour, 350 g of water, 100 g of active starter and 10 g of salt.
Fold the dough four times during the first two hours of bulk fermentation.

## Baking

Bake in a preheated Dutch oven at 250 degrees for twenty minutes with the lid on,
then twenty more without it, until the crust is deep brown.
"""

OTHERS = {
    "bicycle.md": "# Bicycle maintenance\n\nLubricate the chain every 300 km and check tyre pressure weekly.\n"
    "Replace brake pads when the groove wears flat.\n",
    "tax.md": "# Tax return\n\nCollect payslips, bank interest statements and receipts for deductible\n"
    "donations before filing the annual tax return in April.\n",
    "guitar.md": "# Guitar practice\n\nPractise the F barre chord slowly; press close to the fret and\n"
    "roll the index finger slightly onto its bony side.\n",
}


@pytest.fixture()
def library(notes, make_service):
    write(notes / "sourdough.md", SOURDOUGH)
    # The same note copied elsewhere and lightly edited: a near-duplicate.
    edited = SOURDOUGH.replace("every morning", "each morning").replace("deep brown", "dark brown")
    write(notes / "archive" / "sourdough-copy.md", edited)
    for name, text in OTHERS.items():
        write(notes / name, text)
    write(
        notes / "kitchen.md",
        "# Kitchen\n\nMy bread recipe is in [[Sourdough|the sourdough note]], the list in [[Shopping]].\n"
        "Bike notes: [bicycle](bicycle.md#bicycle-maintenance).\n",
    )
    service = make_service([notes])
    service.reindex()
    return service


def test_a_copied_and_lightly_edited_note_is_a_near_duplicate_and_an_unrelated_one_is_not(library, notes):
    result = library.handle("similar", {"note": str(notes / "sourdough.md"), "k": 5})
    by_path = {r["path"]: r for r in result["results"]}
    copy = by_path[str(notes / "archive" / "sourdough-copy.md")]
    assert copy["score"] >= 90 and copy["tier"] == "near-duplicate"
    assert result["results"][0]["path"] == copy["path"]
    assert str(notes / "tax.md") not in by_path  # unrelated: under the floor, not a neighbour
    assert all(r["score"] >= SIMILAR_FLOOR for r in result["results"])
    assert str(notes / "sourdough.md") not in by_path  # never itself

    pairs = library.handle("duplicates", {"min_score": 90})
    assert pairs["total_pairs"] == 1
    assert [len(g["notes"]) for g in pairs["groups"]] == [2]
    assert {pairs["pairs"][0]["a"], pairs["pairs"][0]["b"]} == {
        str(notes / "sourdough.md"),
        str(notes / "archive" / "sourdough-copy.md"),
    }


def test_duplicate_pairs_join_into_groups_each_note_once():
    """A folder of near-identical stubs is one group to read, however many pairs it makes."""

    def pair(a, b, score):
        return {"a": a, "b": b, "score": score}

    stubs = [f"moved-{i}.md" for i in range(6)]
    pairs = [pair(a, b, 99) for n, a in enumerate(stubs) for b in stubs[n + 1 :]]  # 15 pairs
    pairs += [pair("x.md", "y.md", 93), pair("y.md", "z.md", 91), pair("p.md", "q.md", 95)]
    groups = duplicate_groups(pairs)
    assert [(g["notes"], g["best_score"], g["pairs"]) for g in groups] == [
        (sorted(stubs), 99, 15),
        (["p.md", "q.md"], 95, 1),
        (["x.md", "y.md", "z.md"], 93, 2),  # joined through y, though x and z are no pair
    ]
    assert duplicate_groups([]) == []


def test_a_draft_is_checked_against_the_notes_before_it_is_saved(library, notes):
    draft = SOURDOUGH.replace("Sourdough bread", "My sourdough")
    result = library.handle("similar", {"text": draft, "k": 3})
    assert result["note"] is None
    assert result["results"][0]["score"] >= 90
    assert result["results"][0]["path"] in {
        str(notes / "sourdough.md"),
        str(notes / "archive" / "sourdough-copy.md"),
    }
    with pytest.raises(NotFoundError, match="not an indexed note"):
        library.handle("similar", {"note": str(notes / "not-there.md")})


def test_a_wikilink_and_its_backlink_both_appear_in_related_and_broken_links_are_flagged(library, notes):
    kitchen = library.handle("related", {"note": str(notes / "kitchen.md")})
    relations = {item["path"]: item["relations"] for item in kitchen["related"]}
    assert "links to" in relations[str(notes / "sourdough.md")]
    assert "links to" in relations[str(notes / "bicycle.md")]
    assert [link["target"] for link in kitchen["broken_links"]] == ["Shopping"]
    alias = next(link for link in kitchen["outgoing"] if link["target"] == "Sourdough")
    assert alias["alias"] == "the sourdough note" and alias["path"] == str(notes / "sourdough.md")

    sourdough = library.handle("related", {"note": str(notes / "sourdough.md")})
    relations = {item["path"]: item["relations"] for item in sourdough["related"]}
    assert "linked from" in relations[str(notes / "kitchen.md")]
    assert relations[str(notes / "archive" / "sourdough-copy.md")] == ["similar"]


def test_an_unanswered_query_is_recorded_once_with_its_count_and_survives_a_rebuild(library, notes):
    for _ in range(3):
        assert library.search({"query": "how to renew my passport abroad"})["results"] == []
    # Answered: not a gap. (Not a bicycle question: that note's one paragraph is about three
    # things, so a question about its brake pads is far from it in meaning, cosine 0.21, and the
    # answer decision leaves it under 0.7 though the note holds every word.)
    assert library.search({"query": "what do I need before filing my tax return"})["results"]
    # Narrowed or stricter-than-usual searches that find nothing are not gaps in the notes.
    library.search({"query": "bicycle chain", "tags": ["no-such-tag"]})
    library.search({"query": "bicycle chain", "threshold": 0.99})
    # Nor is a query with no word in any script: a slip of the keyboard, not a question.
    for slip in ("?", "*", "--", "\U0001f600", "\u200b"):
        assert library.search({"query": slip})["results"] == []
    gaps = library.handle("gaps", {})["gaps"]
    assert [(g["query"], g["count"], g["status"]) for g in gaps] == [
        ("how to renew my passport abroad", 3, "open")
    ]

    library.reindex(rebuild=True)
    assert library.handle("gaps", {"status": "open"})["gaps"][0]["count"] == 3

    resolved = library.handle("gap_status", {"query": "How to renew  my passport abroad"})
    assert resolved["status"] == "addressed"
    assert library.handle("gaps", {"status": "open"})["gaps"] == []
    with pytest.raises(NotFoundError, match="no recorded gap"):
        library.handle("gap_status", {"query": "never asked"})


def test_a_note_added_later_that_answers_a_gap_marks_it_possibly_addressed(library, notes):
    library.search({"query": "renewing a passport while living abroad"})
    note = write(
        notes / "passport.md",
        "# Renewing a passport abroad\n\nTo renew a passport while living abroad, book an appointment "
        "at the embassy and bring the old passport and two photos.\n",
    )
    library.reindex([str(note)])
    gap = library.handle("gaps", {})["gaps"][0]
    assert gap["possibly_addressed_by"] == str(note)
    assert library.handle("status", {})["open_gaps"] == 1


def test_related_lists_the_backlinks_of_a_note_with_no_text(library, notes):
    empty = write(notes / "empty.md", "---\ntitle: Empty\n---\n")
    write(notes / "pointer.md", "# Pointer\n\nSee [[empty]], ![[diagram.png]] and [the pdf](files/a.pdf).\n")
    library.reindex()
    assert [b["path"] for b in library.handle("related", {"note": str(empty)})["backlinks"]] == [
        str(notes / "pointer.md")
    ]
    pointer = library.handle("related", {"note": str(notes / "pointer.md")})
    assert pointer["broken_links"] == []  # attachments are not notes, so never broken links


def test_bad_requests_get_clear_errors(library, notes):
    for op, params in [
        ("similar", {"note": "a\0.md"}),
        ("similar", {"text": "\ud800 draft"}),
        ("similar", {"note": 42}),
        ("similar", {"text": "x" * 100_001}),
        ("duplicates", {"min_score": 10}),
        ("context", {"query": "bread", "max_tokens": 10}),
        ("gap_status", {"query": "bread", "status": "done"}),
        ("gaps", {"status": "closed"}),
        ("search", {"query": "\ud800"}),
    ]:
        with pytest.raises(QueryError):
            library.handle(op, params)
    with pytest.raises(NotFoundError, match="not an indexed note"):  # well-formed, names no note
        library.handle("related", {"note": str(notes / "missing.md")})


def test_every_hit_cites_its_source_with_lines_heading_path_and_a_github_anchor(library, notes):
    response = library.search({"query": "how long to bake bread in a dutch oven", "threshold": 0.3})
    hit = next(h for h in response["results"] if h["file_path"] == str(notes / "sourdough.md"))
    source = hit["source"]
    assert source["anchor"] == f"{notes / 'sourdough.md'}#baking"
    assert source["heading_path"] == "Sourdough bread > Baking"
    lines = SOURDOUGH.splitlines()
    assert lines[source["start_line"] - 1] == "## Baking"
    assert source["end_line"] >= source["start_line"]
    assert response["confidence"]["level"] == confidence_level(
        response["confidence"]["best_score"], len(response["results"])
    )


@pytest.mark.parametrize(
    ("best", "hits", "level"),
    [
        (0.90, 1, "high"),
        (0.8999, 5, "medium"),
        (0.70, 1, "medium"),
        (0.6999, 3, "low"),
        (0.50, 1, "low"),
        (0.4999, 2, "none"),
        (0.95, 0, "none"),
        (None, 0, "none"),
    ],
)
def test_confidence_levels_follow_their_boundaries(best, hits, level):
    assert confidence_level(best, hits) == level


def test_a_query_nothing_answers_says_so(library):
    response = library.search({"query": "quantum chromodynamics lattice gauge theory"})
    assert response["results"] == []
    assert response["confidence"] == {
        "level": "none",
        "best_score": None,
        "hits": 0,
        "outcome": "none",
        "reason": "no note mentions quantum, chromodynamics, lattice, gauge or theory",
    }
    assert response["message"].startswith("no confident answer in your notes")


def test_a_search_returning_hits_between_half_and_the_usual_bar_is_low(library):
    response = library.search({"query": "bread", "threshold": 0.3})
    best = response["confidence"]["best_score"]
    assert best == max(h["confidence_score"] for h in response["results"])
    assert response["confidence"]["level"] == confidence_level(best, len(response["results"]))


def test_explain_gives_ranks_per_hit_and_lists_what_the_threshold_dropped(library):
    response = library.search({"query": "sourdough starter feeding", "explain": True, "threshold": 0.6})
    assert response["results"]
    for hit in response["results"]:
        assert hit["explain"]["similarity"] == hit["similarity"]
        assert hit["explain"]["score"] == hit["confidence_score"]
        assert hit["explain"]["score_rank"] >= 1
        assert set(hit["explain"]["evidence"]) == set(relevance.FEATURES)
    dropped = response["explain"]["dropped_by_threshold"]
    assert dropped and all(c["score"] < 0.6 for c in dropped)
    # Each names its section's lines, so that a note's sections are told apart.
    assert all(1 <= c["start_line"] <= c["end_line"] for c in dropped)


def test_every_piece_of_evidence_explain_shows_is_said_in_words():
    from mdrag.retrieval.confidence import EVIDENCE_WORDS

    named = {name.strip() for line in EVIDENCE_WORDS for name in line.partition(":")[0].split(",")}
    shown = {f"1/{f}" if f.endswith("_rank") else f for f in relevance.FEATURES}
    assert named == shown


def test_a_selected_passage_finds_the_notes_it_relates_to(library, notes):
    passage = "Before filing, I gather all the payslips and the receipts for charitable donations."
    response = library.search({"selection": passage, "threshold": 0.3})
    assert response["results"][0]["file_path"] == str(notes / "tax.md")
    with pytest.raises(QueryError):
        library.search({"selection": "too short"})
    assert library.handle("gaps", {})["gaps"] == []  # passages are not recorded as gaps


def test_context_packs_the_best_sections_within_budget_once_each_with_citations(library, notes, embedder):
    pack = library.handle("context", {"query": "how do I bake sourdough bread", "max_tokens": 150})
    assert pack["sources"] and pack["tokens"] <= 150
    assert embedder.count_tokens([pack["context"]])[0] <= 150
    assert pack["context"].startswith("[1] ")
    assert f"{notes}" in pack["context"]
    # The copy repeats the original's sections word for word: they go in once.
    texts = [s["heading_path"] for s in pack["sources"]]
    assert len(texts) == len(set(texts)) or len(pack["sources"]) == 1
    big = library.handle("context", {"query": "how do I bake sourdough bread", "max_tokens": 5000})
    assert big["tokens"] <= 5000 and len(big["sources"]) >= len(pack["sources"])


def test_the_gap_log_keeps_the_gaps_asked_most_recently_up_to_its_cap(tmp_path, monkeypatch):
    from mdrag.retrieval import gaps

    monkeypatch.setattr(gaps, "MAX_GAPS", 3)
    log = gaps.GapLog(tmp_path / "gaps.sqlite")
    for query in ("first", "second", "third", "first", "fourth", "fifth"):
        log.record(query, None, None)  # "first", asked again, is then more recent than "second"
    assert {e["query"]: e["count"] for e in log.entries()} == {"first": 2, "fourth": 1, "fifth": 1}
    log.close()


def test_the_gap_log_writes_in_the_background_yet_every_read_and_close_sees_each_record(tmp_path):
    import numpy as np

    from mdrag.retrieval.gaps import GapLog

    log = GapLog(tmp_path / "gaps.sqlite")
    for _ in range(3):
        log.record("how do I water cacti", 0.41, np.ones(4, dtype=np.float32))
    assert log.entries()[0]["count"] == 3  # the read waited for the three writes before it
    log.record("a second question", None, None)
    log.close()  # writes what is pending
    assert {e["query"] for e in GapLog(tmp_path / "gaps.sqlite").entries()} == {
        "how do I water cacti",
        "a second question",
    }


def test_explain_in_a_terminal_tells_a_notes_sections_apart_and_says_its_evidence_in_words(capsys):
    from mdrag.cli.render import hits
    from mdrag.client.paths import Paths
    from mdrag.retrieval.confidence import EVIDENCE_WORDS

    ranks = {"similarity": 0.4, "score": 0.3, "evidence": {}, "dense_rank": 2, "keyword_rank": None}
    dropped = [
        {
            "file_path": "/n/guide.md",
            "section_id": s,
            "start_line": a,
            "end_line": b,
            "heading_path": h,
            "score_rank": r,
            **ranks,
        }
        for s, a, b, h, r in (("a", 1, 4, "Guide", 2), ("b", 5, 9, "Guide > Steps", 3))
    ]
    response = {
        "results": [],
        "related": [],
        "closest": [],
        "message": "",
        "query": "q",
        "explain": {"mode": "hybrid", "threshold": 0.7, "candidates": 2, "dropped_by_threshold": dropped},
    }
    hits(response, Paths(["/n"]))
    out = capsys.readouterr().out
    assert "n/guide.md:1-4  Guide  (score rank 2)" in out
    assert "n/guide.md:5-9  Guide > Steps  (score rank 3)" in out
    assert all(words in out for words in EVIDENCE_WORDS)


def test_a_path_under_no_root_is_said_with_the_roots_a_path_starts_with(capsys, tmp_path):
    from mdrag.cli.render import hits
    from mdrag.client.paths import Paths

    notes = tmp_path / "notes"
    (notes / "runbooks").mkdir(parents=True)
    base = {"results": [], "related": [], "closest": [], "query": "q"}
    for prefix, hinted in ((tmp_path / "runbooks", True), (notes / "runbooks", False)):
        message = f"no confident answer in your notes: no note is under {prefix}"
        hits(
            {**base, "message": message, "search_parameters": {"path_prefix": str(prefix)}},
            Paths([str(notes)]),
        )
        out = capsys.readouterr().out
        assert ("a --path starts with a root's name: notes)" in out) == hinted

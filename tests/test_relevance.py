"""The relevance score: monotone in its evidence, in [0, 1], and reading the evidence it claims to."""

from __future__ import annotations

import math
import random

import pytest

from mdrag.retrieval import relevance
from mdrag.retrieval.query import Query, keyword_query

MODES = tuple(relevance.ORDER)


def _row(path: str, cosine: float, text: str = "", title: str = "", bm25: float | None = None) -> dict:
    row = {
        "file_path": path,
        "section_id": "s",
        "start_position": 0,
        "cosine": cosine,
        "section_text": text,
        "title": title,
        "heading_path": title,
    }
    if bm25 is not None:
        row["bm25"] = bm25
    return row


def _key(row: dict) -> tuple:
    return (row["file_path"], row["section_id"], row["start_position"])


@pytest.mark.parametrize("mode", MODES)
def test_every_weight_is_non_negative_so_more_evidence_never_lowers_the_score(mode):
    _, order = relevance.ORDER[mode]
    assert len(order) == len(relevance.FEATURES)
    assert all(w >= 0 for w in order)
    decision = relevance.DECISION[mode]
    assert set(decision) == {"bias", "order", *relevance.DECISION_FEATURES}
    assert all(decision[name] >= 0 for name in ("order", *relevance.DECISION_FEATURES))


@pytest.mark.parametrize("mode", MODES)
def test_raising_any_one_feature_of_a_lone_candidate_never_lowers_its_score(mode):
    rng = random.Random(7)
    for _ in range(300):
        values = [rng.random() for _ in relevance.FEATURES]
        (base,) = relevance.scores([values], mode)
        assert 0.0 <= base <= 1.0
        for i in range(len(values)):
            raised = list(values)
            raised[i] += rng.random()
            assert relevance.scores([raised], mode)[0] >= base


@pytest.mark.parametrize("mode", MODES)
def test_the_scores_keep_the_orders_ranking_and_the_first_scores_the_answer(mode):
    rng = random.Random(11)
    for _ in range(200):
        pool = [[rng.random() for _ in relevance.FEATURES] for _ in range(rng.randint(1, 8))]
        given = relevance.scores(pool, mode)
        order = [relevance.order_logit(values, mode) for values in pool]
        assert sorted(range(len(pool)), key=lambda i: -given[i]) == sorted(
            range(len(pool)), key=lambda i: -order[i]
        )
        first = max(range(len(pool)), key=order.__getitem__)
        answer = relevance.answer_logit(pool[first], mode)
        assert given[first] == pytest.approx(1.0 / (1.0 + math.exp(-answer)))
    assert relevance.scores([], mode) == []


def test_a_query_naming_what_no_note_holds_or_with_a_word_no_note_holds_scores_lower():
    values = [0.5] * len(relevance.FEATURES)
    for mode in MODES:
        (free,) = relevance.scores([values], mode)
        for feature in ("named", "vault_words"):
            if relevance.weighs(feature, mode):
                marked = list(values)
                marked[relevance.FEATURES.index(feature)] = 0.0
                assert relevance.scores([marked], mode)[0] < free


def test_a_note_holding_the_rare_term_asked_for_counts_it_and_one_without_does_not():
    scored, _pool = relevance.score_candidates(
        "how do I use pg_restore",
        [],
        [
            _row("a.md", 0.3, "Restore a dump with pg_restore into an empty database.", bm25=5.0),
            _row("b.md", 0.4, "Restoring a backup is easy.", bm25=1.0),
        ],
        _key,
    )
    rare = relevance.FEATURES.index("rare")
    by_path = {row["file_path"]: values for row, values in scored}
    assert by_path["a.md"][rare] == 1.0
    assert by_path["b.md"][rare] == 0.0


# The class of "the term is there, inside a longer identifier": separators of every kind, before
# and after, and the punctuation around a whole term that must not hide it.
@pytest.mark.parametrize(
    ("term", "text", "holds"),
    [
        ("pg_restore", "Run pg_restore.", True),
        ("pg_restore", "`pg_restore` -d db", True),
        ("pg_restore", "(pg_restore, pg_dump)", True),
        ("pg_restore", "my_pg_restore script", False),
        ("pg_restore", "pg_restore_all", False),
        ("pg_restore", "pg_restore2", False),
        ("POINT_EVALUATION_PRECOMPILE_ADDRESS", "| `POINT_EVALUATION_PRECOMPILE_ADDRESS` |", True),
        ("POINT_EVALUATION_PRECOMPILE_ADDRESS", "| `MULTI_POINT_EVALUATION_PRECOMPILE_ADDRESS` |", False),
        ("EIP-1559", "see [EIP-1559](./eip-1559.md)", True),
        ("EIP-1559", "EIP-15590 replaces it", False),
        ("EIP-1559", "pre-EIP-1559 blocks", False),
        ("Get-ChildItem", "Get-ChildItem -Recurse", True),
        ("Get-ChildItem", "Get-ChildItemColor", False),
        ("Get-ChildItem", "Get-ChildItem-Like", False),
        ("path.join", "os.path.join(a, b)", True),
        ("ps1", "run script.ps1 from cmd.exe", True),
        ("ps1", "the ps10 series", False),
        ("v2.5", "upgrade to v2.5.", True),
        ("v2.5", "upgrade to v2.5.1", False),
        ("dry-run", "pass --dry-run first", True),
    ],
)
def test_a_rare_term_counts_only_as_a_whole_identifier(term, text, holds):
    query = Query.of(term)
    assert query.rare == (term.lower(),)
    assert query.holds_rare(text.lower()) is holds


def test_a_note_lacking_the_rare_term_is_no_rival_to_one_holding_it():
    """The note that holds the exact identifier asked for leads the notes that merely share its
    words (whose meaning is closer), so a keyword search for it finds it first and keeps it."""
    term = "POINT_EVALUATION_PRECOMPILE_ADDRESS"
    holder = _row("4844.md", 0.24, f"| `{term}` | `Bytes20(0x0A)` |", bm25=2.9)
    longer = _row("8149.md", 0.46, f"| `MULTI_{term}` | `TBD` | precompile address |", bm25=3.1)
    near = _row("8096.md", 0.54, "the point evaluation precompile is underpriced", bm25=3.0)
    scored, _pool = relevance.score_candidates(term, [], [longer, near, holder], _key)
    margin, rare = relevance.FEATURES.index("margin"), relevance.FEATURES.index("rare")
    by_path = {row["file_path"]: values for row, values in scored}
    assert by_path["4844.md"][rare] == 1.0 and by_path["8149.md"][rare] == 0.0
    assert by_path["4844.md"][margin] == 0.0  # alone in holding it: no lead lost to 8096's cosine
    assert by_path["8149.md"][margin] < 0
    paths = list(by_path)
    score = dict(zip(paths, relevance.scores([by_path[p] for p in paths], "keyword"), strict=True))
    assert max(score, key=score.__getitem__) == "4844.md"


def test_holding_the_rare_term_never_lowers_a_candidates_lead():
    # Alone among holders and ahead of every other note: its lead stays what it was.
    term = "pg_restore"
    holder = _row("a.md", 0.7, f"run {term} now", bm25=2.0)
    scored, _pool = relevance.score_candidates(term, [holder, _row("b.md", 0.6, "backups")], [], _key)
    margin = relevance.FEATURES.index("margin")
    assert {row["file_path"]: values[margin] for row, values in scored}["a.md"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("query", "rare"),
    [
        ("pg_restore options", ("pg_restore",)),
        ("what does Get-ChildItem -Recurse do", ("get-childitem",)),
        ("EIP-1559 base fee", ("eip-1559",)),
        ("how do I bake bread", ()),
        ("Why does my script fail?", ()),
    ],
)
def test_identifier_shaped_query_terms_are_the_rare_ones(query, rare):
    assert Query.of(query).rare == rare


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("how do I put the output of a command onto the clipboard?", "output command onto clipboard"),
        ("what does Get-ChildItem -Recurse do", "Get-ChildItem Recurse"),
        ("pg_restore", "pg_restore"),
        ("EIP-1559 base fee: who gets it?", "EIP-1559 base fee gets"),
        ("how do I", "how do I"),  # filler only: asked as it is
        ("", ""),
        # a run of a script written without spaces, whole: the keyword index asks its pairs
        ("如何创建存档", "如何创建存档"),
        ("tar命令", "tar 命令"),
        ("ไฟล์ python", "ไฟล์ python"),  # a Thai sign stays on its letter (\w would cut it off)
    ],
)
def test_the_keyword_search_is_asked_the_query_without_its_question_words(query, asked):
    assert keyword_query(query) == asked


def test_a_section_found_by_both_lists_appears_once_with_both_ranks_and_its_best_cosine():
    dense = [_row("a.md", 0.6), _row("b.md", 0.5)]
    keyword = [_row("b.md", 0.55, bm25=7.0), _row("a.md", 0.58, bm25=2.0)]
    scored, _pool = relevance.score_candidates("anything", dense, keyword, _key)
    assert [row["file_path"] for row, _ in scored] == ["a.md", "b.md"]
    names = relevance.FEATURES
    a, b = (dict(zip(names, values, strict=True)) for _, values in scored)
    assert a["dense_rank"] == 1.0 and a["keyword_rank"] == 0.5 and a["agree"] == 1.0
    assert b["dense_rank"] == 0.5 and b["keyword_rank"] == 1.0
    assert scored[1][0]["cosine"] == 0.55  # the keyword window matched better than the dense one
    assert b["bm25"] > a["bm25"] > 0


def test_the_lead_over_the_next_note_is_positive_for_the_best_note_only():
    dense = [_row("a.md", 0.70), _row("a.md", 0.65) | {"section_id": "t"}, _row("b.md", 0.60)]
    scored, _pool = relevance.score_candidates("anything", dense, [], _key)
    margin = relevance.FEATURES.index("margin")
    leads = [(row["file_path"], round(values[margin], 4)) for row, values in scored]
    # Sections of the same note do not compete with each other: both of a.md's lead b.md.
    assert leads == [("a.md", 0.1), ("a.md", 0.05), ("b.md", -0.1)]


@pytest.mark.parametrize("copies", [1, 2, 3])
def test_a_note_keeps_its_lead_over_copies_of_itself(copies):
    text = "Feed the sourdough starter twice a day with equal weights of flour and water."
    dense = [_row(f"copy{i}.md", 0.70 - i * 0.001, text) for i in range(copies + 1)]
    dense.append(_row("other.md", 0.55, "Proof the dough overnight in the fridge."))
    scored, _pool = relevance.score_candidates("feeding the sourdough starter", dense, [], _key)
    margin = relevance.FEATURES.index("margin")
    leads = {row["file_path"]: values[margin] for row, values in scored}
    # Every copy leads the first different note; none is penalised for the others.
    assert all(leads[f"copy{i}.md"] > 0.14 for i in range(copies + 1))
    assert leads["other.md"] < 0


def test_query_words_in_the_title_and_text_count_as_shares():
    scored, _pool = relevance.score_candidates(
        "baking sourdough bread",
        [_row("a.md", 0.5, "Bake the bread at 250 degrees.", title="Sourdough bread")],
        [],
        _key,
    )
    values = dict(zip(relevance.FEATURES, scored[0][1], strict=True))
    assert values["title"] == pytest.approx(2 / 3)
    assert values["coverage"] == pytest.approx(1 / 3)


def test_in_a_script_written_without_spaces_the_share_counts_pairs_of_characters():
    """A question that runs its words together shares with a note the pairs of characters both
    hold side by side: here 创建 and 存档 of 如何 何创 创建 建存 存档."""
    scored, _pool = relevance.score_candidates(
        "如何创建存档", [_row("a.md", 0.5, "创建一个存档并写入文件", title="tar")], [], _key
    )
    values = dict(zip(relevance.FEATURES, scored[0][1], strict=True))
    assert values["coverage"] == pytest.approx(2 / 5)


@pytest.mark.parametrize(
    ("query", "lookup"),
    [
        ("pg_restore", True),
        ("POINT_EVALUATION_PRECOMPILE_ADDRESS", True),
        ("EIP-4844", True),
        ("Get-ChildItem", True),
        ("what is pg_restore", True),  # question words only around the name
        ("pg_restore options", False),
        ("why does Get-Content fail on a missing file", False),
        ("how do I bake bread", False),
    ],
)
def test_a_search_for_a_name_alone_is_a_lookup(query, lookup):
    assert Query.of(query).lookup is lookup


def test_a_question_mentioning_a_name_keeps_every_rival():
    holder = _row("a.md", 0.3, "run pg_restore now", bm25=2.0)
    closer = _row("b.md", 0.5, "restoring backups in general", bm25=1.0)
    scored, _pool = relevance.score_candidates(
        "which options does pg_restore take", [], [holder, closer], _key
    )
    margin = relevance.FEATURES.index("margin")
    assert {row["file_path"]: values[margin] for row, values in scored}["a.md"] == pytest.approx(-0.15)


def test_a_notes_aliases_count_as_its_title_words():
    scored, _ = relevance.score_candidates(
        "vaillant boiler",
        [{**_row("b.md", 0.5, "Bleed the radiators.", title="Boiler"), "aliases": ["Vaillant ecoTEC"]}],
        [],
        _key,
    )
    assert scored[0][1][relevance.FEATURES.index("title")] == 1.0

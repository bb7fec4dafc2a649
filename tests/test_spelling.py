"""Spelling: a word no note holds, read as the held word one typing slip away, never a short name."""

from __future__ import annotations

import pytest

from mdrag.spelling import MIN_LETTERS, corrected, meant, said

HELD = {
    "minify": 3,
    "blur": 5,
    "withdrawal": 9,
    "certificate": 4,
    "look": 100,
    "limit": 9,
    "mirror": 2,
    "minor": 7,
}


def holding(word: str) -> int:
    return HELD.get(word, 0)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("minfy", "minify"),  # a letter dropped
        ("blurr", "blur"),  # a letter added
        ("certifcate", "certificate"),
        ("withdrawl", "withdrawal"),
        ("lmiti", None),  # two slips: too far
        ("limti", "limit"),  # two letters swapped
        ("mirrer", "mirror"),  # a letter changed
    ],
)
def test_one_slip_of_any_kind_is_read_as_the_held_word(typed, meant):
    assert corrected(typed, holding) == meant


def test_the_held_word_most_notes_hold_wins_and_ties_go_alphabetically():
    assert corrected("minoe", lambda w: {"minor": 7, "minke": 7, "mince": 2}.get(w, 0)) == "minke"
    assert corrected("minoe", lambda w: {"minor": 8, "mined": 7}.get(w, 0)) == "minor"


@pytest.mark.parametrize("word", ["loki", "bun", "Minfy", "mïnfy", "min4y", "x" * (MIN_LETTERS - 1)])
def test_a_short_word_a_held_word_or_no_plain_lower_case_word_is_never_corrected(word):
    assert corrected(word, lambda w: 0 if w == word else 5) is None


def test_a_word_some_note_holds_is_never_corrected_though_another_is_held_more():
    assert corrected("minor", lambda w: {"minor": 1, "manor": 50}.get(w, 0)) is None


FOUND = [
    "restore the database from last night's backup",
    "# Restore the database\nthe database dump, then pg_restore",
    "a dataset is not a database",
]


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("databse", "database"),  # a letter dropped
        ("dattabase", "database"),  # one added
        ("databasw", "database"),  # one changed
        ("datbaase", "database"),  # two swapped
        ("bakcup", "backup"),
        ("restroe", "restore"),
        ("dtaaset", "dataset"),
    ],
)
def test_a_typed_word_is_taken_as_the_word_one_slip_away_that_the_found_sections_say(typed, suggested):
    assert meant(typed, said(FOUND)) == suggested


def test_nothing_is_suggested_for_a_short_or_unmatched_word_or_from_inside_a_longer_one():
    assert meant("dump", said(["the dumps"])) is None  # under MIN_LETTERS: a name, not a typo
    assert meant("kubernetes", said(FOUND)) is None  # nothing found is one slip from it
    assert meant("estore", said(["restored"])) is None  # "restore" is only part of a word there
    assert meant("Databse", said(FOUND)) is None  # only the lower-case words a query is read as
    # A word of another script is one word, never its ASCII tail ("bersetzung", "clair").
    assert meant("ubersetzung", said(["die übersetzung der datei"])) is None
    assert meant("eclair", said(["un éclair"])) is None


def test_the_word_the_sections_say_most_often_is_suggested_ties_alphabetically():
    assert meant("fable", said(["table", "cable", "table"])) == "table"
    assert meant("fable", said(["table", "cable"])) == "cable"

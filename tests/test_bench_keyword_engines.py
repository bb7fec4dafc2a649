"""bench.keyword_engines: each engine is asked the daemon's keyword query the same way (stems, names kept whole)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.keyword_engines import ENGINES, notes_of

ROWS = [
    ("a.md", "Restore a database\nStop the application, then run pg_restore on last night's dump."),
    ("b.md", "Get-ChildItem\nGets the items and child items in one or more specified locations."),
    ("c.md", "Get the child of an item\nA child item is an item inside a container: get it by name."),
    ("d.md", "Sourdough\nFeed the starter the night before you bake."),
]


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
def test_an_engine_finds_stems_and_whole_names(engine: type, tmp_path: Path) -> None:
    made = engine(ROWS, 2, tmp_path)
    # "restoring databases" reaches "Restore a database" through the stemmer; the copy ranks too.
    assert set(made.search("how do I go about restoring databases?", 10)) == {"a.md", "copy-1/a.md"}
    # A name of several tokens is a phrase: Get-ChildItem matches b.md, not every note with "get".
    assert set(made.search("what does Get-ChildItem do", 10)) == {"b.md", "copy-1/b.md"}
    assert not made.search("kubernetes", 10)
    # Words that are query syntax to an engine are words: none raises, none matches all.
    assert not made.search('kubernetes "unclosed (pods) title:x -y +z * ^2 ~', 10)
    # A question of filler words only is asked as typed: its AND, OR and NOT are words, and it
    # finds the notes that hold them (b.md has "and"), raising no syntax error.
    assert {"b.md", "copy-1/b.md"} <= set(made.search("AND OR NOT", 10))


def test_notes_of_keeps_each_note_at_its_best_row() -> None:
    ids = {"a.md": "A", "b.md": "B", "a2.md": "A"}
    assert notes_of(["b.md", "a.md", "x.md", "a2.md"], ids) == ["B", "A"]

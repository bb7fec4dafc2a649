"""Snippets: the matched window of a hit, the query's words marked in it, cut to one line."""

from __future__ import annotations

import re

import pytest

from mdrag.retrieval.excerpt import excerpt, render, shown_mark
from mdrag.retrieval.snippets import highlights, query_terms, snippet, window_text

SECTION = "## Restore\n\nFirst part about something else entirely.\n\nUse pg_restore to restore a backup.\n"


def marked(text: str, query: str) -> list[str]:
    return [text[a:b] for a, b in highlights(text, query_terms(query))]


def row(**values):
    text = SECTION
    base = {"section_text": text, "start_position": 100, "start_line": 10}
    return {**base, **values}


def test_query_terms_leave_out_common_words_and_keep_each_root_once():
    assert query_terms("How do I restore the backups? Restoring BACKUP") == ["restor", "backup"]
    assert query_terms("what is it") == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("restore backups", ["restore", "Restoring", "backup", "BACKUPS", "restore"]),
        ("pg_restore", ["restore", "Restoring", "pg", "restore"]),  # a name's parts are words
        ("configuration", ["configured"]),
        # "get" and "go" are stop words for the score and the keyword search alike (words.py), so
        # not marks either (asked whole, Get-Item is an identifier, marked whole: see below)
        ("Get-Item", ["Item", "Items"]),
        ("go", []),
        ("ago", ["ago"]),  # a short word is marked only where it stands alone
    ],
)
def test_the_query_words_are_marked_in_their_forms_and_cases(query, expected):
    text = "restore a backup. Restoring BACKUPS: pg_restore; Get-Item lists Items; go, good, ago; configured"
    assert sorted(marked(text, query)) == sorted(expected)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("note", ["note", "notes", "noted", "notebook"]),  # not "not", "nothing", "notable"
        ("notes", ["note", "notes", "noted", "notebook"]),
        ("theme", ["theme", "themes"]),  # not "them"
        ("code", ["code", "codes"]),  # not "cod"
        ("time", ["time", "times"]),  # not "Tim"
        ("restores", ["restore", "restored", "restoring"]),
        ("matches", ["match", "matches"]),
        ("classes", ["class", "classes"]),
    ],
)
def test_a_root_too_short_to_stand_for_its_word_marks_no_other_word(query, expected):
    """Dropping an ending can leave a root that is another word ("note" less "e" is "not"): such
    a word, and those it begins, are not the query's."""
    text = (
        "not nothing notable note notes noted notebook; them theme themes; cod code codes; Tim time "
        "times; restore restored restoring; match matches; class classes"
    )
    assert sorted(marked(text, query)) == sorted(expected)


def test_in_a_script_written_without_spaces_each_pair_asked_is_marked_where_it_stands():
    """Its runs hold many words: a query's pair of characters is marked inside a run, and pairs
    that overlap are one mark."""
    text = "- 创建存档并将其写入文件：tar cf 存档.tar; 档案"
    assert marked(text, "如何创建存档 tar") == ["创建存档", "tar", "存档", "tar"]


def test_the_snippet_is_the_window_that_matched_not_the_sections_start():
    start = SECTION.index("Use pg_restore")
    hit = row(window_start=100 + start, window_end=100 + len(SECTION) - 1)
    shown = snippet(hit, "restore")
    assert shown["text"] == "Use pg_restore to restore a backup."
    assert shown["start_line"] == 14 and shown["end_line"] == 14
    assert [shown["text"][a:b] for a, b in shown["highlights"]] == ["restore", "restore"]


@pytest.mark.parametrize(
    "place",
    [
        {},  # an index from before windows had places
        {"window_start": None, "window_end": None},
        {"window_start": 90, "window_end": 120},  # outside the section: not trusted
        {"window_start": 150, "window_end": 120},
    ],
)
def test_without_a_trustworthy_window_place_the_snippet_is_the_section_under_its_heading(place):
    text, offset = window_text(row(**place))
    assert text == SECTION.partition("\n")[2]
    assert offset == 100 + SECTION.index("\n") + 1


def test_a_passage_query_marks_nothing():
    assert snippet(row(), "")["highlights"] == []


def test_an_excerpt_starts_at_the_windows_start_when_that_holds_as_many_query_words():
    text = "restore backup " + "x " * 50 + "restore backup " + "y " * 100
    cut, _ = excerpt(text, highlights(text, query_terms("restore backup")), width=60)
    assert cut.startswith("restore backup x")


def test_a_short_text_is_shown_whole_on_one_line():
    text, spans = excerpt("a  restore\n\n  b", [(3, 10)])
    assert text == "a restore b"
    assert text[spans[0][0] : spans[0][1]] == "restore"


def test_a_long_window_is_cut_around_its_marked_words_and_the_marks_follow():
    filler = " ".join(f"word{i}" for i in range(200))
    text = f"{filler} the restore of a backup needs {filler}"
    spans = highlights(text, query_terms("restore backup"))
    cut, moved = excerpt(text, spans, width=80)
    assert len(cut) <= 80 + 4 and cut.startswith("… ") and cut.endswith(" …")
    assert [cut[a:b] for a, b in moved] == ["restore", "backup"]


@pytest.mark.parametrize(
    ("before", "begins"),
    [
        ('{{% include "/_common/' + "x" * 250 + '.md" %}}\n\n', "… The Resize"),  # a shortcode's tail
        ("| " + " | ".join(["cell"] * 60) + " |\n", "… The Resize"),  # a table row's
        ("# " + "heading words " * 20 + "\n", "… The Resize"),
        ("- " + "item words " * 25 + "\n- ", "… - The Resize"),  # the list item's own marker
        ("word " * 100 + "\nwrapped ", "… wrapped The Resize"),  # a paragraph's wrapped line
    ],
)
def test_an_excerpt_begins_where_a_line_begins_before_its_marks_not_in_the_last_ones_tail(before, begins):
    text = before + "The `Resize` method returns a new resource. " + "More words about images. " * 12
    spans = highlights(text, query_terms("resize method"))
    cut, moved = excerpt(text, spans)
    assert cut.startswith(begins), cut
    assert [cut[a:b] for a, b in moved] == ["Resize", "method"]
    assert text[shown_mark(text, spans) :].startswith("Resize")


def test_an_excerpt_cut_at_a_word_keeps_the_mark_it_was_placed_for():
    text = "b" * 233 + " Resize " + "c " * 100  # the last space before the width falls after it
    spans = [(234, 240)]
    cut, moved = excerpt(text, spans)
    assert [cut[a:b] for a, b in moved] == ["Resize"]
    assert shown_mark(text, spans) == 234


def test_the_excerpt_holds_the_most_distinct_query_words():
    text = "restore " + "x " * 100 + "restore backup checksum " + "y " * 100
    spans = highlights(text, query_terms("restore backup checksum"))
    cut, moved = excerpt(text, spans, width=60)
    assert {cut[a:b] for a, b in moved} == {"restore", "backup", "checksum"}


def test_render_wraps_each_mark_and_leaves_the_rest():
    assert render("use restore now", [(4, 11)], lambda w: f"[{w}]") == "use [restore] now"
    assert render("plain", [], lambda w: f"[{w}]") == "plain"


def test_a_window_cut_inside_a_line_widens_to_the_whole_line():
    start = SECTION.index("pg_restore")
    text, offset = window_text(row(window_start=100 + start, window_end=100 + start + 10))
    assert text == "Use pg_restore to restore a backup."
    assert offset == 100 + SECTION.index("Use pg_restore")


def test_a_window_inside_a_very_long_line_widens_by_a_little_at_most():
    long_line = "word " * 200
    section = f"## Head\n\n{long_line}\n"
    place = {"window_start": 100 + 400, "window_end": 100 + 500}
    text, offset = window_text({"section_text": section, "start_position": 100, "start_line": 1, **place})
    assert offset == 100 + 400 and len(text) <= 100 + 200


def test_an_identifier_asked_for_is_one_mark_and_its_parts_elsewhere_still_words():
    text = "restore a backup. Restoring BACKUPS: pg_restore; Get-Item lists Items; my_pg_restore"
    spans = highlights(text, query_terms("pg_restore"), ("pg_restore",))
    assert [text[a:b] for a, b in spans] == ["restore", "Restoring", "pg_restore", "pg", "restore"]


def test_a_window_lacking_the_identifier_asked_for_gives_way_to_the_lines_that_hold_it():
    """A keyword hit's best-meaning window may not be where the keyword search matched: show the
    identifier's own lines, marked whole."""
    filler = "".join(f"Line {i} says something about backups and restores in general.\n" for i in range(30))
    section = "## Restore\n\n" + filler + "Run `pg_restore -d db dump.sql` to load it.\n"
    hit = {"section_text": section, "start_position": 100, "start_line": 10}
    hit.update(window_start=100 + 12, window_end=100 + 12 + 300)  # the opening lines
    shown = snippet(hit, "pg_restore")
    assert "pg_restore -d db" in shown["text"]
    assert "pg_restore" in [shown["text"][a:b] for a, b in shown["highlights"]]
    place = section.index("Run `pg_restore")
    assert shown["end_line"] == 10 + section.count("\n", 0, place)  # the lines point at the term
    excerpted, spans = excerpt(shown["text"], [(a, b) for a, b in shown["highlights"]])
    assert "pg_restore" in [excerpted[a:b] for a, b in spans]


def test_a_window_holding_the_identifier_stays_the_snippet():
    start = SECTION.index("Use pg_restore")
    hit = row(window_start=100 + start, window_end=100 + len(SECTION) - 1)
    assert snippet(hit, "pg_restore")["text"] == "Use pg_restore to restore a backup."


@pytest.mark.parametrize(
    "text",
    [
        "<!-- Do not edit this file. It is generated. -->\n[Home](Home.md) › Editor › getCursor",
        "[Home](Home.md) › Editor › getCursor <!-- left open, to the text's end: getCursor",
    ],
)
def test_an_excerpt_leaves_out_comments_a_reader_never_sees_and_their_marks(text):
    marks = highlights(text, ["getcursor"])
    shown, kept = excerpt(text, marks)
    assert "<!--" not in shown and "Do not edit" not in shown and "left open" not in shown
    assert shown.startswith("Home › Editor › getCursor")  # the link as a reader sees it
    assert [shown[a:b] for a, b in kept] == ["getCursor"]  # the comment's own mark is gone with it


def test_a_printf_pattern_is_no_comment():
    text = 'printf("%%d items", count) prints the count'
    assert excerpt(text, highlights(text, ["count"]))[0] == text


def test_open_goes_to_the_line_of_the_first_mark_the_excerpt_shows_not_the_windows_first():

    filler = "\n".join("plain words of a long paragraph between them" for _ in range(10))
    text = f"The sidebar shows icons.\n{filler}\nAdd a ribbon icon with addRibbonIcon.\n"
    spans = [(m.start(), m.end()) for m in re.finditer(r"ribbon|icons?", text, re.IGNORECASE)]
    shown, _ = excerpt(text, spans)
    mark = shown_mark(text, spans)
    assert "ribbon icon" in shown and "sidebar" not in shown  # the words together, not the first one
    assert mark is not None and text[mark:].startswith("ribbon")
    assert text[:mark].count("\n") == 11  # the 12th line: where `open` puts the cursor
    assert shown_mark("no marks here", []) is None
    short = "short: icons here"
    assert shown_mark(short, [(7, 12)]) == 7


@pytest.mark.parametrize(
    ("text", "words", "shown"),
    [
        ("extend [[Reference/API/Modal|Modal]] and call it", ["modal"], "extend Modal and call it"),
        ("[`Modal`](Modal) › [`open`](Modal/open)", ["modal", "open"], "Modal › open"),
        ("see ![[diagram.png]] and [[Plain note]]", ["diagram"], "see diagram.png and Plain note"),
        ("**Signature:** `open(): void`", ["open"], "Signature: open(): void"),
        (
            "a `2**64` bound and `__init__` **here**",
            ["bound"],
            "a 2**64 bound and __init__ here",
        ),  # code as written
        ("[on('rename')](Workspace/on('rename').md) fires", ["rename"], "on('rename') fires"),
        ("[w](https://en.wikipedia.org/wiki/Leaf_(botany)) grows", ["grows"], "w grows"),
        (
            "| a | <code>x</code> |\n| --- | :---: |\n| <p>one</p><p>two</p> |",
            ["two"],
            "| a | x | | one two |",
        ),
        ("write `<br>` for a break<br/>here", ["break"], "write <br> for a break here"),
        ('H<sub>2</sub>O and <span class="x">water</span>', ["water"], "H2O and water"),
        ("```html\n<p>Hello</p>\n| --- |\n```\nout <b>x</b>", ["hello"], "<p>Hello</p> | --- | out x"),
        ("a <b = 3> c", ["c"], "a <b = 3> c"),  # no tag: text
        (
            "[<button id=HH>Open</button>](obsidian://x) <a href='y'>map</a><h2>Maps</h2>",
            ["open"],
            "Open map Maps",
        ),
        (
            "Signature:\n```typescript\nparent: Leaf;\n```\n~~~ py\nx = 1\n~~~",
            ["parent"],
            "Signature: parent: Leaf; x = 1",
        ),
    ],
)
def test_an_excerpt_shows_links_and_marks_as_a_reader_sees_them_rendered(text, words, shown):
    """A wiki link or embed as its shown words, a link as its text, the marks of strong and code
    gone, inline HTML as what it shows (a block's tag as a space; in a code span it is the text),
    a table's delimiter row and a code fence's line gone; a mark on a link's target goes with it
    (the word is marked where it is shown)."""
    cut, kept = excerpt(text, highlights(text, words))
    assert cut == shown
    assert {cut[a:b].casefold() for a, b in kept} <= set(words) | {"diagram.png"} and kept
    assert all(cut[a:b] for a, b in kept)


@pytest.mark.parametrize(
    "unit", ["[", "[[", "![", "[[a|", "[a](", "[a]((", "<p ", "<span", "`<", "|-", "| -- ", "```\n"]
)
def test_an_excerpt_of_unclosed_links_costs_time_linear_in_its_length(unit):
    """Each link's (tag's, code span's, table rule's) parts are bounded: an opener with no close does not scan to the line's end
    from every one (the square of the length: 1.2 s for 8,000 brackets)."""
    import time

    def seconds(size: int) -> float:
        text = unit * (size // len(unit))
        started = time.perf_counter()
        excerpt(text, [(0, 1)])
        return time.perf_counter() - started

    small, large = min(seconds(4000) for _ in range(3)), min(seconds(16000) for _ in range(3))
    assert large < 8 * small + 0.05  # 4x the text: about 4x the time, never 16x


@pytest.mark.parametrize(
    ("section", "query", "shown"),
    [
        # a template's comments hidden, the words around them kept
        (
            "Plugin ID: maps %% Hub footer: do not edit below %%\nAdds a map view.",
            "map view",
            "Plugin ID: maps Adds a map view.",
        ),
        # a block comment over lines: its lines stay, blank, so the window's line numbers hold
        (
            "%%\nAdd a description here.\n%%\nSpaced repetition is a method.",
            "method",
            "Spaced repetition is a method.",
        ),
        # one that holds a word the search marked is shown: the writer looked for it there
        ("Intro. %% paypal link %% Rest.", "paypal", "Intro. %% paypal link %% Rest."),
        # none in code, none for a printf's "%%d", and one left open hides nothing
        (
            'Use `%% x %%` and printf("%%d items") %% then',
            "items",
            'Use %% x %% and printf("%%d items") %% then',
        ),
        # a window that is only comments stays as written
        ("%% only a comment %%", "elsewhere", "%% only a comment %%"),
        # Obsidian's inline form, and each "%%" paired with the next, as Obsidian pairs them
        ("An %%inline%% word. Another %% block %% end", "word", "An word. Another end"),
        # a printf's "%%d" and "100%%" are percent signs, still paired, so nothing after shifts
        (
            "Use %%d for ints, %% for a percent.\nSee 100%% below %%",
            "percent",
            "Use %%d for ints, %% for a percent. See 100%% below %%",
        ),
        # a section that begins inside a comment (an odd count): nothing can be told, none hidden
        (
            "rest of a comment\n%%\nVisible paragraph. %% note %% x",
            "paragraph",
            "rest of a comment %% Visible paragraph. %% note %% x",
        ),
        # "```x``` inline" is a code span, not a fence; a fenced block's "%%" is its text
        (
            "```x``` inline\n```\nheld %% a\nb %% held\n```\nout %% c %%",
            "held",
            "x inline held %% a b %% held out",
        ),
    ],
)
def test_an_obsidian_comment_is_hidden_from_a_snippet_unless_it_holds_a_marked_word(section, query, shown):
    found = snippet(row(section_text=section), query)
    assert found["end_line"] - found["start_line"] == section.count("\n")
    cut, kept = excerpt(found["text"], [tuple(span) for span in found["highlights"]])
    assert cut == shown
    assert all(cut[a:b] for a, b in kept) and bool(kept) == (query != "elsewhere")


def test_an_excerpt_of_a_text_marked_everywhere_costs_each_mark_a_window_not_every_other_mark():
    """A section of one word said 20,000 times, each marked: every mark is a candidate start,
    and each looked at every other mark (seconds: 1.1 s at 8,000 marks); now each reads the
    marks of its own window."""
    import time

    from mdrag.retrieval.excerpt import excerpt

    count = 20_000
    text = " ".join(["fee"] * count)
    started = time.perf_counter()
    shown, spans = excerpt(text, [(i * 4, i * 4 + 3) for i in range(count)])
    assert time.perf_counter() - started < 2.0  # ~0.35 s here; quadratic, about 7 s
    assert shown.startswith("fee fee") and len(spans) > 10

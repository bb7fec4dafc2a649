"""bench.titles, the RRF baseline's fuzzy title match: words, one edit, a note's titles, the ranking."""

from pathlib import Path

from bench.titles import TitleIndex, note_titles, one_edit, raw_words, title_words


def test_words_split_at_case_and_separators_and_lose_plurals_and_stop_words():
    assert raw_words("addRibbonIcon my-vault_name") == ["add", "ribbon", "icon", "my", "vault", "name"]
    assert title_words("The Plugins of a Vault") == ["plugin", "vault"]


def test_one_edit_counts_a_swap_of_neighbours_as_one():
    assert one_edit("plugin", "plguin") and one_edit("plugin", "plugins") and one_edit("vault", "vaul")
    assert one_edit("plugin", "pluign")  # two neighbours swapped
    assert not one_edit("plugin", "plgiun") and not one_edit("vault", "vaults2")


def test_a_note_has_its_title_heading_and_aliases_else_its_file_name(tmp_path: Path):
    titled = tmp_path / "a.md"
    titled.write_text("---\ntitle: Daily notes\naliases: [journal, diary]\n---\n# Today\n\ntext\n")
    bare = tmp_path / "Map View.md"
    bare.write_text("no heading here\n")
    broken = tmp_path / "broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\n")
    assert note_titles(titled) == ["Daily notes", "Today", "journal", "diary"]
    assert note_titles(bare) == ["Map View"]
    assert note_titles(broken) == ["broken"]


def test_the_ranking_puts_the_named_note_first_and_ties_share_their_best_rank(tmp_path: Path):
    for name, text in {
        "Map View.md": "x\n",
        "Dataview.md": "x\n",
        "Viewport.md": "x\n",
        "Templater.md": "x\n",
        "Calendar.md": "x\n",
        "Calendar sync.md": "x\n",
    }.items():
        (tmp_path / name).write_text(text)
    index = TitleIndex(sorted(tmp_path.glob("*.md")))
    first = index.ranking("open the mapview", 10)
    assert Path(first[0][0]).name == "Map View.md"  # one query word meets a title's words joined
    joined = index.ranking("how do I query with data view", 10)
    assert Path(joined[0][0]).name == "Dataview.md"  # two query words joined spell one title word
    near = [Path(p).name for p, _, _ in index.ranking("reading view post processor", 10)]
    assert "Viewport.md" not in near  # joined words one edit from a title word are no match
    assert Path(index.ranking("templatr", 10)[0][0]).name == "Templater.md"  # a typo, one edit
    calendar = index.ranking("calendar", 10)
    assert [Path(p).name for p, _, _ in calendar] == ["Calendar.md", "Calendar sync.md"]
    assert index.ranking("nothing matches here", 10) == []
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "Calendar.md").write_text("x\n")
    ranked = TitleIndex(sorted(tmp_path.rglob("Calendar.md"))).ranking("calendar", 10)
    assert [rank for _, rank, _ in ranked] == [1, 1]  # the same title twice: one tie, one rank

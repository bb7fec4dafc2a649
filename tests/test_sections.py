"""Sectioning: heading-bounded sections from markdown-it-py tokens, within a token budget."""

from __future__ import annotations

import random

import pytest

from mdrag.notes.frontblock import split_frontmatter
from mdrag.notes.sections import Sectioner
from mdrag.ui.render import render_note


def words(texts):
    return [len(t.split()) for t in texts]


def split(text: str, max_tokens: int = 1000, counter=words):
    _, offset, _, _ = split_frontmatter(text)
    return Sectioner(counter, max_tokens).split(text, offset)


def test_each_heading_starts_a_section_with_its_heading_path():
    outline = split("# A\n\nintro\n\n## B\n\nbee\n\n### C\n\nsee\n\n## D\n\ndee\n")
    assert [s.heading_path for s in outline.sections] == [
        ("A",),
        ("A", "B"),
        ("A", "B", "C"),
        ("A", "D"),
    ]
    assert [s.heading_level for s in outline.sections] == [1, 2, 3, 2]
    assert outline.first_h1 == "A"


def test_hash_inside_a_code_fence_is_not_a_heading():
    outline = split("# Script\n\n```bash\n# install deps\npip install x\n```\n")
    assert len(outline.sections) == 1
    assert outline.sections[0].section_type == "code_block"
    assert "# install deps" in outline.sections[0].text


def test_text_before_the_first_heading_is_its_own_section():
    outline = split("Preamble words here.\n\n# Title\n\nBody.\n")
    assert outline.sections[0].heading_level == 0
    assert outline.sections[0].text == "Preamble words here."


def test_frontmatter_is_never_body_text():
    outline = split("---\ntitle: Secret title\nnote: hidden\n---\nVisible body.\n")
    assert all("hidden" not in s.text for s in outline.sections)
    assert outline.sections[0].text == "Visible body."


def test_positions_are_offsets_into_the_file_and_lines_are_one_based():
    text = "---\ntitle: x\n---\n# H\n\nline five\n\n## Sub\n\nline nine\n"
    outline = split(text)
    for section in outline.sections:
        assert text[section.start_position : section.end_position] == section.text
    sub = outline.sections[-1]
    assert (sub.start_line, sub.end_line) == (8, 10)
    assert text.splitlines()[sub.start_line - 1] == "## Sub"


def test_bare_parent_headings_and_blank_sections_are_dropped():
    outline = split("# Parent\n\n## Child\n\ncontent\n")
    assert [s.heading for s in outline.sections] == ["Child"]
    assert outline.sections[0].heading_path == ("Parent", "Child")


def test_a_note_that_is_only_a_heading_keeps_it():
    assert [s.heading for s in split("# Buy milk\n").sections] == ["Buy milk"]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n", "table"),
        ("# T\n\n- one item here\n- two items here\n- three items here\n", "list"),
        ("# T\n\nJust a paragraph of prose.\n", "paragraph"),
        ("# T\n", "heading"),
    ],
)
def test_section_type_is_the_dominant_block(text, kind):
    assert split(text).sections[0].section_type == kind


def test_long_section_splits_at_block_boundaries_within_the_budget():
    paragraphs = [" ".join(f"p{i}w{j}" for j in range(30)) for i in range(10)]
    text = "# Long\n\n" + "\n\n".join(paragraphs) + "\n"
    sections = split(text, max_tokens=100).sections
    assert len(sections) > 1
    assert [s.chunk_index for s in sections] == list(range(len(sections)))
    assert all(s.token_count <= 100 for s in sections)
    for section in sections:
        # Every piece starts and ends on a paragraph boundary: no paragraph is cut.
        assert section.text.lstrip("# Long\n").split()[0].endswith("w0")
        assert section.text.split()[-1].endswith("w29")
    joined = " ".join(s.text for s in sections)
    assert all(p.split()[-1] in joined for p in paragraphs)


@pytest.mark.parametrize("seed", range(40))
def test_a_long_sections_last_part_is_never_left_a_scrap(seed):
    """Greedy packing alone leaves the tail as small as one paragraph (a one-line hit of its own);
    the last two parts share their paragraphs evenly, each within the budget, none cut."""
    rng = random.Random(seed)
    budget = rng.choice([60, 100, 250])
    paragraphs = [
        " ".join(f"p{i}w{j}" for j in range(rng.randint(1, budget // 3))) for i in range(rng.randint(2, 40))
    ]
    sections = split("# Long\n\n" + "\n\n".join(paragraphs) + "\n", max_tokens=budget).sections
    assert all(s.token_count <= budget for s in sections)
    said = [w for s in sections for w in s.text.split() if w != "#" and w != "Long"]
    assert said == " ".join(paragraphs).split()  # every word once, in order
    if len(sections) > 1:
        *_, before, last = sections
        largest = max(len(p.split()) for p in paragraphs)
        assert last.token_count >= budget // 2 or before.token_count - last.token_count <= largest


def test_the_tail_is_evened_only_where_that_makes_the_parts_more_even():
    def words_of(n, tag):
        return " ".join(f"{tag}{i}" for i in range(n))

    # 10 + 990 words fill a part; no cut of (10, 990, 10) is more even than (1000, 10): kept as is.
    text = f"# T\n\n{words_of(8, 'a')}\n\n{words_of(990, 'b')}\n\n{words_of(10, 'c')}\n"
    sections = split(text).sections
    assert [s.token_count for s in sections] == [1000, 10]
    # A heading keeps a block of its text: no part is its heading alone.
    text = f"# {words_of(11, 'h')}\n\n{words_of(980, 'b')}\n\n{words_of(10, 'c')}\n"
    sections = split(text).sections
    assert all(s.body_text for s in sections)
    assert [s.token_count for s in sections] == [992, 10]


def test_a_part_holds_no_unit_for_each_block_of_no_tokens():
    """A line of a zero-width space counts no tokens, so a part may take a million of them: they
    join the block before them rather than each being kept for evening the tail."""
    from mdrag.notes.sections import _Chunk, _Unit

    chunk = _Chunk(_Unit("paragraph", 0, 10, 5))
    for at in range(10, 30_000, 3):
        chunk.add(_Unit("paragraph", at, at + 1, 0))
    assert len(chunk.units) == 1 and chunk.units[0].end == chunk.end == 29_999
    headed = _Chunk(_Unit("heading", 0, 4, 2))
    for at in range(5, 3_000, 3):
        headed.add(_Unit("paragraph", at, at + 1, 0))
    assert len(headed.units) == 2 and headed.units[0].end == 4  # the heading line stays its own


def test_one_line_after_a_full_part_is_not_a_section_of_its_own(fake_embedder):
    count = fake_embedder.count_tokens  # the model's tokenizer, as the index counts
    body = "\n\n".join(
        f"Step {i}: push the change and let the build publish the site again." for i in range(70)
    )
    text = f"# Deploy\n\n{body}\n\nIn the future, whenever you push a change, the site is rebuilt.\n"
    sections = Sectioner(count, 1000).split(text).sections
    assert len(sections) == 2
    assert all(s.token_count <= 1000 for s in sections)
    assert sections[1].end_line - sections[1].start_line > 20  # not the last line alone
    assert sections[1].text.rstrip().endswith("the site is rebuilt.")


def test_long_list_splits_between_items_and_long_code_between_lines():
    items = "\n".join(f"- item {i} " + "word " * 20 for i in range(20))
    sections = split(f"# L\n\n{items}\n", max_tokens=60).sections
    assert all(s.text.lstrip().startswith(("- item", "# L")) for s in sections)
    code = "\n".join(f"echo line{i} " + "x " * 10 for i in range(40))
    code_sections = split(f"# C\n\n```\n{code}\n```\n", max_tokens=50).sections
    assert len(code_sections) > 1
    assert all(s.token_count <= 50 for s in code_sections)


def test_one_giant_paragraph_line_splits_between_words_never_inside_one():
    line = " ".join(f"word{i}" for i in range(500))
    sections = split(f"# G\n\n{line}\n", max_tokens=100).sections
    pieces = [w for s in sections for w in s.text.replace("# G", "").split()]
    assert pieces == line.split()
    assert all(s.token_count <= 100 for s in sections)


def test_token_count_uses_the_model_tokenizer(fake_embedder):
    embedder = fake_embedder  # the real tokenizer; no model runs here
    text = "# Tokens\n\nTokenization splits unbelievably long words into word pieces.\n"
    section = Sectioner(embedder.count_tokens, 1000).split(text).sections[0]
    assert section.token_count == embedder.count_tokens([section.text])[0]
    assert section.token_count > len(section.text.split())


def test_sections_stay_within_max_tokens_measured_by_the_model(fake_embedder):
    embedder = fake_embedder
    body = "\n\n".join(f"Sentence number {i} talks about tokenizers and budgets." for i in range(300))
    sections = Sectioner(embedder.count_tokens, 1000).split(f"# Big\n\n{body}\n").sections
    assert len(sections) >= 3
    assert all(embedder.count_tokens([s.text])[0] <= 1000 for s in sections)


@pytest.mark.parametrize(
    ("heading", "text", "anchor"),
    [
        ("## Configuration {#configuration-disqus}", "Configuration", "configuration-disqus"),
        ("## Settings {#id .class key=val}", "Settings", "id"),
        ('## Settings {key="a b" #quoted}', "Settings", "quoted"),
        ("## Section 1 {class=foo}", "Section 1", "section-1"),
        ("## Styled {.note}", "Styled", "styled"),
        ("## Kramdown {: #kd}", "Kramdown", "kd"),
        ("## Unnumbered {-}", "Unnumbered", "unnumbered"),
    ],
)
def test_a_trailing_attribute_list_leaves_the_heading_and_its_id_becomes_the_anchor(heading, text, anchor):
    section = split(f"# Page\n\nintro\n\n{heading}\n\nbody\n").sections[1]
    assert section.heading == text
    assert section.heading_path == ("Page", text)
    assert section.anchor == anchor


@pytest.mark.parametrize(
    "heading", ["Using {braces}", "Using {braces} in text", "Set {a, b}", "{#only-an-id}"]
)
def test_braces_that_are_not_an_attribute_list_stay_in_the_heading(heading):
    section = split(f"# Page\n\nintro\n\n## {heading}\n\nbody\n").sections[1]
    assert section.heading == heading


def test_html_entities_in_headings_read_as_their_characters_but_not_inside_code():
    outline = split(
        "# Tom &amp; Jerry &ndash; &#8212; &#x41;\n\nbody\n\n## `a&amp;b` &lt;x&gt; &bogus; &amp\n\nmore\n"
    )
    assert outline.first_h1 == "Tom & Jerry – — A"
    assert outline.sections[1].heading == "`a&amp;b` <x> &bogus; &amp"
    assert outline.sections[0].anchor == "tom--jerry---a"  # GitHub's slug of the rendered text


def test_an_author_given_id_is_never_handed_out_again_as_a_slug():
    outline = split("# Page\n\n## Setup {#setup}\n\none\n\n## Setup\n\ntwo\n")
    assert [s.anchor for s in outline.sections] == ["setup", "setup-1"]


def test_the_heading_path_is_led_by_the_title_once():
    from mdrag.notes.sections import titled_path

    assert titled_path("Host on GitHub Pages", ("Other resources",)) == [
        "Host on GitHub Pages",
        "Other resources",
    ]
    assert titled_path("Sourdough bread", ("Sourdough bread", "Baking")) == ["Sourdough bread", "Baking"]
    assert titled_path("Sourdough  Bread", ("sourdough bread", "Baking")) == ["sourdough bread", "Baking"]
    assert titled_path("Notes", ()) == ["Notes"]
    assert titled_path("", ("A", "B")) == ["A", "B"]


def test_a_notes_aliases_follow_its_title_in_every_section_it_embeds():
    from mdrag.notes.document import parse_document
    from mdrag.notes.sections import embedding_inputs

    text = "---\naliases: [k8s, Kubernetes, /old/url/]\n---\n# Kubernetes\n\nIntro.\n\n## Upgrade\n\nSteps.\n"
    _, title, inputs = embedding_inputs(Sectioner(words), parse_document("/n/kube.md", text.encode()))
    assert title == "Kubernetes"  # what a hit shows: the title alone
    assert [prefix for prefix, _ in inputs] == ["Kubernetes (k8s)", "Kubernetes (k8s) > Upgrade"]
    _, _, inputs = embedding_inputs(
        Sectioner(words), parse_document("/n/davish.md", b"---\nalias: Davis Haupt\n---\nA person.\n")
    )
    assert inputs == [("davish (Davis Haupt)", "A person.")]  # a file name's note is named by its alias


def test_long_aliases_leave_the_sections_own_heading_in_what_it_embeds():
    from mdrag.notes.document import parse_document
    from mdrag.notes.sections import ALIASES_CHARS, embedding_inputs

    names = ", ".join(f"name{i} " + "x" * 100 for i in range(8))
    text = f"---\naliases: [{names}]\n---\n# Kubernetes\n\nIntro.\n\n## Upgrade\n\nSteps.\n"
    _, _, inputs = embedding_inputs(Sectioner(words), parse_document("/n/kube.md", text.encode()))
    prefix = inputs[1][0]
    assert prefix.endswith(" > Upgrade")
    assert len(prefix) <= len("Kubernetes () > Upgrade") + ALIASES_CHARS


def embedded(text: str, max_tokens: int = 1000) -> list[tuple[str, str]]:
    from mdrag.notes.document import parse_document
    from mdrag.notes.sections import embedding_inputs

    _, _, inputs = embedding_inputs(Sectioner(words, max_tokens), parse_document("/n/x.md", text.encode()))
    return inputs


@pytest.mark.parametrize(
    ("text", "seen"),
    [
        ("<!-- Do not edit this file. -->\n\n[Plugin](Plugin)\n", "[Plugin](Plugin)"),
        ("<!-- - [[PayPal]]: <https://> ^paypal-->\nshown after it\n", "shown after it"),
        ("<!-- a --> shown on its line\n", "shown on its line"),
        ("<!--\n## Sponsor this author\n\nstill inside\n-->\n\nafter\n", "after"),
        ("- item\n\n  <!-- in a list -->\n", "- item"),
        ("> <!-- in a quote -->\n> quoted\n", "> > quoted"),  # the markers stay
        ("text\n\n<!-- left open to the end\n\nof the note\n", "text"),
    ],
)
def test_html_comment_blocks_are_blanked_from_what_a_section_embeds(text, seen):
    [(_, body)] = embedded("# T\n\n" + text)
    assert " ".join(body.split()) == seen
    assert len(body) == len(split("# T\n\n" + text).sections[0].body_text)  # every offset holds


@pytest.mark.parametrize(
    "text",
    [
        "```html\n<!-- in a fence -->\n```\n",
        "Some text.\n\n    <!-- indented code -->\n",
        "See `<!-- inline code -->` here.\n",
        "An <!-- inline comment --> in a paragraph.\n",  # read as the paragraph's own text
    ],
)
def test_comments_in_code_or_inside_a_paragraph_are_embedded_as_written(text):
    [(_, body)] = embedded("# T\n\n" + text)
    assert body == text.strip()


def test_text_before_the_first_heading_that_is_only_a_comment_is_no_section():
    """A generated page's "Do not edit" line would embed as the note's title alone, and lead
    searches for it. A heading with only a comment under it is bare: its heading path is embedded,
    as for a heading with nothing under it, and its words stay in the note's text a hit reads."""
    text = "<!-- generated -->\n\n# Title\n\nBody.\n\n## Sponsor\n\n<!-- PayPal, Patreon -->\n"
    inputs = embedded(text)
    assert [(prefix, body.strip()) for prefix, body in inputs] == [
        ("Title", "Body."),
        ("Title > Sponsor", ""),
    ]
    assert "PayPal" in split(text).sections[-1].text
    parent = "# Title\n\n<!-- only this -->\n\n## Child\n\nText.\n"
    assert [prefix for prefix, _ in embedded(parent)] == ["Title > Child"]  # a bare parent heading


def test_a_comment_longer_than_a_window_is_blanked_in_every_section_it_is_cut_into():
    from mdrag.notes.blocks import WINDOW_CHARS

    lines = "".join(f"commented line {i} of many words\n" for i in range(3 * WINDOW_CHARS // 30))
    inputs = embedded(f"# T\n\nbefore\n\n<!--\n{lines}-->\nafter\n", max_tokens=200)
    assert len(inputs) > 10
    assert " ".join(" ".join(body.split()) for _, body in inputs).split() == ["before", "after"]


def test_a_quoted_comment_longer_than_a_window_is_never_cut_inside_and_read_as_text():
    from mdrag.notes.blocks import WINDOW_CHARS

    quoted = "".join(f"> secret line {i}\n" for i in range(2 * WINDOW_CHARS // 18))
    inputs = embedded(f"# H\n\n> <!--\n{quoted}> -->\n\nafter\n", max_tokens=200)
    assert "secret" not in " ".join(body for _, body in inputs)
    assert "after" in inputs[-1][1]


@pytest.mark.parametrize(
    "hidden",
    [
        "## Old ideas\n- stale idea",  # a section commented out
        "# Draft title\n\n---\n\nSetext\n===",  # headings and a rule of every kind
        "| a | b |\n|---|---|\n| 1 | 2 |\n```\ncode\n```",  # a table and a fence
    ],
    ids=["section", "headings", "table-and-fence"],
)
def test_an_obsidian_comment_of_several_lines_is_no_markup_and_stays_in_its_section(hidden):
    # Obsidian hides a "%%" block whole: what it holds makes no heading, and its words stay.
    text = f"# Plan\n\n## Tasks\n\n- ship it\nNow.\n%%\n{hidden}\n%%\n\n## Notes\n\nok\n"
    outline = split(text)
    assert [s.heading_path for s in outline.sections] == [("Plan", "Tasks"), ("Plan", "Notes")]
    assert outline.sections[0].text.endswith(f"%%\n{hidden}\n%%")  # the pair in one section
    assert outline.first_h1 == "Plan"
    html, toc = render_note(text, [])  # the page: the block as written, muted; no heading of it
    assert [entry["text"] for entry in toc] == ["Plan", "Tasks", "Notes"]
    assert '<pre class="comment">%%\n' in html and "<hr" not in html


def test_a_percent_sign_pair_on_one_line_or_left_open_is_not_a_comment_block():
    outline = split("%% a note to self %%\n# Plan\n\n%%\n## Left open\n\nbody\n")
    assert [s.heading_path for s in outline.sections] == [(), ("Plan",), ("Plan", "Left open")]


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("{{< highlight bash >}}", "{{< /highlight >}}"),  # Hugo
        ('{{< highlight go "linenos=table,hl_lines=2" >}}', "{{</ highlight >}}"),
        ("{{% highlight bash %}}", "{{% /highlight %}}"),
        ("{% highlight bash linenos %}", "{% endhighlight %}"),  # Jekyll, GitHub Pages
        ("{%- highlight bash -%}", "{%- endhighlight -%}"),
    ],
)
def test_a_highlight_shortcode_is_code_as_the_site_renders_it(opening, closing):
    text = f"# Setup\n\n{opening}\n# install the deps\nnpm install\n{closing}\n\n## Usage\n\nRun it.\n"
    outline = split(text)
    assert [s.heading_path for s in outline.sections] == [("Setup",), ("Setup", "Usage")]
    assert (
        outline.sections[0].section_type == "code_block" and "# install the deps" in outline.sections[0].text
    )
    html, toc = render_note(text, [])
    assert [entry["text"] for entry in toc] == ["Setup", "Usage"]
    assert "<pre><code" in html and "# install the deps\nnpm install\n</code></pre>" in html


def test_a_shortcode_that_is_no_highlight_or_never_closes_is_read_as_markdown():
    outline = split('{{< figure src="x.jpg" >}}\n# Title\n\n{{< highlight bash >}}\n## Left open\n\nbody\n')
    assert [s.heading_path for s in outline.sections] == [(), ("Title",), ("Title", "Left open")]


@pytest.mark.parametrize(
    ("opening", "closing"),
    [("%%", "%%"), ("{{< highlight bash >}}", "{{< /highlight >}}")],
    ids=["comment", "highlight"],
)
def test_a_block_that_closes_past_a_parse_window_is_one_block_and_one_never_closed_is_markdown(
    opening, closing
):
    # A long note is parsed 64 KB at a time: a block open at a window's end is read whole by the next.
    top = "# Top\n\n" + ("word " * 15 + "\n\n") * 850  # about 66 KB
    body = "\n# Hidden\n\nx\n\n" + "y\n\n" * 2000
    closed = split(top + opening + body + closing + "\n\n## Shown\n\nz\n")
    assert {s.heading_path for s in closed.sections} == {("Top",), ("Top", "Shown")}
    left_open = split(top + opening + body + "\n## Shown\n\nz\n")
    assert ("Hidden", "Shown") in {s.heading_path for s in left_open.sections}

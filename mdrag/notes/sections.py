"""Sections: split a note's body into heading-bounded sections of bounded token count (markdown-it-py)."""

from __future__ import annotations

import itertools
import re
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from markdown_it import MarkdownIt

from mdrag.answers.notes import Link
from mdrag.notes.anchors import Slugger
from mdrag.notes.blocks import Block, Blocks, add_block_rules
from mdrag.notes.comments import blank
from mdrag.notes.counting import TokenCounter, counted
from mdrag.notes.document import Document, file_title
from mdrag.notes.inline import decode_entities
from mdrag.notes.lines import LineIndex

# Bump when the splitting rules change: it is part of every section_id, so a new
# version re-embeds what it sections differently and nothing else.
SECTIONING_VERSION = 1

_WORD = re.compile(r"\S+\s*")
_NONBLANK = re.compile(r"\S")
# Bounds that keep a hostile note's cost linear in its size and its memory a few times it:
WORD_RUN = 32  # words of an over-long line counted as one text
COUNT_BLOCKS = 512  # blocks counted at a time
ALIASES_CHARS = 200  # of a note's aliases, after its title in the heading path
PREFIX_CHARS = 2000  # of the heading path that leads each window (cut to half the window anyway)
_GroupKey = tuple[str, int, tuple[str, ...], str]  # heading, level, heading path, anchor


@dataclass(frozen=True)
class Section:
    """A heading-bounded piece of a note; `text` is exactly the file's text[start:end]."""

    heading: str
    heading_level: int  # 0 for the text before the first heading
    heading_path: tuple[str, ...]
    section_type: str  # heading, paragraph, code_block, list or table: the dominant block
    chunk_index: int  # 0, or the part number when a long section was split
    start_position: int
    end_position: int
    start_line: int  # 1-based line in the file
    end_line: int
    text: str
    body_start: int  # offset in `text` where the content under the heading line begins
    token_count: int
    anchor: str = ""  # GitHub-style slug of the heading ("" before the first heading)

    @property
    def body_text(self) -> str:
        return self.text[self.body_start :].strip()

    @property
    def body_offset(self) -> int:
        """Where `body_text` starts in the file."""
        under = self.text[self.body_start :]
        return self.start_position + self.body_start + len(under) - len(under.lstrip())


@dataclass(frozen=True)
class Outline:
    """The sections of one note, the text of its first H1 (a title candidate), its links and its
    HTML comment blocks' comments (start and end offsets in the file, flat)."""

    sections: list[Section]
    first_h1: str
    links: list[Link] = field(default_factory=list)
    comments: array[int] = field(default_factory=lambda: array("q"))


@dataclass
class _Unit:
    kind: str
    start: int  # offsets into the file text
    end: int
    tokens: int
    words: bool = False  # a run of words of one long line: packed whole, or word by word


_Counted = tuple[Block, _Unit]  # a block, and its text as one unit with its tokens


class Sectioner:
    """Turns a note's text into sections no longer than `max_tokens` model tokens.

    Its cost is linear in the note and its memory a few times the note, whatever the text: the
    markup is parsed a window at a time (notes/blocks.py), texts are counted in bounded batches,
    and blocks and the units a long block is cut into stream into sections as they come.
    """

    def __init__(self, count_tokens: TokenCounter, max_tokens: int = 1000) -> None:
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens
        self._md = MarkdownIt("commonmark").enable("table")
        add_block_rules(self._md)
        self._md.core.ruler.disable("inline")  # done a block at a time (see Blocks)

    def split(self, text: str, body_offset: int = 0, unread_end: int = 0) -> Outline:
        """The note's sections, streamed from its blocks: no list of every block is kept (a note
        of a million one-line paragraphs is a million blocks). The text before `unread_end` (a
        frontmatter block not read) is one block of lines, as code is: no markup is read in it."""
        lines = LineIndex(text, body_offset)
        unread = (
            0
            if unread_end <= body_offset
            else len(lines.starts)
            if unread_end >= len(text)
            else lines.line_of(unread_end)
        )
        blocks = Blocks(self._md, text, lines, first_line=unread)
        stream = itertools.chain([Block("code_block", 0, unread)] if unread else [], blocks)
        sections: list[Section] = []
        for key, members in _by_heading(self._counted(text, lines, stream)):
            units = (unit for block, whole in members for unit in self._units(text, lines, block, whole))
            sections.extend(self._pack(text, lines, key, units))
        return Outline(_drop_empty(sections, blocks.comments), blocks.first_h1, blocks.links, blocks.comments)

    def _counted(self, text: str, lines: LineIndex, blocks: Iterator[Block]) -> Iterator[_Counted]:
        """Each block with its text as one unit, counted a batch of blocks to a tokenizer call."""
        while batch := list(itertools.islice(blocks, COUNT_BLOCKS)):
            ranges = [lines.chars(b.first_line, b.end_line) for b in batch]
            for block, (start, end, tokens) in zip(
                batch, counted(self.count_tokens, text, ranges), strict=True
            ):
                yield block, _Unit(block.kind, start, end, tokens)

    def _units(self, text: str, lines: LineIndex, block: Block, whole: _Unit) -> Iterator[_Unit]:
        """The block as one unit, or, when over budget, split at its natural boundaries."""
        if whole.tokens <= self.max_tokens:
            yield whole
            return
        ranges = (lines.chars(a, b) for a, b in block.ranges())
        nonblank = ((s, e) for s, e in ranges if _NONBLANK.search(text, s, e))
        for start, end, tokens in counted(self.count_tokens, text, nonblank):
            unit = _Unit(block.kind, start, end, tokens)
            if tokens <= self.max_tokens:
                yield unit
            elif end - start > 0 and text.count("\n", start, end) > 0:
                first = lines.line_of(start)
                sub = Block(block.kind, first, lines.line_of(end - 1) + 1)
                yield from self._units(text, lines, sub, unit)
            else:
                yield from self._words(text, unit)

    def _words(self, text: str, unit: _Unit) -> Iterator[_Unit]:
        """One over-long line in runs of WORD_RUN words, counted a run at a time (a word's pieces
        never cross white space, so a run's count is its words' sum): a line of a million words
        is a few thousand texts to count, and only a run that does not fit whole is counted again,
        word by word (see _pack)."""
        words = _WORD.finditer(text, unit.start, unit.end)
        runs = ((run[0].start(), run[-1].end()) for run in _batched(words, WORD_RUN))
        for start, end, tokens in counted(self.count_tokens, text, runs):
            yield _Unit(unit.kind, start, end, tokens, words=True)

    def _each_word(self, text: str, run: _Unit) -> Iterator[_Unit]:
        """A run of words word by word; only a single giant word is cut inside."""
        words = ((m.start(), m.end()) for m in _WORD.finditer(text, run.start, run.end))
        for start, end, tokens in counted(self.count_tokens, text, words):
            if tokens <= self.max_tokens:
                yield _Unit(run.kind, start, end, tokens)
                continue
            # A "word" longer than the whole budget (a base64 blob, a minified line):
            # cutting it is the only way to keep every part of it in the index.
            step = max(1, (end - start) * self.max_tokens // (tokens * 2))
            cuts = ((cut, min(end, cut + step)) for cut in range(start, end, step))
            yield from (_Unit(run.kind, s, e, t) for s, e, t in counted(self.count_tokens, text, cuts))

    def _pack(self, text: str, lines: LineIndex, group: _GroupKey, units: Iterable[_Unit]) -> list[Section]:
        """Units into sections of at most `max_tokens`, greedily in order, each let go once the one
        after it is packed. A run of words goes in whole where each of its words would have, else
        word by word. The last two parts share their units evenly when the last is under half the
        budget: greedy packing leaves a long section's tail as small as one line, which then came
        up as a hit of its own ("host-on-netlify/index.md:130-130")."""
        sections: list[Section] = []
        held: _Chunk | None = None  # the part before `chunk`, kept until the section ends
        chunk: _Chunk | None = None
        waiting: deque[_Unit] = deque()
        stream = iter(units)
        while (unit := waiting.popleft() if waiting else next(stream, None)) is not None:
            if chunk is not None and chunk.tokens + unit.tokens <= self.max_tokens:
                chunk.add(unit)
            elif unit.words and (chunk is not None or unit.tokens > self.max_tokens):
                waiting.extendleft(reversed(list(self._each_word(text, unit))))
            else:
                if held is not None:
                    sections.append(held.section(text, lines, group, len(sections)))
                held, chunk = chunk, _Chunk(unit)
        tail = [part for part in (held, chunk) if part is not None]
        if len(tail) == 2 and tail[1].tokens < self.max_tokens // 2:
            tail = _evened(tail[0], tail[1], self.max_tokens) or tail
        for part in tail:
            sections.append(part.section(text, lines, group, len(sections)))
        return sections


def _evened(first: _Chunk, last: _Chunk, max_tokens: int) -> list[_Chunk] | None:
    """The two parts with units of the first moved into the last, as near the same size as their
    boundaries allow, each within the budget; None where no move makes them more even. A heading
    keeps a unit of its text with it, and of cuts as even the latest wins (the fewest moved)."""
    units = first.units + last.units
    total = first.tokens + last.tokens
    best: tuple[int, int] | None = None  # (the larger part's tokens, where the second starts)
    left = 0
    lowest = 2 if first.units[0].kind == "heading" else 1
    for cut in range(1, len(first.units)):
        left += units[cut - 1].tokens
        larger = max(left, total - left)
        if cut >= lowest and larger <= max_tokens and (best is None or larger <= best[0]):
            best = (larger, cut)
    if best is None or best[0] >= first.tokens:
        return None
    parts: list[_Chunk] = []
    for piece in (units[: best[1]], units[best[1] :]):
        part = _Chunk(piece[0])
        for unit in piece[1:]:
            part.add(unit)
        parts.append(part)
    return parts


class _Chunk:
    """The units packed into one section so far: where it starts and ends, its tokens, its kinds."""

    def __init__(self, first: _Unit) -> None:
        self.first, self.end, self.tokens = first, first.end, 0
        self.weights: dict[str, int] = {}
        # For evening the tail: one for each token at most, as a unit of no tokens (a line of a
        # zero-width space) joins the one before it, so a million of them hold no million units.
        self.units: list[_Unit] = []
        self.add(first)

    def add(self, unit: _Unit) -> None:
        before = self.units[-1] if self.units else None
        if unit.tokens == 0 and before is not None and before.kind != "heading":
            self.units[-1] = replace(before, end=unit.end)
        else:
            self.units.append(unit)
        self.end = unit.end
        self.tokens += unit.tokens
        if unit.kind != "heading":
            self.weights[unit.kind] = self.weights.get(unit.kind, 0) + max(unit.tokens, 1)

    def section(self, text: str, lines: LineIndex, group: _GroupKey, index: int) -> Section:
        heading, level, path, anchor = group
        start, end = self.first.start, _rstrip(text, self.first.start, self.end)
        head_end = self.first.end
        if self.first.words:  # a heading cut into runs of words: its first word is its heading line
            first_word = _WORD.match(text, start, self.first.end)
            head_end = first_word.end() if first_word else head_end
        body_start = min(head_end, end) - start if self.first.kind == "heading" else 0
        return Section(
            heading=heading,
            heading_level=level,
            heading_path=path,
            section_type=max(self.weights, key=lambda k: self.weights[k]) if self.weights else "heading",
            chunk_index=index,
            start_position=start,
            end_position=end,
            start_line=lines.line_of(start) + lines.first_file_line + 1,
            end_line=lines.line_of(max(start, end - 1)) + lines.first_file_line + 1,
            text=text[start:end],
            body_start=body_start,
            token_count=self.tokens,
            anchor=anchor,
        )


def _batched(items: Iterator[re.Match[str]], size: int) -> Iterator[tuple[re.Match[str], ...]]:
    while run := tuple(itertools.islice(items, size)):
        yield run


def titled_path(title: str, heading_path: Sequence[str]) -> list[str]:
    """The heading path led by the note's title, unless its first heading already is the title."""
    path = list(heading_path)
    if title and (not path or _same_words(path[0]) != _same_words(title)):
        path.insert(0, title)
    return path


def _same_words(text: str) -> str:
    """The words alone: "Runbook - restore" and "Runbook: restore" name the same note."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def _by_heading(stream: Iterator[_Counted]) -> Iterator[tuple[_GroupKey, Iterator[_Counted]]]:
    """The blocks in groups, each led by its heading (the text before the first heading is one
    too), with its heading, level, heading path and anchor; a group's blocks stream as it is read."""
    stack: list[tuple[int, str]] = []
    slugger = Slugger()  # every heading takes its slug in order, as GitHub numbers repeats
    ahead = [next(stream, None)]  # the first block of the next group

    def members(lead: _Counted) -> Iterator[_Counted]:
        yield lead
        for item in stream:
            if item[0].kind == "heading":
                ahead[0] = item
                return
            yield item
        ahead[0] = None

    while (lead := ahead[0]) is not None:
        block = lead[0]
        key: _GroupKey = ("", 0, (), "")
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.heading))
            anchor = slugger.claim(block.anchor_id) if block.anchor_id else slugger.slug(block.plain)
            key = (block.heading, block.level, tuple(t for _, t in stack), anchor)
        group = members(lead)
        yield key, group
        for _ in group:  # what the caller left unread
            pass


def _drop_empty(sections: list[Section], comments: array[int]) -> list[Section]:
    """Drop blank sections, and headings with no text of their own whose subsections follow
    (text under a heading that is only `comments` is none: a generated page's "Do not edit" line
    before its first heading is no section).

    A bare parent heading adds nothing: its text already leads every child's heading path.
    A bare heading with nothing under it (a note that is only "# Buy milk") is kept.
    """
    kept = []
    for index, section in enumerate(sections):
        if not section.text.strip():
            continue
        following = sections[index + 1] if index + 1 < len(sections) else None
        bare = not blank(section.body_text, section.body_offset, comments).strip()
        if bare and following is not None and following.heading_level > section.heading_level:
            continue
        kept.append(section)
    return kept


def _rstrip(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def embedding_inputs(sectioner: Sectioner, document: Document) -> tuple[Outline, str, list[tuple[str, str]]]:
    """A note's outline, its title, and each section's (prefix, body) as embedded.

    The title leads every heading path, so a section is embedded knowing which note it is in. What
    a reader never sees, its HTML comment blocks, is blanked from the body: a generated page's "Do
    not edit this file" header, or a template's commented-out "PayPal" and "Patreon" lines in
    thousands of notes, gave each of them that meaning and those words (the keyword index reads
    what each window embeds). Blanked, not cut, so the body's offsets hold.
    """
    outline = sectioner.split(document.text, document.body_offset, document.unread_end)
    title = decode_entities(document.fm_text("title")) or outline.first_h1 or file_title(document.path)
    # The note's other names follow its title, so a search by one finds the note by its words and
    # meaning ("k8s" for a note titled Kubernetes); at most ALIASES_CHARS of them, as eight long
    # ones would fill the half of each window the heading path may take, and push the section's
    # own heading out of it.
    also = _cut(", ".join(a for a in document.aliases if _same_words(a) != _same_words(title)), ALIASES_CHARS)
    inputs = []
    for section in outline.sections:
        # Each part cut first: a heading of megabytes leads every one of its sections, and joining
        # or counting it whole for each of them cost the square of its length.
        path = titled_path(title[:PREFIX_CHARS], [h[:PREFIX_CHARS] for h in section.heading_path])
        if also and path:
            path[0] = f"{path[0]} ({also})"
        prefix = _cut(" > ".join(path), PREFIX_CHARS)
        body = blank(section.body_text, section.body_offset, outline.comments)
        inputs.append((prefix, body or section.heading))
    return outline, title, inputs


def _cut(text: str, limit: int) -> str:
    """The text, or its first `limit` characters cut back to a space when it has one."""
    if len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit + 1)
    return text[: space if space > 0 else limit].rstrip()

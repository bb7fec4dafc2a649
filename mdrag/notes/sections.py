"""Sections: split a note's body into heading-bounded sections of bounded token count (markdown-it-py)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from mdrag.answers import Link
from mdrag.notes.anchors import Slugger
from mdrag.notes.document import Document
from mdrag.notes.links import extract_links

# Bump when the splitting rules change: it is part of every section_id, so a new
# version re-embeds what it sections differently and nothing else.
SECTIONING_VERSION = 1

TokenCounter = Callable[[Sequence[str]], list[int]]

_BLOCK_TYPES = {
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "fence": "code_block",
    "code_block": "code_block",
    "blockquote_open": "paragraph",
    "html_block": "paragraph",
    "hr": "paragraph",
}
_WORD = re.compile(r"\S+\s*")
# A trailing attribute list, as Hugo (Goldmark), Pandoc, kramdown and PHP Markdown Extra write
# it: `{#id}`, `{.class}`, `{key=val}`, `{: #id .class key="a b"}`. A brace group of other words
# (`## Using {braces}`) is heading text and stays.
_ATTRIBUTE = r"""(?:#[^\s{}#.]+|\.[\w-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s"'{}]+)|-)"""
_ATTRIBUTES = re.compile(r"\s*\{:?\s*(" + _ATTRIBUTE + r"(?:\s+" + _ATTRIBUTE + r")*)\s*\}\s*$")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_CODE_SPAN = re.compile(r"(`+)(?:.*?[^`])?\1(?!`)")
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


@dataclass(frozen=True)
class Outline:
    """The sections of one note, the text of its first H1 (a title candidate) and its links."""

    sections: list[Section]
    first_h1: str
    links: list[Link] = field(default_factory=list)


@dataclass
class _Block:
    kind: str  # heading or one of _BLOCK_TYPES' values
    first_line: int  # body lines, end exclusive
    end_line: int
    parts: list[tuple[int, int]]  # line ranges to split at when the block is too long
    heading: str = ""
    level: int = 0
    plain: str = ""  # the heading as rendered, without markup: what its anchor is made from
    anchor_id: str = ""  # the id its attribute list gives (`{#id}`), which the page uses as anchor


@dataclass
class _Unit:
    kind: str
    start: int  # offsets into the file text
    end: int
    tokens: int


class Sectioner:
    """Turns a note's text into sections no longer than `max_tokens` model tokens."""

    def __init__(self, count_tokens: TokenCounter, max_tokens: int = 1000) -> None:
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens
        self._md = MarkdownIt("commonmark").enable("table")

    def split(self, text: str, body_offset: int = 0) -> Outline:
        body = text[body_offset:]
        lines = _LineIndex(text, body_offset)
        tokens = self._md.parse(body)
        blocks = _blocks(tokens)
        first_h1 = next((b.heading for b in blocks if b.kind == "heading" and b.level == 1), "")
        groups = _group_by_heading(blocks)
        # One tokenizer call per note for every block, instead of one per block.
        ranges = [lines.chars(b.first_line, b.end_line) for g in groups for b in g[1]]
        counts = iter(self.count_tokens([text[s:e] for s, e in ranges]))
        sections: list[Section] = []
        for (heading, level, path, anchor), group in groups:
            units = []
            for block in group:
                start, end = lines.chars(block.first_line, block.end_line)
                units.extend(self._units(text, lines, block, _Unit(block.kind, start, end, next(counts))))
            sections.extend(self._pack(text, lines, (heading, level, path, anchor), units))
        links = extract_links(tokens, lines.first_file_line + 1)
        return Outline(_drop_empty(sections), first_h1, links)

    def _units(self, text: str, lines: _LineIndex, block: _Block, whole: _Unit) -> list[_Unit]:
        """The block as one unit, or, when over budget, split at its natural boundaries."""
        if whole.tokens <= self.max_tokens:
            return [whole]
        parts = block.parts or [(n, n + 1) for n in range(block.first_line, block.end_line)]
        pieces = [lines.chars(a, b) for a, b in parts]
        pieces = [(s, e) for s, e in pieces if text[s:e].strip()]
        counts = self.count_tokens([text[s:e] for s, e in pieces])
        units: list[_Unit] = []
        for (start, end), tokens in zip(pieces, counts, strict=True):
            unit = _Unit(block.kind, start, end, tokens)
            if tokens <= self.max_tokens:
                units.append(unit)
            elif end - start > 0 and text.count("\n", start, end) > 0:
                first = lines.line_of(start)
                sub = _Block(block.kind, first, lines.line_of(end - 1) + 1, [])
                units.extend(self._units(text, lines, sub, unit))
            else:
                units.extend(self._words(text, unit))
        return units

    def _words(self, text: str, unit: _Unit) -> list[_Unit]:
        """Split one over-long line between words; only a single giant word is cut inside."""
        words = [
            (m.start() + unit.start, m.end() + unit.start)
            for m in _WORD.finditer(text[unit.start : unit.end])
        ]
        counts = self.count_tokens([text[s:e] for s, e in words])
        units: list[_Unit] = []
        for (start, end), tokens in zip(words, counts, strict=True):
            if tokens <= self.max_tokens:
                units.append(_Unit(unit.kind, start, end, tokens))
                continue
            # A "word" longer than the whole budget (a base64 blob, a minified line):
            # cutting it is the only way to keep every part of it in the index.
            step = max(1, (end - start) * self.max_tokens // (tokens * 2))
            for cut in range(start, end, step):
                piece_end = min(end, cut + step)
                units.append(_Unit(unit.kind, cut, piece_end, self.count_tokens([text[cut:piece_end]])[0]))
        return units

    def _pack(
        self,
        text: str,
        lines: _LineIndex,
        group: _GroupKey,
        units: list[_Unit],
    ) -> list[Section]:
        heading, level, path, anchor = group
        chunks: list[list[_Unit]] = []
        budget = 0
        for unit in units:
            if chunks and budget + unit.tokens <= self.max_tokens:
                chunks[-1].append(unit)
                budget += unit.tokens
            else:
                chunks.append([unit])
                budget = unit.tokens
        sections = []
        for index, chunk in enumerate(chunks):
            start, end = chunk[0].start, _rstrip(text, chunk[0].start, chunk[-1].end)
            body_start = 0
            if chunk[0].kind == "heading":
                body_start = min(chunk[0].end, end) - start
            sections.append(
                Section(
                    heading=heading,
                    heading_level=level,
                    heading_path=path,
                    section_type=_dominant(chunk),
                    chunk_index=index,
                    start_position=start,
                    end_position=end,
                    start_line=lines.line_of(start) + lines.first_file_line + 1,
                    end_line=lines.line_of(max(start, end - 1)) + lines.first_file_line + 1,
                    text=text[start:end],
                    body_start=body_start,
                    token_count=sum(u.tokens for u in chunk),
                    anchor=anchor,
                )
            )
        return sections


class _LineIndex:
    """Maps body line numbers (markdown-it's token.map) to character offsets in the file text."""

    def __init__(self, text: str, body_offset: int) -> None:
        self.text = text
        self.first_file_line = text.count("\n", 0, body_offset)
        tail = re.finditer("\n", text[body_offset:])
        self.starts = [body_offset] + [body_offset + m.end() for m in tail]

    def chars(self, first_line: int, end_line: int) -> tuple[int, int]:
        start = self.starts[min(first_line, len(self.starts) - 1)]
        end = self.starts[end_line] - 1 if end_line < len(self.starts) else len(self.text)
        return start, max(start, end)

    def line_of(self, offset: int) -> int:
        """The body line holding a file offset (binary search over line starts)."""
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo


def _blocks(tokens: list[Token]) -> list[_Block]:
    """The top-level blocks of the token stream, with their line ranges and split points."""
    blocks: list[_Block] = []
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        if token.level == 0 and token.type == "heading_open":
            inline = tokens[index + 1] if index + 1 < len(tokens) else None
            title, anchor_id = split_attributes(" ".join((inline.content if inline else "").split()))
            plain = split_attributes(_rendered(inline))[0]
            level = int(token.tag[1:])
            blocks.append(
                _Block(
                    "heading", token.map[0], token.map[1], [], decode_entities(title), level, plain, anchor_id
                )
            )
        elif token.level == 0 and token.type in _BLOCK_TYPES:
            blocks.append(_Block(_BLOCK_TYPES[token.type], token.map[0], token.map[1], []))
        elif blocks and token.level == 1 and token.type in ("list_item_open",):
            blocks[-1].parts.append((token.map[0], token.map[1]))
        elif blocks and token.type == "tr_open":
            blocks[-1].parts.append((token.map[0], token.map[1]))
    return blocks


def split_attributes(heading: str) -> tuple[str, str]:
    """A heading's text without its trailing attribute list, and the `#id` that list names ("" if none).

    A heading that is nothing but an attribute list keeps its text: an empty heading says less.
    """
    match = _ATTRIBUTES.search(heading)
    if match is None or not heading[: match.start()].strip():
        return heading, ""
    ids = [a[1:] for a in re.findall(_ATTRIBUTE, match.group(1)) if a.startswith("#")]
    return heading[: match.start()].rstrip(), ids[-1] if ids else ""


def decode_entities(text: str) -> str:
    """HTML entities (`&ndash;`, `&amp;`, `&#8212;`) as the characters they stand for, as a page
    shows them; inside `code spans` they are literal text and stay."""
    parts = []
    last = 0
    for code in _CODE_SPAN.finditer(text):
        parts.append(_ENTITY.sub(lambda m: html.unescape(m.group()), text[last : code.start()]))
        parts.append(code.group())
        last = code.end()
    parts.append(_ENTITY.sub(lambda m: html.unescape(m.group()), text[last:]))
    return "".join(parts)


def titled_path(title: str, heading_path: Sequence[str]) -> list[str]:
    """The heading path led by the note's title, unless its first heading already is the title."""
    path = list(heading_path)
    if title and (not path or _same_words(path[0]) != _same_words(title)):
        path.insert(0, title)
    return path


def _same_words(text: str) -> str:
    """The words alone: "Runbook - restore" and "Runbook: restore" name the same note."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def _rendered(inline: Token | None) -> str:
    """An inline token's text as a reader sees it: link labels and code kept, markup and HTML dropped."""
    parts = []
    for child in inline.children or [] if inline else []:
        if child.type in ("text", "code_inline", "text_special"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def _group_by_heading(blocks: list[_Block]) -> list[tuple[_GroupKey, list[_Block]]]:
    groups: list[tuple[_GroupKey, list[_Block]]] = []
    stack: list[tuple[int, str]] = []
    slugger = Slugger()  # every heading takes its slug in order, as GitHub numbers repeats
    for block in blocks:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.heading))
            anchor = slugger.claim(block.anchor_id) if block.anchor_id else slugger.slug(block.plain)
            key = (block.heading, block.level, tuple(t for _, t in stack), anchor)
            groups.append((key, [block]))
        elif groups:
            groups[-1][1].append(block)
        else:
            groups.append((("", 0, (), ""), [block]))
    return groups


def _dominant(chunk: list[_Unit]) -> str:
    weights: dict[str, int] = {}
    for unit in chunk:
        if unit.kind != "heading":
            weights[unit.kind] = weights.get(unit.kind, 0) + max(unit.tokens, 1)
    return max(weights, key=lambda k: weights[k]) if weights else "heading"


def _drop_empty(sections: list[Section]) -> list[Section]:
    """Drop blank sections, and headings with no text of their own whose subsections follow.

    A bare parent heading adds nothing: its text already leads every child's heading path.
    A bare heading with nothing under it (a note that is only "# Buy milk") is kept.
    """
    kept = []
    for index, section in enumerate(sections):
        if not section.text.strip():
            continue
        following = sections[index + 1] if index + 1 < len(sections) else None
        bare = not section.body_text
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

    The title leads every heading path, so a section is embedded knowing which note it is in.
    """
    outline = sectioner.split(document.text, document.body_offset)
    title = decode_entities(document.fm_text("title")) or outline.first_h1 or Path(document.path).stem
    inputs = []
    for section in outline.sections:
        prefix = " > ".join(titled_path(title, section.heading_path))
        inputs.append((prefix, section.body_text or section.heading))
    return outline, title, inputs

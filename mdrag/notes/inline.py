"""Inline text: code spans, attribute lists and entities of a heading or paragraph, in linear time."""

from __future__ import annotations

import bisect
import html
import re

_BACKTICKS = re.compile(r"`+")
# A trailing attribute list, as Hugo (Goldmark), Pandoc, kramdown and PHP Markdown Extra write
# it: `{#id}`, `{.class}`, `{key=val}`, `{: #id .class key="a b"}`. A brace group of other words
# (`## Using {braces}`) is heading text and stays.
_ATTRIBUTE = r"""(?:#[^\s{}#.]+|\.[\w-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s"'{}]+)|-)"""
_ATTRIBUTES = re.compile(r"\{:?\s*(" + _ATTRIBUTE + r"(?:\s+" + _ATTRIBUTE + r")*)\s*\}$")
# An attribute list is a few words at the very end: only a brace this near the end may open one,
# so a heading of a thousand braces costs one short look, not one look per brace.
ATTRIBUTES_TAIL = 1024
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def code_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each code span, as CommonMark finds them: a run of backticks opens one,
    the next run of the same length closes it, and a run nothing closes is literal text.

    Linear in the text (each run's closer is found by a search among the runs of its length), where
    a regular expression scanned to the end of the text from every unclosed run: a heading of
    backtick runs of growing length took minutes."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    starts_by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        starts_by_length.setdefault(end - start, []).append(index)
    spans = []
    index = 0
    while index < len(runs):
        start, end = runs[index]
        same = starts_by_length[end - start]
        closer = bisect.bisect_right(same, index)
        if closer < len(same):
            spans.append((start, runs[same[closer]][1]))
            index = same[closer] + 1
        else:
            index += 1  # unclosed: its backticks are text, and the runs after it still open spans
    return spans


def decode_entities(text: str) -> str:
    """HTML entities (`&ndash;`, `&amp;`, `&#8212;`) as the characters they stand for, as a page
    shows them; inside `code spans` they are literal text and stay."""
    parts = []
    last = 0
    for start, end in code_spans(text):
        parts.append(_ENTITY.sub(_unescape, text[last:start]))
        parts.append(text[start:end])
        last = end
    parts.append(_ENTITY.sub(_unescape, text[last:]))
    return "".join(parts)


def _unescape(match: re.Match[str]) -> str:
    return html.unescape(match.group())


def split_attributes(heading: str) -> tuple[str, str]:
    """A heading's text without its trailing attribute list, and the `#id` that list names ("" if none).

    A heading that is nothing but an attribute list keeps its text: an empty heading says less.
    """
    text = heading.rstrip()
    if not text.endswith("}"):
        return heading, ""
    match = None
    opening = text.find("{", max(0, len(text) - ATTRIBUTES_TAIL))
    while opening != -1:  # the first brace that opens a list running to the end
        match = _ATTRIBUTES.match(text, opening)
        if match is not None:
            break
        opening = text.find("{", opening + 1)
    if match is None or not text[:opening].strip():
        return heading, ""
    ids = [a[1:] for a in re.findall(_ATTRIBUTE, match.group(1)) if a.startswith("#")]
    return text[:opening].rstrip(), ids[-1] if ids else ""

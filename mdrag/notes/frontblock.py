"""Frontblock: a note's frontmatter (YAML `---`, TOML `+++`, a JSON object), split off and read in bounds."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

import yaml
from frontmatter.default_handlers import BaseHandler, YAMLHandler

if sys.version_info >= (3, 11):
    import tomllib
else:  # the standard library's TOML parser, as published for Python 3.10
    import tomli as tomllib

# Frontmatter is a few keys; these bounds keep a hostile block (a "billion laughs" alias bomb,
# nesting thousands deep) from costing more than a moment. Past them the note is indexed as text.
MAX_FRONTMATTER_CHARS = 64 * 1024
MAX_FRONTMATTER_DEPTH = 64
MAX_FRONTMATTER_NODES = 20_000  # values once every alias is expanded
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_JSON = json.JSONDecoder()
# A frontmatter key opening a line: YAML's `key:` (spaces in it too: "external help file:"),
# TOML's `key =`, JSON's `"key":`; looked for among a block's first lines.
_KEY = re.compile(r"""["']?[\w][\w .'"-]{0,60}["']?\s*(?::(?:\s|$)|=)""")
_LOOK_LINES = 20
# A TOML key of more than MAX_FRONTMATTER_DEPTH dotted parts (`a.b.c = 1`, `[a.b.c]`, in an
# inline table too), each a level of nesting: tomllib reads one in time and memory that grow
# with the square of its parts (30,000 parts, 14.5 s and 3.4 GB), so it is refused unread.
# A match starts only where a key part can (not inside a word or a string: from each place in a
# long word, the search would scan the word again).
_DOTTED_KEY = re.compile(
    r"(?<![\w\"'-])(?:(?:[\w-]+|\"[^\"\n]*\"|'[^'\n]*')[ \t]*\.[ \t]*){" + str(MAX_FRONTMATTER_DEPTH) + "}"
)


class _YamlHandler(YAMLHandler):
    """YAML between `---` lines, or closed by `...` (YAML's end of a document, as pandoc's
    metadata blocks may be): python-frontmatter's own split, with that closing line too."""

    FM_BOUNDARY = re.compile(r"^(?:-{3,}|\.{3})\s*$", re.MULTILINE)

    def detect(self, text: str) -> bool:
        return bool(YAMLHandler.FM_BOUNDARY.match(text))  # it opens with `---` alone


class _TomlHandler(BaseHandler):
    """TOML between `+++` lines: what `hugo new` writes by default, and all Zola reads.
    python-frontmatter splits it as its own TOMLHandler does; the standard library reads it
    (that handler needs the old `toml` package)."""

    FM_BOUNDARY = re.compile(r"^\+{3,}\s*$", re.MULTILINE)


class _JsonHandler(BaseHandler):
    """A JSON object opened by a brace alone on the first line: Hugo's third format. It ends
    where the object does, as Hugo reads it (a nested object may close at the line's start), with
    the rest of that line; one that does not parse is split at the first brace alone on a line,
    python-frontmatter's way, so the warning names the fault (or says it never closed)."""

    FM_BOUNDARY = re.compile(r"^[{}][ \t\r]*$", re.MULTILINE)

    def detect(self, text: str) -> bool:
        return text.startswith("{") and bool(self.FM_BOUNDARY.match(text))

    def split(self, text: str) -> tuple[str, str]:
        try:
            _, end = _JSON.raw_decode(text[: MAX_FRONTMATTER_CHARS + 1])
        except (json.JSONDecodeError, RecursionError):
            end = -1
        line_end = text.find("\n", end) if end >= 0 else -1
        rest = text[end:] if line_end < 0 else text[end:line_end]
        if end >= 0:  # what follows the brace on its line is read too: text there is a fault
            return text[: end + len(rest)], text[end + len(rest) :]
        _, raw, content = self.FM_BOUNDARY.split(text, 2)
        return "{" + raw + "}", content


class FrontmatterTooLarge(ValueError):
    """A frontmatter block past the bounds (size, nesting, values once aliases are expanded)."""


def split_frontmatter(text: str) -> tuple[dict[str, Any], int, bool, str]:
    """(frontmatter, body offset, has frontmatter, warning) for a note's text.

    Malformed frontmatter never fails the note: its whole text is kept as body, so nothing the
    author wrote drops out of the index, and the warning says what to fix.
    """
    found = next(((handler, form) for handler, form in _FORMATS if handler.detect(text)), None)
    if found is None:
        return {}, 0, False, ""
    handler, (delimiter, name, load) = found
    try:
        raw, body_offset = _split(handler, text)
    except ValueError:
        return {}, 0, False, f"frontmatter opened with '{delimiter}' but never closed; indexed as text"
    try:
        loaded = load(raw)
    except FrontmatterTooLarge as exc:
        return {}, 0, False, f"frontmatter {exc}; indexed as text"
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        problem = " ".join(str(exc).split())
        return {}, 0, False, f"malformed {name} frontmatter, indexed as text: {problem}"
    if loaded is None:
        return {}, body_offset, True, ""
    if not isinstance(loaded, dict):
        return {}, 0, False, "frontmatter is not a mapping of keys to values; indexed as text"
    # JSON-safe values, so dates and other YAML and TOML types store cleanly in Milvus.
    return {str(k): _json_safe(v) for k, v in loaded.items()}, body_offset, True, ""


def block_end(text: str) -> int:
    """Where the note's frontmatter block ends, read or not: the offset past its closing line; 0
    for none, one never closed, one past the size bound, or one whose first line (past blank and
    comment lines) is no key (`title:`, `title =`, `"title":`): a note may open with a `---` rule
    over its markdown. A block that was not read still ends there: `created: {{date}}` (an
    Obsidian template's) or an unquoted `title: Kubernetes: the hard way` is YAML refused, not
    the markdown of a heading."""
    found = next((handler for handler, _ in _FORMATS if handler.detect(text)), None)
    try:
        raw, end = ("", 0) if found is None else _split(found, text)
    except ValueError:
        return 0
    if len(raw) > MAX_FRONTMATTER_CHARS:
        return 0
    lines = (line.strip() for line in raw.splitlines()[:_LOOK_LINES])
    first = next((line for line in lines if line and line not in "{}" and not line.startswith("#")), "")
    return end if _KEY.match(first) else 0


def _split(handler: BaseHandler, text: str) -> tuple[str, int]:
    """The block's text and where the body starts (past the closing line's end); ValueError
    when the block never closes."""
    raw, content = handler.split(text)
    body_offset = len(text) - len(content)
    return raw, body_offset + 1 if content.startswith("\n") else body_offset


def load_yaml(raw: str) -> Any:
    """YAML's safe load, bounded: the text's size, its nesting (checked on the event stream,
    before the recursive composer sees it) and its size with every alias expanded (counted on
    the node graph, where an alias is one shared node, before anything is built from it)."""
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterTooLarge(f"is over {MAX_FRONTMATTER_CHARS} characters")
    depth = 0
    for event in yaml.parse(raw, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_FRONTMATTER_DEPTH:
                raise FrontmatterTooLarge(f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    loader = _Loader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_FRONTMATTER_NODES:
            raise FrontmatterTooLarge(f"expands to over {MAX_FRONTMATTER_NODES} values (YAML aliases)")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(node: yaml.Node, sizes: dict[int, float]) -> float:
    """How many values the node stands for once its aliases are copied out (memoized per
    shared node, so a bomb is counted in the time of its few nodes; a cycle is infinite)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    sizes[key] = float("inf")  # still being counted: reached again means a recursive alias
    if isinstance(node, yaml.SequenceNode):
        total = 1 + sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    else:
        total = 1
    sizes[key] = total
    return total


_INT64 = 2**63


def _json_safe(value: Any) -> Any:
    """A frontmatter value as JSON the engine accepts: text for dates, big numbers, NaN and
    other types; no lone surrogates (a YAML "\\ud800" escape). Bounded by the nesting check."""
    if isinstance(value, dict):
        return {_json_safe(str(k)): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    text = value if isinstance(value, str) else str(value)
    return text.encode("utf-8", "replace").decode("utf-8")


def load_toml(raw: str) -> dict[str, Any]:
    """TOML's load, bounded: the text's size, and its nesting (the parser recurses into each
    array and inline table: a block nested past Python's recursion limit stops it at once)."""
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterTooLarge(f"is over {MAX_FRONTMATTER_CHARS} characters")
    if _DOTTED_KEY.search(raw):  # before the parser, which is slow on them
        raise FrontmatterTooLarge(f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
    try:
        loaded: dict[str, Any] = tomllib.loads(raw)
    except RecursionError:
        raise FrontmatterTooLarge(f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels") from None
    if _deeper_than(loaded, MAX_FRONTMATTER_DEPTH):
        raise FrontmatterTooLarge(f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
    return loaded


def _deeper_than(value: Any, levels: int) -> bool:
    if not isinstance(value, (dict, list)):
        return False
    if levels == 0:
        return True
    children = value.values() if isinstance(value, dict) else value
    return any(_deeper_than(child, levels - 1) for child in children)


def load_json(raw: str) -> Any:
    """JSON's load, bounded: the text's size, and its nesting (the decoder recurses into each
    array and object)."""
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterTooLarge(f"is over {MAX_FRONTMATTER_CHARS} characters")
    try:
        loaded = json.loads(raw)
    except RecursionError:
        raise FrontmatterTooLarge(f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels") from None
    if _deeper_than(loaded, MAX_FRONTMATTER_DEPTH):
        raise FrontmatterTooLarge(f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
    return loaded


_FORMATS: tuple[tuple[BaseHandler, tuple[str, str, Callable[[str], Any]]], ...] = (
    (_YamlHandler(), ("---", "YAML", load_yaml)),
    (_TomlHandler(), ("+++", "TOML", load_toml)),
    (_JsonHandler(), ("{", "JSON", load_json)),
)

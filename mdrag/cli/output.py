"""Output: every line the CLI writes, its text cleaned of control sequences, styled by mdrag alone.

What a line shows comes from notes and file names (hits, headings, paths, reports, error
messages naming a path), so `say` cleans every part's text (termtext.clean) as it writes it, on a
terminal and in a pipe alike. Styling is no part of that text: a part asks for it (`Styled`,
`Link`), and `say` adds mdrag's own colour codes and OSC 8 links only for a terminal that wants
them, after the cleaning, so nothing a note holds can pass for them. `--json` goes out as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import click

from mdrag.notes.opener import file_uri, hyperlink, hyperlinks_wanted
from mdrag.termtext import clean, json_safe


@dataclass(frozen=True)
class Styled:
    """Text in mdrag's colours (click's names), on a terminal that takes colour."""

    text: str
    fg: str | None = None
    bold: bool = False
    dim: bool = False


@dataclass(frozen=True)
class Link:
    """Text that opens the note at `path` when clicked, on a terminal that draws OSC 8 links."""

    text: str
    path: str


Part = str | Styled | Link


def say(*parts: Part, err: bool = False) -> None:
    """Write one line of these parts, each part's text cleaned, to stdout (stderr with `err`)."""
    stream = sys.stderr if err else sys.stdout
    colour = _is_terminal(stream) and not os.environ.get("NO_COLOR")
    links = hyperlinks_wanted(stream)
    click.echo("".join(_written(part, colour, links) for part in parts), err=err, color=colour)


def say_json(value: Any, ascii_only: bool = False) -> None:
    """`value` as indented JSON: exact, its control characters written as escapes."""
    click.echo(json_safe(json.dumps(value, indent=2, ensure_ascii=ascii_only)))


def _written(part: Part, colour: bool, links: bool) -> str:
    if isinstance(part, str):
        return clean(part)
    text = clean(part.text)
    if isinstance(part, Link):
        return hyperlink(text, file_uri(part.path)) if links else text
    if colour and text:
        return click.style(text, fg=part.fg, bold=part.bold or None, dim=part.dim or None)
    return text


def _is_terminal(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())

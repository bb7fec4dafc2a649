"""Options: what the search-like commands ask alike (the mode, the scope), declared once for each."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mdrag.params.scope import Scope
from mdrag.params.search import SEARCH_MODES

Command = TypeVar("Command", bound=Callable[..., Any])

mode_option = click.option("--mode", type=click.Choice(SEARCH_MODES), help="Retrieval mode.")


def scope_options(command: Command) -> Command:
    """--tag and --path on a command that searches, handed to it whole as `scope` (a Scope),
    checked as the socket checks it. A path is left as typed: the command reads it once the
    roots it may start from are known (the route's Paths.typed)."""

    @functools.wraps(command)
    def with_scope(*args: Any, tags: tuple[str, ...], path_prefix: str | None, **kwargs: Any) -> Any:
        scope = Scope.parse({"tags": list(tags) or None, "path_prefix": path_prefix or None})
        return command(*args, scope=scope, **kwargs)

    tag = click.option(
        "--tag", "tags", multiple=True, help="Only notes with this tag (repeat for any of several)."
    )
    under = click.option("--path", "path_prefix", help="Only notes under this path.")
    return tag(under(with_scope))  # type: ignore[return-value]

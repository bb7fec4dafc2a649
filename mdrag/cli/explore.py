"""CLI commands beyond search: similar, duplicates, related, gaps and context (daemon or direct)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from mdrag.cli.command import command_config
from mdrag.cli.options import scope_options
from mdrag.cli.output import Styled, say, say_json
from mdrag.client.paths import Paths, visible
from mdrag.client.route import open_route
from mdrag.errors import QueryError
from mdrag.params.fields import MAX_DRAFT_CHARS

if TYPE_CHECKING:
    from collections.abc import Callable

    from mdrag.answers.notes import (
        ContextPack,
        DuplicatesAnswer,
        Gap,
        GapsAnswer,
        RelatedAnswer,
        RelatedNote,
        SimilarAnswer,
    )
    from mdrag.params.scope import Scope

GROUP_SHOWN = 5  # notes of a duplicate group listed in text; --json has them all


def run(ctx: click.Context, op: str, **params: Any) -> tuple[Any, Paths]:
    """One read operation through the daemon when it runs, else on the index opened here: its
    answer, and the paths it names as the route shows them. A `note` or `path_prefix` is read as
    typed once the roots are known (Paths.typed)."""
    config = command_config(ctx)
    with open_route(config, quiet=True) as route:
        for name in ("note", "path_prefix"):
            if params.get(name):
                params[name] = route.paths.typed(params[name])
        return route.call(op, **{k: v for k, v in params.items() if v is not None}), route.paths


def emit(result: object, as_json: bool) -> bool:
    """Print `result` as JSON when asked; True when done."""
    if as_json:
        say_json(result)
    return as_json


def nothing_to_give() -> None:
    """Search and context with nothing to give exit 1, as grep does: `mdrag context q | llm` stops."""
    raise click.exceptions.Exit(1)


def read_text_arg(value: str, limit: int = MAX_DRAFT_CHARS) -> str:
    """A FILE or `-` (stdin) argument's text, read up to `limit` characters: one over is refused
    here, naming the limit, not sent (12 MB on stdin once ended with nothing said) nor read on."""
    if value == "-":
        text = sys.stdin.read(limit + 1)
    else:
        try:
            with open(os.path.expanduser(value), encoding="utf-8", errors="replace") as handle:
                text = handle.read(limit + 1)
        except OSError as exc:
            raise click.BadParameter(f"cannot read {value}: {exc.strerror}") from None
    if len(text) > limit:
        source = "stdin" if value == "-" else value
        raise QueryError(f"the text from {source} is over {limit:,} characters, the most a draft may have")
    return text


@click.command()
@click.argument("note", required=False, type=click.Path())
@click.option("-k", "k", type=int, default=10, show_default=True, help="How many notes.")
@click.option("--text", "text_source", metavar="FILE|-", help="Compare a draft (a file, or - for stdin).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_context
def similar(ctx: click.Context, note: str | None, k: int, text_source: str | None, as_json: bool) -> None:
    """The notes most similar to NOTE (or to a draft), scored 0-100: near-duplicate at 90 and above,
    closely related at 70 and above, related from 40; a note under 40 is not listed."""
    if (note is None) == (text_source is None):
        raise click.UsageError("give either NOTE or --text FILE|-")
    result: SimilarAnswer
    if text_source is not None:
        result, paths = run(ctx, "similar", text=read_text_arg(text_source), k=k)
    else:
        result, paths = run(ctx, "similar", note=note, k=k)
    if emit(result, as_json):
        return
    if not result["results"]:
        say(f"No similar notes (none scores {result.get('floor', 40)} or more).")
    for item in result["results"]:
        say(f"{item['score']:>3}  {item['tier']:<15}  {paths.shown(item['path'])}")  # 15: closely related


@click.command()
@click.option("--min-score", type=int, default=90, show_default=True, help="Lowest pair score (50-100).")
@click.option(
    "--limit", type=int, default=1000, show_default=True, help="Groups to list (--json: and pairs)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_context
def duplicates(ctx: click.Context, min_score: int, limit: int, as_json: bool) -> None:
    """Notes scoring at least --min-score with another, grouped (a pair is a group of two):
    candidates to merge."""
    result: DuplicatesAnswer
    result, paths = run(ctx, "duplicates", min_score=min_score, limit=limit)
    if emit(result, as_json):
        return
    groups = result.get("groups")
    if groups is None:  # a daemon from before groups: each pair a group of two
        groups = [{"notes": [p["a"], p["b"]], "best_score": p["score"], "pairs": 1} for p in result["pairs"]]
    for group in groups:
        notes = group["notes"]
        if len(notes) > 2:
            say(f"{group['best_score']:>3}  {len(notes)} notes, each {min_score}+ with another of them:")
        else:
            say(f"{group['best_score']:>3}  {paths.shown(notes[0])}")
            notes = notes[1:]
        for path in notes[:GROUP_SHOWN]:
            say(f"     {paths.shown(path)}")
        if len(notes) > GROUP_SHOWN:
            say(f"     … and {len(notes) - GROUP_SHOWN} more (--json lists them)")
    if not result.get("complete", True):
        say("(the scan stopped at its limit of candidate pairs; raise --min-score to see them all)")
    total = result["total_pairs"]
    total_groups = result.get("total_groups", len(groups))  # a daemon from before said only those shown
    summary = f"({total} pair{'s' * (total != 1)} at {min_score} or above"
    cut = len(groups) < total_groups  # --limit: the count says how many there are
    if total_groups != total or cut:
        summary += f", in {total_groups} group{'s' * (total_groups != 1)}"
    if cut:
        summary += f"; {len(groups)} shown"
    say(summary + ")")


def relation_lines(items: list[RelatedNote], shown: Callable[[str], str]) -> list[str]:
    """Each related note as 'links to, similar   notes/x.md  (0.71, similar)', its relations
    padded to the widest of them, so every path starts in one column and none touches them."""
    labels = [", ".join(item["relations"]) for item in items]
    width = max(map(len, labels), default=0)
    lines = []
    for label, item in zip(labels, items, strict=True):
        score = f"  ({item['score']}, {item['tier']})" if item["score"] is not None else ""
        lines.append(f"{label:<{width}}  {shown(item['path'])}{score}")
    return lines


@click.command()
@click.argument("note", type=click.Path())
@click.option("-k", "k", type=int, default=10, show_default=True, help="How many similar notes.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_context
def related(ctx: click.Context, note: str, k: int, as_json: bool) -> None:
    """NOTE's links, backlinks and semantic neighbours, each labelled by how it relates."""
    result: RelatedAnswer
    result, paths = run(ctx, "related", note=note, k=k)
    if emit(result, as_json):
        return
    for line in relation_lines(result["related"], paths.shown):
        say(line)
    for link in result["broken_links"]:
        say(Styled(f"broken link, line {link['line']}: {link['target']}", fg="red"))
    if not result["related"] and not result["broken_links"]:
        say("Nothing related.")


@click.group(invoke_without_command=True)
@click.option(
    "--status", type=click.Choice(["open", "deferred", "addressed"]), help="Only gaps in this state."
)
@click.option("--json", "as_json", is_flag=True, help="Print the gaps as one JSON object.")
@click.pass_context
def gaps(ctx: click.Context, status: str | None, as_json: bool) -> None:
    """Searches your notes could not answer, most frequent first."""
    if ctx.invoked_subcommand is not None:
        return
    result: GapsAnswer
    result, paths = run(ctx, "gaps", status=status)
    if emit(result, as_json):
        return
    if not result["gaps"]:
        say(f"No {status} knowledge gaps." if status else "No knowledge gaps recorded.")
    for gap in result["gaps"]:
        maybe = gap["possibly_addressed_by"]
        hint = f"  (maybe answered by {paths.shown(maybe)})" if maybe and gap["status"] == "open" else ""
        say(f"{gap['count']:>4}x  {gap['status']:<9} {gap['query']}{hint}")


@gaps.command("resolve")
@click.argument("query")
@click.option(
    "--status",
    type=click.Choice(["addressed", "deferred", "open"]),
    default="addressed",
    show_default=True,
    help="The gap's new state.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the updated gap as one JSON object.")
@click.pass_context
def resolve_gap(ctx: click.Context, query: str, status: str, as_json: bool) -> None:
    """Mark the gap recorded for QUERY as addressed (or deferred, or open again)."""
    gap: Gap
    gap, _ = run(ctx, "gap_status", query=query, status=status)
    if not emit(gap, as_json):
        say(f"{gap['query']}: {gap['status']}")


@click.command()
@click.argument("query")
@click.option("--max-tokens", type=int, default=2000, show_default=True, help="Token budget of the pack.")
@scope_options
@click.option("--json", "as_json", is_flag=True, help="Print the pack and its sources as one JSON object.")
@click.pass_context
def context(
    ctx: click.Context,
    query: str,
    max_tokens: int,
    scope: Scope,
    as_json: bool,
) -> None:
    """A prompt-ready pack of the sections that best answer QUERY, with citations, within a budget."""
    result: ContextPack
    result, _ = run(
        ctx,
        "context",
        query=query,
        max_tokens=max_tokens,
        **scope.to_request(),
    )
    if not emit(result, as_json):
        if not result["sources"]:
            say(f"# No context: {result['message'] or 'nothing matched'}.", err=True)
        else:
            say(f"Notes relevant to: {result['query']}\n")
            text = result["context"]
            for source in result["sources"]:  # a cited name's controls as ?, never dropped to another name
                text = text.replace(source["path"], visible(source["path"]))
            say(text)
    if not result["sources"]:
        nothing_to_give()


COMMANDS = (similar, duplicates, related, gaps, context)

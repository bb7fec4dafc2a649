"""CLI: `mdrag serve|search|reindex|status`; talks to the daemon when it runs, else opens the index itself.

Imports stay light (no torch, no pymilvus) so that a search through the daemon starts fast;
the heavy modules load only when a command has to open the index in this process.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from mdrag import __version__
from mdrag.cli import render
from mdrag.cli.command import command_config, progress_bar
from mdrag.cli.explore import COMMANDS, nothing_to_give, read_text_arg
from mdrag.cli.options import mode_option, scope_options
from mdrag.cli.output import say, say_json
from mdrag.client.route import configure_command_logging, open_route
from mdrag.errors import MdragError, QueryError
from mdrag.notes.opener import add_uris, editor_argv, run_editor
from mdrag.retrieval.excerpt import shown_mark
from mdrag.termtext import visible

if TYPE_CHECKING:
    # the wire's shapes, for the type checker: building ~40 TypedDicts costs each search process ~3 ms
    from mdrag.answers.search import SearchAnswer
    from mdrag.params.scope import Scope


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="YAML config file.")
# The version from the package itself: click would otherwise read the installed metadata
# through importlib.metadata, ~20 ms of every `mdrag --version`.
@click.version_option(version=__version__, prog_name="mdrag")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """Local semantic search over markdown notes."""
    ctx.obj = {"config_path": config_path}  # loaded by the command: a --config after it may follow


@cli.command()
@click.option(
    "--root", "roots", multiple=True, type=click.Path(file_okay=False), help="A notes folder (repeatable)."
)
@click.option("--log-level", help="TRACE, DEBUG, INFO, WARNING or ERROR.")
@click.pass_context
def serve(ctx: click.Context, roots: tuple[str, ...], log_level: str | None) -> None:
    """Run the daemon in the foreground: watch the roots, keep the index fresh, answer on the socket."""
    from mdrag.files import private

    private.restrict_umask()  # before anything is made: the index, its logs, the socket's folder
    config = command_config(
        ctx,
        need_roots=True,
        roots=tuple(os.path.abspath(os.path.expanduser(r)) for r in roots) or None,
        log_level=log_level,
    )
    from mdrag.embedding import heap
    from mdrag.log import configure_logging

    heap.share_one_arena()  # before any thread starts: what indexing frees goes back to the system
    configure_logging(config.log_level)
    from mdrag.client.route import lock_index_for_daemon

    lock = lock_index_for_daemon(config)  # before the heavy imports: a second writer is refused at once
    from mdrag.serve.daemon import Daemon  # heavy: loads the model and opens the index

    sys.exit(Daemon(config, lock).run())


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--force", is_flag=True, help="Re-read every file even if its hash is unchanged.")
@click.option("--rebuild", is_flag=True, help="Drop the index and build it again from the files.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's report as one JSON object.")
@click.pass_context
def reindex(ctx: click.Context, paths: tuple[str, ...], force: bool, rebuild: bool, as_json: bool) -> None:
    """Index the notes under the roots (or only PATHS); report what changed."""
    config = command_config(ctx, need_roots=not paths)
    from mdrag.embedding import heap

    heap.share_one_arena()  # before any thread starts: it may index here, without a daemon
    if paths and not config.roots:
        # With no roots configured: those the index was last opened with (a daemon's --root) when
        # every path named is under them, else the folders named here.
        from mdrag.client.paths import Paths
        from mdrag.files.indexfiles import IndexFiles

        recorded = IndexFiles.of(config).recorded_roots()
        known = Paths(recorded)
        typed = [known.typed(p) for p in paths]
        within = all(known.holds(p) for p in typed)
        named = tuple(p for p in typed if os.path.isdir(p))
        config = config.with_overrides(roots=tuple(recorded) if recorded and within else named or None)
    with open_route(config, quiet=as_json, create=True) as route, progress_bar(quiet=as_json) as show:
        # A path as text output shows it (`notes/runbooks`) is taken under its root, as `--path` is.
        report = route.reindex([route.paths.typed(p) for p in paths], force, rebuild, show)
    if as_json:
        say_json(report, ascii_only=True)
        return
    render.reindex_report(report, route.paths)


@cli.command()
@click.argument("query", required=False)
@click.option("-k", "--top-k", type=int, help="How many hits at most (1-100).")
@click.option("--threshold", type=float, help="Minimum relevance score (0-1, default 0.7).")
@mode_option
@scope_options
@click.option(
    "--wait-fresh",
    type=float,
    is_flag=False,
    flag_value=30.0,
    default=None,
    help="Wait (up to SECONDS, default 30) until the daemon has applied every pending change.",
)
@click.option(
    "--selected",
    metavar="FILE|-",
    help="Use a passage (10-5000 characters) from a file or stdin as the query.",
)
@click.option(
    "--explain", is_flag=True, help="Show each hit's dense score and ranks, and what the threshold cut."
)
@click.option("--open", "open_n", type=int, metavar="N", help="Open the Nth hit in your editor.")
@click.option("--json", "as_json", is_flag=True, help="Print the response as one JSON object.")
@click.pass_context
def search(
    ctx: click.Context,
    query: str | None,
    top_k: int | None,
    threshold: float | None,
    mode: str | None,
    scope: Scope,
    wait_fresh: float | None,
    selected: str | None,
    explain: bool,
    open_n: int | None,
    as_json: bool,
) -> None:
    """Find the sections of your notes closest in meaning to QUERY (or to a --selected passage)."""
    config = command_config(ctx)
    params: dict[str, Any] = {"query": query or ""}
    if selected is None and query is None:
        raise click.UsageError("give a QUERY, or a passage with --selected FILE|-")
    if selected is not None:
        if query:
            raise click.UsageError("give either QUERY or --selected, not both")
        params = {"selection": read_text_arg(selected)}
    if explain:
        params["explain"] = True
    for key, value in (("top_k", top_k), ("threshold", threshold), ("mode", mode)):
        if value is not None:
            params[key] = value
    params.update(scope.to_request())
    from mdrag.params.search import SearchParams, search_defaults

    # Parsed once, before any index is opened (a bad query fails fast): the index opened here
    # searches on these; the daemon is sent the fields given (by flags, or set by this process's
    # config: search_defaults), and fills the rest from its config.
    asked = SearchParams.parse(params, search_defaults(config))
    with open_route(config, quiet=True) as route:
        if scope.path_prefix:  # as typed, once the roots it may start from are known
            typed_scope = dataclasses.replace(scope, path_prefix=route.paths.typed(scope.path_prefix))
            asked = dataclasses.replace(asked, scope=typed_scope)
        response = route.search(asked, wait_fresh)  # a local index is as fresh as it gets
    if as_json:
        say_json(add_uris(dict(response)))
    else:
        render.search_answer(response, route.paths)  # nothing to give: stdout stays empty
    if not response["results"]:
        nothing_to_give()
    if open_n is not None:
        _open_hit(ctx, response, open_n)


@cli.command("open")
@click.argument("query")
@click.argument("n", type=int, default=1)
@click.option("--print", "print_only", is_flag=True, help="Print the command (one word a line), run nothing.")
@click.pass_context
def open_command(ctx: click.Context, query: str, n: int, print_only: bool) -> None:
    """Open the Nth hit (default 1) of QUERY in your editor: `open.command` in the config
    (e.g. `code --goto {path}:{line}`), else $VISUAL, else $EDITOR, else xdg-open."""
    config = command_config(ctx)
    from mdrag.params.search import SearchParams, search_defaults

    asked = SearchParams.parse({"query": query, "top_k": max(n, 1)}, search_defaults(config))
    with open_route(config, quiet=True) as route:
        response = route.search(asked)
    if not response["results"]:
        render.search_answer(response, route.paths)  # why, on stderr
        nothing_to_give()
    _open_hit(ctx, response, n, print_only)


def _open_hit(ctx: click.Context, response: SearchAnswer, n: int, print_only: bool = False) -> None:
    """Run the editor on hit N (1-based) at its matched line: one argv, never a shell."""
    hits = response["results"]
    if not 1 <= n <= len(hits):
        raise click.UsageError(f"there is no hit {n}: the search gave {len(hits)}")
    hit = hits[n - 1]
    snippet = hit.get("snippet") or {}
    line = snippet.get("start_line") or hit["start_line"]
    mark = shown_mark(snippet["text"], [(a, b) for a, b in snippet["highlights"]]) if snippet else None
    if mark is not None and snippet.get("start_line"):  # the line the words shown are on
        line += snippet["text"][:mark].count("\n")
    argv = editor_argv(hit["file_path"], line, ctx.obj["config"].open_command)
    if print_only:
        render.editor_command(argv)
        return
    try:
        code = run_editor(argv, wait=True)
    except OSError as exc:
        raise MdragError(f"cannot run {argv[0]!r} to open the hit: {exc.strerror or exc}") from None
    if code:
        raise MdragError(f"{argv[0]} exited with {code}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show what the index holds: documents by status, sections, failures."""
    config = command_config(ctx)
    with open_route(config, quiet=True) as route:
        report = route.status()
    if as_json:
        say_json(report)
        return
    render.status(report, route.paths)


@cli.command("ui")
@click.option("--no-browser", is_flag=True, help="Print the page's address instead of opening it.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port on 127.0.0.1 (0: a free one).")
@click.pass_context
def ui_command(ctx: click.Context, no_browser: bool, port: int) -> None:
    """A search page in your browser, served on this machine only (127.0.0.1, a key per run).

    Its own process, a client of the running daemon; it never opens the index itself, so `mdrag
    serve` and `mdrag search` work beside it: with no daemon it says to start one."""
    config = command_config(ctx)
    from mdrag.ui.client import PageClient
    from mdrag.ui.serve import serve  # the web framework loads only for this command

    serve(PageClient(config.server_socket_path), config, open_browser=not no_browser, port=port)


@cli.command("mcp")
@click.pass_context
def mcp_command(ctx: click.Context) -> None:
    """Serve search, similar, related, context and status to an AI assistant (MCP on stdio).

    A client of the running daemon (`mdrag serve`); it never opens the index itself."""
    config = command_config(ctx)
    configure_command_logging(config, quiet=True)  # stderr only: stdout carries the protocol
    from mdrag.cli.mcp_server import build_server  # the MCP SDK loads only for this command

    build_server(config.server_socket_path).run("stdio")


for _command in COMMANDS:
    cli.add_command(_command)


def _config_after_command(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.obj["config_path"] = value


def _accept_config_after(command: click.Command) -> None:
    """`mdrag search --config x.yaml q` as well as `mdrag --config x.yaml search q`."""
    command.params.append(
        click.Option(
            ["--config"],
            type=click.Path(dir_okay=False),
            expose_value=False,
            is_eager=True,
            callback=_config_after_command,
            help="YAML config file (also accepted before the command).",
        )
    )
    for sub in getattr(command, "commands", {}).values():
        _accept_config_after(sub)


for _command in cli.commands.values():
    _accept_config_after(_command)


def main() -> None:
    """Console entry point, and the one place exit codes are decided:

    0  an answer (for search and context: at least one hit or source)
    1  nothing to give (search or context found nothing: the reason on stderr, stdout empty
       unless --json), or an error (`Error: ...` on stderr); bugs stay tracebacks (also 1)
    2  a usage error (a bad option, or an argument out of its limits: `Error: ...` on stderr)
    130 interrupted
    """
    try:
        code = cli.main(standalone_mode=False)  # click returns an Exit's code here
    except click.exceptions.Abort:
        say("Aborted.", err=True)
        sys.exit(130)
    except click.exceptions.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except QueryError as exc:  # an argument out of its limits (-k 0, an empty query): a usage error
        say(f"Error: {visible(str(exc))}", err=True)  # it may name a file: its controls as ?
        sys.exit(2)
    except MdragError as exc:
        say(f"Error: {visible(str(exc))}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()

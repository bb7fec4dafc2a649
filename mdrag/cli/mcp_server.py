"""MCP server: `mdrag mcp` offers the daemon's search, similar, related, context and status to assistants."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, cast

from loguru import logger
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from mdrag import __version__
from mdrag.answers.notes import ContextPack
from mdrag.client.connection import DaemonClient
from mdrag.client.paths import on_disk
from mdrag.errors import MdragError, ServerNotRunningError, UnsafePathError
from mdrag.params.search import SearchMode

Tool = TypeVar("Tool", bound=Callable[..., Any])  # a tool function, registered as it is

INSTRUCTIONS = (
    "mdrag searches the user's own markdown notes by meaning. Use `search` to find what the notes say "
    "about something, `context` for a citation-ready pack of passages to answer from, `similar` to find "
    "notes like a given note or draft, and `related` for a note's links, backlinks and neighbours. "
    "Cite hits by their file path and line range."
)

NotePath = Annotated[str, Field(description="Path of a note, as search results give it (absolute, or ~/…).")]
Threshold = Annotated[
    float | None,
    Field(
        ge=0, le=1, description="Minimum relevance score 0-1 (default 0.7; lower finds more, less surely)."
    ),
]
HowMany = Annotated[int | None, Field(ge=1, le=100, description="How many notes at most (default 10).")]


def build_server(socket_path: str) -> MCPServer:
    """An MCP server whose every tool is one request to the daemon on `socket_path`."""
    client = DaemonClient(socket_path)

    # The tools' return annotations stay dict[str, Any]: the server would publish a TypedDict there
    # as the tool's output schema and check each answer against it, a change in what a tool offers.
    def ask(op: str, **params: Any) -> dict[str, Any]:
        # Only what the caller set goes out, so the daemon's own defaults apply to the rest.
        try:
            result: dict[str, Any] = client.call(op, **{k: v for k, v in params.items() if v is not None})
        except ServerNotRunningError:
            raise ToolError(f"no mdrag daemon on {socket_path}; start it with `mdrag serve`") from None
        except MdragError as exc:  # the daemon's answer (a refused argument included), as words
            raise ToolError(f"mdrag {op} failed: {exc}") from None
        return result

    server: MCPServer = MCPServer(
        "mdrag", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    def tool(title: str) -> Callable[[Tool], Tool]:
        def register(fn: Tool) -> Tool:
            server.add_tool(fn, title=title, description=inspect.cleandoc(fn.__doc__ or ""))
            return fn

        return register

    @tool("Search notes")
    def search(
        query: Annotated[str, Field(description="What to look for, in plain words (1-1000 characters).")],
        top_k: Annotated[
            int | None, Field(ge=1, le=100, description="How many hits at most (default 10).")
        ] = None,
        threshold: Threshold = None,
        mode: Annotated[
            SearchMode | None,
            Field(description="hybrid (default): meaning and keywords; dense: meaning only; keyword: BM25."),
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Only notes with any of these tags.")] = None,
        path_prefix: Annotated[str | None, Field(description="Only notes under this folder.")] = None,
        explain: Annotated[
            bool | None, Field(description="Add each hit's similarity, evidence and ranks.")
        ] = None,
    ) -> dict[str, Any]:
        """Search the user's markdown notes by meaning and keywords. Each hit gives the section's text,
        its file path, line range and heading path, a `confidence_score` (0-1: an estimate of how likely
        the section answers the query; hits are ordered by it and those below the threshold are left out)
        and `similarity` (the raw embedding cosine, for reference). `confidence.outcome` is one of three:
        "answer": `results` hold sections that answer (score at or above the threshold, 0.7 by default);
        quote them. "related": no section is a confident answer, but `related` holds sections close
        under the bar; they may help, so present them as possibly related, never as the answer.
        "none": nothing came close; `closest` names up to 3 nearest notes: tell the user what those
        notes are about rather than saying they have no notes on the topic. `confidence.reason` says
        why when it is known ("no note mentions loki": no note at all holds that word; "no note indexed
        so far mentions loki": none of the notes indexed yet does, the rest may; "no note found
        mentions loki": none of the notes the search found names it, though the keyword search
        looked for it; "no note mentions databse (did you mean database?)": likely a typo, so
        search again with the word suggested).
        Measured on real documentation vaults, a confident answer holds a right page for about 7 in 10
        answerable questions, and about 1 in 5 questions the notes cannot answer still gets one, so
        check a hit's text before relying on it. `confidence.level` sums up the best hit: high (0.9+),
        medium (0.7+), low (0.5+) or none. Measured, the first hit was a right page for about 9 in 10
        searches answered at high, 6 in 10 at medium, 4 in 10 "related" and 2 in 10 "none". While a
        large folder is first indexed, `indexing` says how far it is, and a hit whose
        `metadata.waiting` is true was found by its words in a note the model has not reached yet
        (scored all the same); notes like it are found only by their words until then, so a search
        by meaning may miss them."""
        return ask(
            "search",
            query=query,
            top_k=top_k,
            threshold=threshold,
            mode=mode,
            tags=tags,
            path_prefix=_typed(path_prefix) if path_prefix else None,
            explain=explain,
        )

    @tool("Find similar notes")
    def similar(
        note: Annotated[
            str | None, Field(description="Path of a note to compare against (absolute, or ~/…).")
        ] = None,
        text: Annotated[
            str | None, Field(description="Or: a draft's text, to check before it is saved.")
        ] = None,
        k: HowMany = None,
    ) -> dict[str, Any]:
        """Notes most similar to a given note, or to a draft's text, each with a score 0-100 and a tier
        (90+ near-duplicate, 70-89 closely related, 40-69 related); notes under 40 are not listed, so an
        empty list means no note is about the same thing. Use it to ask "have I written this before?"."""
        if (note is None) == (text is None):
            raise ToolError("give exactly one of `note` (a path) or `text` (a draft)")
        return ask("similar", note=_typed(note) if note else None, text=text, k=k)

    @tool("Related notes")
    def related(note: NotePath, k: HowMany = None) -> dict[str, Any]:
        """How other notes relate to one note: its outgoing links, its backlinks (broken links flagged)
        and its nearest neighbours by meaning, each labelled by how it is related."""
        return ask("related", note=_typed(note), k=k)

    @tool("Context for an answer")
    def context(
        query: Annotated[str, Field(description="The question to gather context for.")],
        max_tokens: Annotated[
            int | None, Field(ge=50, le=100_000, description="Token budget for the pack (default 2000).")
        ] = None,
        threshold: Annotated[
            float | None, Field(ge=0, le=1, description="Minimum relevance score 0-1 (default: the low bar).")
        ] = None,
    ) -> CallToolResult:
        """A prompt-ready pack of the notes' best sections for a question, within a token budget, best
        first, de-duplicated, each with its citation and relevance score (0-1, as in `search`). Use it to
        answer from the user's notes with sources. `confidence.outcome` says what the pack is: "answer"
        (a section reaches the usual 0.7 bar), "related" (only sections under it, scores 0.5-0.7: say
        they may not answer the question) or "none" (the pack is empty and `closest` names up to 3
        nearest notes: weaker matches, not proof that the notes are silent on the topic)."""
        answer = ask("context", query=query, max_tokens=max_tokens, threshold=threshold)
        pack = cast(ContextPack, answer)
        # The pack is text meant for a model to read, so it goes out as text, not as an escaped JSON string.
        text = pack.get("context") or _no_context(pack)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)

    @tool("Index status")
    def status() -> dict[str, Any]:
        """What the index holds: the daemon, the notes folders, documents by status, sections, files
        that failed to index and the model. Use it when a search finds less than expected."""
        return ask("status")

    try:
        if not client.alive():
            logger.warning(
                "no mdrag daemon answers on {} yet; tools fail until `mdrag serve` runs", socket_path
            )
    except UnsafePathError as exc:  # every tool refuses too, saying the same
        logger.error("{}", exc)
    return server


def _no_context(pack: ContextPack) -> str:
    """An empty pack as text a model reads: why it is empty and the nearest notes it could name."""
    lines = [pack.get("message") or "no confident answer in the notes"]
    if pack.get("closest"):
        lines.append("closest notes (weaker matches, not answers):")
        lines += [f"- {c['path']}: {c['heading_path']} (score {c['score']:.2f})" for c in pack["closest"]]
    return "\n".join(lines)


def _typed(path: str) -> str:
    """A path an assistant gave, `~` expanded, its names as spelled on disk (either Unicode form)."""
    return on_disk(os.path.expanduser(path))

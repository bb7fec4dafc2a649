"""`mdrag mcp` end to end: the SDK's stdio client talks to a real `mdrag mcp` process and a real daemon."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import write
from tests.daemon_process import DaemonProcess

TOOLS = {"search", "similar", "related", "context", "status"}
LIGHTHOUSE = "# Lighthouse\n\nThe lighthouse keeper trims the wick every evening and polishes the great lens before dusk.\n"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("mcp")
    notes = base / "notes"
    write(notes / "lighthouse.md", LIGHTHOUSE)
    write(notes / "lighthouse-copy.md", LIGHTHOUSE.replace("every evening", "each evening"))
    write(
        notes / "keeper.md",
        "# Keeper's diary\n\nClimbed the tower again today; see [[lighthouse]] for the routine.\n",
    )
    write(
        notes / "sourdough.md",
        "# Sourdough\n\nFeed the sourdough starter equal weights of flour and water each morning.\n",
    )
    process = DaemonProcess(notes, base / "state").start()
    process.wait_fresh()
    yield process
    process.close()


def converse(env: dict[str, str], errlog: Path, talk: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """Start `mdrag mcp` with `env`, initialize a session with the SDK's stdio client, run `talk` on it."""

    async def main() -> Any:
        server = StdioServerParameters(command=sys.executable, args=["-m", "mdrag.cli.main", "mcp"], env=env)
        with anyio.fail_after(120), errlog.open("a") as stderr:
            async with (
                stdio_client(server, errlog=stderr) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await talk(session)

    try:
        return anyio.run(main)
    except BaseException:
        print(f"mdrag mcp stderr:\n{errlog.read_text() if errlog.exists() else ''}")
        raise


def answer(result) -> dict[str, Any]:
    """The daemon's JSON as the tool returned it, checked to be the same in structured and text form."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def test_an_assistant_lists_the_tools_and_finds_a_note_through_the_running_daemon(daemon, tmp_path):
    async def talk(session: ClientSession):
        tools = await session.list_tools()
        search = await session.call_tool(
            "search", {"query": "how do I keep my sourdough starter alive", "threshold": 0.3}
        )
        status = await session.call_tool("status", {})
        return tools, search, status

    tools, search, status = converse(daemon.env, tmp_path / "mcp.log", talk)

    assert {tool.name for tool in tools.tools} == TOOLS
    assert all(tool.description for tool in tools.tools)
    response = answer(search)
    top = response["results"][0]
    assert top["file_path"] == str(daemon.notes / "sourdough.md")
    assert "flour and water" in top["section_text"]
    assert top["start_line"] >= 1
    report = answer(status)
    assert report["daemon"]["pid"] == daemon.process.pid
    assert sum(report["documents"].values()) == 4


def test_without_a_daemon_a_tool_answers_with_an_error_and_the_server_stays_up(tmp_path):
    socket_dir = Path(tempfile.mkdtemp(prefix="md", dir="/tmp"))
    socket_path = str(socket_dir / "mdrag.sock")
    index = tmp_path / "state" / "milvus.db"
    write(tmp_path / "notes" / "lighthouse.md", LIGHTHOUSE)
    env = {
        **os.environ,
        "MDRAG_CONFIG": str(write(tmp_path / "config.yaml", "{}\n")),
        "MDRAG_ROOTS": str(tmp_path / "notes"),
        "MDRAG_SERVER_SOCKET_PATH": socket_path,
        "MDRAG_MILVUS_URI": str(index),
    }

    async def talk(session: ClientSession):
        first = await session.call_tool("search", {"query": "lighthouse"})
        second = await session.call_tool("status", {})
        await session.send_ping()
        return first, second

    try:
        first, second = converse(env, tmp_path / "mcp.log", talk)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)

    for result in (first, second):
        assert result.is_error
        message = result.content[0].text
        assert f"no mdrag daemon on {socket_path}" in message
        assert "mdrag serve" in message
    assert not index.exists(), "the MCP server must never open the index itself"


def test_an_assistant_gets_similar_notes_links_and_a_context_pack(daemon, tmp_path):
    lighthouse = str(daemon.notes / "lighthouse.md")

    async def talk(session: ClientSession):
        return (
            await session.call_tool("similar", {"note": lighthouse}),
            await session.call_tool(
                "similar", {"text": "The keeper trims the lighthouse wick each evening."}
            ),
            await session.call_tool("related", {"note": lighthouse}),
            await session.call_tool(
                "context",
                {"query": "what does the lighthouse keeper do", "max_tokens": 400, "threshold": 0.3},
            ),
        )

    similar_note, similar_draft, related, context = converse(daemon.env, tmp_path / "mcp.log", talk)

    assert "lighthouse-copy.md" in json.dumps(answer(similar_note))
    assert "lighthouse.md" in json.dumps(answer(similar_draft))
    backlinks = [link["path"] for link in answer(related)["backlinks"]]
    assert [os.path.basename(p) for p in backlinks] == ["keeper.md"], "the backlink from keeper.md"
    assert not context.is_error, context.content
    pack = context.content[0].text  # the prompt-ready text itself, not JSON
    assert "trims the wick" in pack and "lighthouse" in pack
    assert "lighthouse" in json.dumps(context.structured_content["sources"])

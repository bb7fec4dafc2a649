"""Test tiers: a test is marked by what it starts, so `make check` leaves out the slow ones.

slow:   the real model, Milvus Lite (a server process per database), a daemon process, a CLI
        run or any other Python subprocess. server: a real Milvus standalone server (fixed ports).
A test is judged by the fixtures it uses (all of them, transitively) and by the names its
code, its fixtures' code and the tests/ helpers they call refer to; `@pytest.mark.slow` by
hand still works for anything this misses.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator

import pytest

SLOW_FIXTURES = frozenset({"embedder", "milvus_uri", "milvus_server", "make_config", "make_service"})
SERVER_FIXTURES = frozenset({"milvus_server"})
# Names whose use starts something slow: the model, a store, a service, a process.
SLOW_NAMES = frozenset(
    {
        "Embedder",  # the real model (fake_embedder is the fast one)
        "Store",
        "Service",
        "Daemon",
        "DaemonProcess",
        "mdrag_cli",
        "stored_vector_ids",
        "rebuilt_vector_ids",
        "start_early",  # Milvus Lite servers
        "MilvusClient",  # a Milvus Lite server, for a path
        "stdio_client",  # the MCP server as a subprocess
        "Browser",  # a headless Chromium (bench/browser.py)
    }
)


def mark_by_what_tests_start(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if fixtures & SERVER_FIXTURES or params.get("milvus_uri") == "server":
            item.add_marker(pytest.mark.server)
            item.add_marker(pytest.mark.slow)
            continue
        if item.get_closest_marker("slow"):
            continue
        names = _names_used(item)
        # A Python subprocess (`mdrag` on the command line, an import check) pays Python's and
        # mdrag's start-up; other tools (systemd-analyze, docker-compose) are quick.
        python_process = {"subprocess", "executable"} <= names
        if fixtures & SLOW_FIXTURES or names & SLOW_NAMES or python_process:
            item.add_marker(pytest.mark.slow)


def _names_used(item: pytest.Item) -> set[str]:
    functions = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for definitions in getattr(info, "name2fixturedefs", {}).values():
        functions.extend(getattr(d, "func", None) for d in definitions)
    names: set[str] = set()
    seen: set[types.CodeType] = set()
    for function in functions:
        function = inspect.unwrap(function) if callable(function) else None
        if isinstance(function, types.FunctionType) and _is_test_code(function):
            names |= _walk(function, seen)
    return names


# Helpers whose code names a slow thing but starts it on a fake (fake_embedder builds an Embedder
# on HashingRunner): the walk does not look inside them.
FAST_HELPER_MODULES = frozenset({"tests.fakes"})


def _is_test_code(function: types.FunctionType) -> bool:
    module = function.__module__ or ""
    if module in FAST_HELPER_MODULES:
        return False
    return (
        module == "conftest"
        or module.startswith(("tests.", "test_"))
        or module.split(".")[-1].startswith("test_")
    )


def _walk(function: types.FunctionType, seen: set[types.CodeType]) -> set[str]:
    """Names in a function's code and nested code, following calls into other test helpers."""
    names: set[str] = set()
    for code in _codes(function.__code__):
        if code in seen:
            continue
        seen.add(code)
        names.update(code.co_names)
        for name in code.co_names:
            helper = function.__globals__.get(name)
            if isinstance(helper, types.FunctionType) and _is_test_code(helper):
                names |= _walk(helper, seen)
            elif isinstance(helper, type) and (helper.__module__ or "").startswith("tests."):
                names.add(helper.__name__)  # a helper class such as DaemonProcess
    return names


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)

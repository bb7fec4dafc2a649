"""Shared fixtures: the real model (loaded once), Milvus Lite stores in tmp dirs, note folders."""

from __future__ import annotations

import os
import re

# The suite never touches the real home: HOME and every XDG dir point into one temporary home
# for the whole session, set before anything imports mdrag (its defaults read them). This
# import must stay first.
from tests.home import REAL_HOME_SNAPSHOT, isolate_home, remove_home  # isort: skip

TEST_HOME = isolate_home()

from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from mdrag.config import Config  # noqa: E402
from tests.fakes import fake_embedder as _fake_embedder  # noqa: E402
from tests.leaks import leak_guard, module_leak_guard  # noqa: E402,F401  (autouse fixtures)
from tests.milvus_server import MilvusServer  # noqa: E402
from tests.tiers import mark_by_what_tests_start  # noqa: E402

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the bundled model must never need the network

if os.environ.get("PYTEST_XDIST_WORKER"):
    # The leak guard counts every process of its process group as its own (a killed daemon's
    # Lite servers stay in it): pytest-xdist's workers share the controller's, so each takes one of
    # its own, or one worker would end another's processes.
    os.setpgrp()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_by_what_tests_start(items)


# `make test` runs the suite in pytest-xdist workers (it waits on processes far more than it
# computes). What must not be split between them: the Milvus server's tests (one server on fixed
# ports), and a module's tests that share a module-scoped fixture (a daemon started once). Every
# other test goes wherever a worker is free. (xdist's own `loadgroup` marks do not reach its
# scheduler under pytest 9: the node ids it suffixes are not the ones reported.)
MODULES_SHARING_FIXTURES = frozenset(
    path.name for path in Path(__file__).parent.glob("test_*.py") if 'scope="module"' in path.read_text()
)
SERVER_TEST = re.compile(r"\[server[\]-]")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class SharedWhereNeeded(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if SERVER_TEST.search(nodeid) or module.endswith("test_milvus_server.py"):
                return "the Milvus server"
            return module if Path(module).name in MODULES_SHARING_FIXTURES else nodeid

    return SharedWhereNeeded(config, log)


# Where ONNX Runtime keeps its telemetry (device id, events for upload) unless mdrag turns it off.
RUNTIME_TELEMETRY = Path(".cache", "Microsoft")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A suite that changed anything of mdrag's under the real home fails, naming what changed; so
    does one whose processes (daemons, commands, the model's) left telemetry in the suite's home."""
    problems = []
    changed = REAL_HOME_SNAPSHOT.changes()
    if changed:
        problems.append("the test suite changed the real home:\n  " + "\n  ".join(changed))
    if (TEST_HOME / RUNTIME_TELEMETRY).exists():
        problems.append(
            f"a process of the suite left ONNX Runtime's telemetry in {TEST_HOME / RUNTIME_TELEMETRY}"
        )
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for message in problems:
                reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    remove_home()


@pytest.fixture(scope="session")
def fake_embedder():
    """The real tokenizer with a deterministic fake model: for logic that does not judge relevance."""
    return _fake_embedder()


@pytest.fixture(scope="session")
def embedder():
    from mdrag.embedding.embedder import Embedder

    return Embedder()


@pytest.fixture()
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def stand_in_lite_server(folder: Path, before: str) -> Path:
    """A folder for BIN_PATH whose `milvus` runs `before` (a shell line), then the real Milvus
    Lite server: a server slow to start (`sleep 1`) or one that dies (`exit 3`)."""
    import milvus_lite

    real = Path(milvus_lite.__file__).parent / "lib"
    folder.mkdir(parents=True)
    script = folder / "milvus"
    script.write_text(f'#!/bin/sh\n{before}\nLD_LIBRARY_PATH="{real}" exec "{real}/milvus" "$@"\n')
    script.chmod(0o755)
    return folder


@pytest.fixture()
def short_tmp() -> Iterator[Path]:
    """A folder with a short path for a socket (AF_UNIX paths are limited to ~107 bytes; pytest's
    tmp dirs can be longer), removed after the test: they piled up in /tmp."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="md", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def private_data_home(tmp_path: Path) -> Iterator[None]:
    """mdrag's own state (a server index's keyword index and crash marker) stays inside the test.
    Its own MonkeyPatch: a test's `monkeypatch.undo()` must not send it to the session's home,
    where another test's keyword index waits (a server store read one left by an earlier test)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
        yield


@pytest.fixture(scope="session")
def milvus_server() -> Iterator[MilvusServer]:
    """One real Milvus standalone server for the session, stopped by its PID afterwards."""
    server = MilvusServer().start()  # the leak guard allows it (and its restarts) for the session
    yield server
    server.close()


# MDRAG_TEST_LITE_ONLY=1 leaves out the Milvus-server half of the store suite: for an edit loop
# beside another suite that holds the server's fixed ports. CI runs both.
ENGINES = ["lite"] if os.environ.get("MDRAG_TEST_LITE_ONLY") else ["lite", "server"]


@pytest.fixture(params=ENGINES)
def milvus_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store-level suite runs on Milvus Lite and on a real Milvus server."""
    if request.param == "lite":
        return str(tmp_path / "index" / "milvus.db")
    server: MilvusServer = request.getfixturevalue("milvus_server")
    server.wipe(keep_model=MODEL_ID)
    return server.uri


@pytest.fixture()
def make_config(tmp_path: Path, milvus_uri: str) -> Callable[..., Config]:
    def build(roots: list[Path] | None = None, **values) -> Config:
        values.setdefault("milvus_uri", milvus_uri)
        values.setdefault("server_socket_path", str(tmp_path / "s.sock"))
        return Config().with_overrides(roots=tuple(str(r) for r in roots or ()), **values)

    return build


@pytest.fixture()
def make_service(make_config, embedder) -> Iterator[Callable[..., object]]:
    from mdrag.service import Service

    opened: list[Service] = []

    def build(roots: list[Path], **values) -> Service:
        service = Service.open(make_config(roots, **values), embedder=embedder)
        opened.append(service)
        return service

    yield build
    for service in opened:
        service.close()


@pytest.fixture()
def upgraded_from_older_layout(make_service, embedder, monkeypatch) -> Callable[..., object]:
    """upgrade(roots, *patches): the roots indexed as the layout before this one did (each
    (target, name, value) patched in while indexing: what that layout read differently), then
    opened as this one does, upgrading by itself: that Service (the caller closes it)."""
    from mdrag.milvus import schema
    from mdrag.service import Service

    def upgrade(roots: list[Path], *patches: tuple[object, str, object]) -> Service:
        monkeypatch.setattr(schema, "SCHEMA_VERSION", schema.SCHEMA_VERSION - 1)
        for target, name, value in patches:
            monkeypatch.setattr(target, name, value)
        old = make_service(roots)
        old.reindex()
        old.close()
        monkeypatch.undo()
        return Service.open(old.config, embedder=embedder)

    return upgrade

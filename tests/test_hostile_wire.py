"""Bad input through the socket's door, and where that door is: each request field by its kind,
nesting, size, special files named as notes, and a runtime folder that is gone.

One real daemon (`mdrag serve`) over a few notes answers every probe through its real socket;
its watcher waits a minute before acting on a change, so a note swapped for a FIFO stays
indexed while it is probed. Its last test stops it. The runtime-folder probes run `mdrag serve`
and `mdrag status` as a second uid (setpriv), which meets permissions as a user does.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdrag.client.connection import DaemonClient
from mdrag.errors import NotFoundError, QueryError
from mdrag.params.operations import OPERATIONS
from mdrag.protocol import MAX_REQUEST_BYTES
from tests.conftest import write
from tests.daemon_process import DaemonProcess, mdrag_cli
from tests.test_mcp import converse

# A value of every wrong kind for each kind of field: a string is never a flag nor a number.
WRONG: dict[str, list[Any]] = {
    "flag": ["false", "no", 0, 1, [], {}],
    "whole": ["5", 3.5, True, [5], 10**9, -1],
    "number": ["0.5", True, [0.5], 1e9, math.nan, -1],
    "choice": [1, ["hybrid"], "", "nope", False],
    "string": [5, ["a"], {"a": "b"}, True],
    "strings": ["a", [1], [""], {"a": 1}, [["a"]], True],
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory) -> Iterator[DaemonProcess]:
    base = tmp_path_factory.mktemp("wire")
    notes = base / "notes"
    write(notes / "seed.md", "# Seed\n\nThe lighthouse keeper trims the wick every evening.\n")
    write(notes / "swapped.md", "# Swapped\n\nA glassblower's furnace roars at dawn.\n")
    slow_watch = {"MDRAG_WATCH_DEBOUNCE_MS": "60000", "MDRAG_WATCH_MAX_WAIT_MS": "600000"}
    process = DaemonProcess(notes, base / "state", extra_env=slow_watch).start()
    process.wait_fresh()
    yield process
    process.close()


class Line:
    """One connection to the daemon's socket, a request line out and its answer line back, the
    bytes exactly as given (NaN included, as Python's json writes it)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.reader = self.sock.makefile("rb")

    def ask(self, payload: bytes) -> dict[str, Any]:
        self.sock.sendall(payload + b"\n")
        answer = self.reader.readline()
        assert answer, "the daemon closed the connection without answering"
        return json.loads(answer)

    def request(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.ask(json.dumps({"v": 1, "op": op, "params": params}).encode())

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def refused(answer: dict[str, Any], *words: str) -> str:
    assert answer["ok"] is False, answer
    assert answer["error"]["type"] == "InvalidRequest", answer
    message = answer["error"]["message"]
    assert all(word in message for word in words), message
    return message


# ---- every field of every operation, by its kind -------------------------------------------


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_every_field_of_an_operation_refuses_a_value_of_the_wrong_kind_naming_it(daemon, op):
    line = Line(daemon.socket_path)
    try:
        for name, field in OPERATIONS[op].fields.items():
            for value in WRONG[field.kind]:
                refused(line.request(op, {name: value}), name)
        # A field the operation does not take is refused too, never ignored.
        refused(line.request(op, {"rebuld": True}), "rebuld")
        assert line.request("ping", {})["ok"] is True  # the connection and the daemon go on
    finally:
        line.close()


def test_string_booleans_neither_rebuild_nor_force_and_the_index_is_untouched(daemon):
    before = daemon.status()
    line = Line(daemon.socket_path)
    try:
        refused(line.request("reindex", {"rebuild": "false"}), "rebuild", "true or false")
        refused(line.request("reindex", {"force": "no"}), "force", "true or false")
        refused(line.request("reindex", {"paths": str(daemon.notes)}), "paths", "list")
    finally:
        line.close()
    after = daemon.status()
    assert after["documents"] == before["documents"] and after["sections"] == before["sections"]
    assert after["last_indexed_at"] == before["last_indexed_at"]
    assert "rebuilding the index" not in daemon.log()


def test_a_field_left_null_is_a_field_left_out(daemon):
    line = Line(daemon.socket_path)
    try:
        answer = line.request("search", {"query": "lighthouse wick", "top_k": None, "threshold": 0})
    finally:
        line.close()
    assert answer["ok"] is True and answer["result"]["results"]


# ---- nesting -----------------------------------------------------------------------------------


def test_json_nested_100000_deep_is_refused_as_too_deep_without_a_traceback(daemon):
    log_before = len(daemon.log())
    line = Line(daemon.socket_path)
    try:
        deep = b"[" * 100_000 + b"]" * 100_000
        for payload in (
            b'{"v": 1, "op": "search", "params": {"query": "x", "tags": ' + deep + b"}}",
            b'{"v": 1, "op": "ping", "params": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001,
            b"[" * 100_000,  # never closed
            b'{"v": 1, "op": "search", "params": {"tags": ' + b"[" * 40 + b'"a"' + b"]" * 40 + b"}}",
        ):
            refused(line.ask(payload), "too deep")
        # Deep-looking text inside a string is text.
        text = "[" * 5000
        assert "results" in line.request("search", {"query": text[:900], "threshold": 0})["result"]
        assert line.request("ping", {})["ok"] is True
    finally:
        line.close()
    assert "Traceback" not in daemon.log()[log_before:]
    assert "InternalError" not in daemon.log()[log_before:]


# ---- size --------------------------------------------------------------------------------------


def test_a_draft_over_the_limit_on_stdin_is_refused_naming_the_limit(daemon):
    result = mdrag_cli(daemon.env, "similar", "--text", "-", stdin="word " * 2_400_000, timeout=120)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("Error: ") and "100,000 characters" in result.stderr
    assert result.stdout == ""


def test_a_request_over_the_socket_limit_is_answered_with_the_limit_not_a_closed_connection(daemon):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(daemon.socket_path)
        try:
            sock.sendall(b'{"v": 1, "op": "similar", "params": {"text": "' + b"x" * 12_000_000 + b'"}}\n')
        except (BrokenPipeError, ConnectionResetError):
            pass  # it stopped reading at the limit: its answer is there all the same
        answer = json.loads(sock.makefile("rb").readline())
    assert answer["error"]["type"] == "RequestTooLarge"
    assert f"{MAX_REQUEST_BYTES:,} bytes" in answer["error"]["message"]


def test_a_reindex_of_40000_paths_goes_through_and_reports(daemon):
    # As a shell glob gives them: relative on the command line, absolute in the request (megabytes).
    names = [f"glob/note-{i:05d}.md" for i in range(40_000)]
    assert len(json.dumps([str(daemon.notes / name) for name in names])) > 2 * MAX_REQUEST_BYTES
    result = subprocess.run(
        [sys.executable, "-m", "mdrag.cli.main", "reindex", "--json", *names],
        env=daemon.env,
        cwd=daemon.notes,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["failed"] == [] and report["added"] == 0


def test_the_assistant_is_told_of_a_bad_number_and_of_a_request_over_the_limit(daemon, tmp_path):
    async def talk(session):
        return (
            await session.call_tool("search", {"query": "wick", "top_k": "10a"}),
            await session.call_tool("context", {"query": "wick", "max_tokens": 10**9}),
            await session.call_tool("similar", {"text": "lamp " * 400_000}),
        )

    bad_number, bad_budget, too_large = converse(daemon.env, tmp_path / "mcp.log", talk)
    assert bad_number.is_error and "top_k" in bad_number.content[0].text
    assert bad_budget.is_error and "max_tokens" in bad_budget.content[0].text
    assert too_large.is_error, too_large.content
    assert f"{MAX_REQUEST_BYTES:,} bytes" in too_large.content[0].text


# ---- where the socket is: XDG_RUNTIME_DIR as a tmux session after logout leaves it ---------------

OTHER = 64_913  # a uid with no account: nothing of it exists before the test


def as_other(*command: str, env: dict[str, str], **kwargs: Any) -> subprocess.Popen[str]:
    prefix = ["setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups"]
    return subprocess.Popen([*prefix, *command], env=env, text=True, **kwargs)


@pytest.fixture()
def other_user_home() -> Iterator[Path]:
    if os.getuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv")
    home = Path(tempfile.mkdtemp(prefix="mdx", dir="/tmp"))
    home.chmod(0o755)
    fallback = Path(f"/tmp/mdrag-{OTHER}")
    shutil.rmtree(fallback, ignore_errors=True)
    yield home
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(fallback, ignore_errors=True)


def runtime_cases(home: Path) -> dict[str, str | None]:
    """Every way XDG_RUNTIME_DIR fails to be a folder of the user's own that they may write."""
    (home / "a-file").write_text("")
    os.chown(home / "a-file", OTHER, OTHER)
    (home / "read-only").mkdir(mode=0o500)
    os.chown(home / "read-only", OTHER, OTHER)
    (home / "roots-own").mkdir(mode=0o700)  # another uid's (root's): not ours
    return {
        "unset": None,
        "empty": "",
        "relative": "run/user",
        "missing": "/run/user/4242424",  # logind removed it at logout
        "not a folder": str(home / "a-file"),
        "not ours": str(home / "roots-own"),
        "not writable": str(home / "read-only"),
    }


def test_serve_and_every_client_fall_back_to_the_same_socket_when_the_runtime_folder_is_gone(
    other_user_home,
):
    home = other_user_home
    notes = home / "notes"
    write(notes / "lamp.md", "# Lamp\n\nThe keeper trims the wick.\n")
    write(home / "config.yaml", "{}\n")
    subprocess.run(["chown", "-R", f"{OTHER}:{OTHER}", str(notes), str(home / "config.yaml")], check=True)
    # The session's export of the model, so that this daemon loads it rather than export it again.
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mdrag"
    if cache.is_dir():
        shutil.copytree(cache, home / "user" / ".cache" / "mdrag")
    (home / "user").mkdir(exist_ok=True)
    subprocess.run(["chown", "-R", f"{OTHER}:{OTHER}", str(home / "user")], check=True)
    base = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("MDRAG_", "XDG_")) and key != "HOME"
    }
    base |= {
        "HOME": str(home / "user"),
        "MDRAG_CONFIG": str(home / "config.yaml"),
        "MDRAG_ROOTS": str(notes),
        "MDRAG_MILVUS_URI": str(home / "user" / "index" / "milvus.db"),
        "HF_HUB_OFFLINE": "1",
    }
    cases = runtime_cases(home)

    def env_for(case: str) -> dict[str, str]:
        runtime = cases[case]
        return base if runtime is None else {**base, "XDG_RUNTIME_DIR": runtime}

    fallback = f"/tmp/mdrag-{OTHER}/mdrag.sock"

    def status(case: str) -> dict[str, Any]:
        run = as_other(
            sys.executable,
            "-m",
            "mdrag.cli.main",
            "status",
            "--json",
            env=env_for(case),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = run.communicate(timeout=60)
        assert run.returncode == 0 and "Traceback" not in err, (case, err)
        return json.loads(out)

    log = home / "serve.log"
    with log.open("w") as out:
        serve = as_other(
            sys.executable, "-m", "mdrag.cli.main", "serve", env=env_for("missing"), stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(fallback):
            assert serve.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        for case in cases:
            assert status(case)["daemon"]["socket"] == fallback, case
        assert "does not exist" in log.read_text() and fallback in log.read_text()
        while status("unset").get("starting"):  # a clean stop, once it is up
            assert serve.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
    assert "Traceback" not in log.read_text(), log.read_text()
    assert serve.returncode == 0, log.read_text()


# ---- special files named as notes; then the stop ----------------------------------------------


def test_fifos_and_devices_named_as_notes_answer_at_once_and_the_daemon_then_stops_promptly(daemon, tmp_path):
    notes = daemon.notes
    os.mkfifo(notes / "pipe.md")  # in the root, named as a note (never indexed: not a file)
    os.mkfifo(tmp_path / "outside.md")  # outside the roots
    os.symlink("/dev/zero", notes / "zero.md")
    swapped = notes / "swapped.md"  # indexed, then a FIFO in its place, not yet seen by the index
    swapped.unlink()
    os.mkfifo(swapped)
    client = DaemonClient(daemon.socket_path, timeout=20)
    for path in (notes / "pipe.md", tmp_path / "outside.md", notes / "zero.md", Path("/dev/zero"), swapped):
        started = time.monotonic()
        with pytest.raises(NotFoundError):
            client.call("note", note=str(path))
        assert time.monotonic() - started < 5, path
        for op in ("related", "similar"):  # the indexed one answers from the index, the rest not at all
            if path == swapped:
                client.call(op, note=str(path))
            else:
                with pytest.raises(NotFoundError):
                    client.call(op, note=str(path))
        assert time.monotonic() - started < 5, path
    # The swapped note's hit shows the text it was indexed with; the FIFO is never opened.
    started = time.monotonic()
    hits = client.call("search", query="glassblower furnace dawn", threshold=0)["results"]
    assert time.monotonic() - started < 5
    assert any(hit["file_path"] == str(swapped) for hit in hits)
    pack = client.call("context", query="glassblower furnace dawn", threshold=0)
    assert "glassblower" in pack["context"]
    started = time.monotonic()  # a reindex of them reads neither: the swapped note is gone from the index
    report = client.call("reindex", paths=[str(notes / "pipe.md"), str(swapped)])
    assert time.monotonic() - started < 10 and report["deleted"] == 1, report
    started = time.monotonic()
    assert daemon.stop(signal.SIGTERM, timeout=30) == 0
    assert time.monotonic() - started < 10


def test_the_depth_scan_reads_strings_as_text_and_takes_linear_time():
    from mdrag.protocol import MAX_REQUEST_DEPTH, decode_request

    inside = json.dumps({"v": 1, "op": "search", "params": {"query": "[" * 900 + '"\\\\'}}).encode()
    assert decode_request(inside)[1]["query"].startswith("[[[")
    started = time.monotonic()
    for line in (b'"\\"' * 300_000 + b"[" * 40, b"[]" * 500_000, b'"' + b'\\"[' * 300_000):
        with pytest.raises(QueryError):
            decode_request(line)
    assert time.monotonic() - started < 2
    nested = b"[" * MAX_REQUEST_DEPTH + b"]" * MAX_REQUEST_DEPTH
    with pytest.raises(QueryError, match="must be a JSON object"):  # deep enough, not too deep
        decode_request(nested)

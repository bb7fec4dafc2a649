"""The socket server: permissions, peer credentials, limits, and bad clients that change nothing."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from mdrag import protocol
from mdrag.client.connection import DaemonClient
from mdrag.errors import AlreadyRunningError, RemoteError
from mdrag.serve.server import SocketServer


def handler(op, params):
    if op == "search":
        time.sleep(float(params.get("wait_fresh", 0)))  # a field search takes, standing in for work
        return {"echo": params.get("query")}
    if op == "status":
        raise ZeroDivisionError("a bug in a handler")
    return {"pong": True}


@pytest.fixture()
def server(short_tmp):
    instance = SocketServer(
        str(short_tmp / "sock" / "s.sock"), handler, read_timeout_s=1.0, idle_timeout_s=5.0
    )
    instance.start()
    yield instance
    instance.stop()


def raw(server, payload: bytes, read: bool = True) -> dict | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(server.path))
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer and hang up before reading it all (an oversized request)
        if not read:
            return None
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return json.loads(data) if data else None


def test_socket_is_0600_inside_a_0700_directory(server):
    assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(server.path.parent.stat().st_mode) == 0o700


def test_malformed_json_gets_an_error_and_the_connection_stays_usable(server):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(server.path))
        sock.sendall(b"{not json\n" + protocol.encode(protocol.request("ping")))
        reader = sock.makefile("rb")
        first, second = json.loads(reader.readline()), json.loads(reader.readline())
    assert first["ok"] is False and first["error"]["type"] == "InvalidRequest"
    assert second == protocol.ok({"pong": True})


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"v": 1, "op": "launch-missiles"}, "unknown operation"),
        ({"v": 99, "op": "ping"}, "unsupported protocol version"),
        ([1, 2, 3], "must be a JSON object"),
        ({"v": 1, "op": "ping", "params": "x"}, "params must be a JSON object"),
    ],
)
def test_invalid_requests_get_a_clear_error(server, message, expected):
    reply = raw(server, json.dumps(message).encode() + b"\n")
    assert reply["ok"] is False and expected in reply["error"]["message"]


def test_an_oversized_request_is_refused_without_reading_it_all(server):
    reply = raw(server, b'{"v":1,"op":"search","params":{"query":"' + b"x" * (2 * 1024 * 1024))
    assert reply["error"]["type"] == "RequestTooLarge"


def test_a_half_open_request_is_dropped_after_the_read_timeout(server):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stalled:
        stalled.connect(str(server.path))
        stalled.sendall(b'{"v": 1, "op": "pi')  # and never the rest
        assert DaemonClient(str(server.path)).call("ping") == {"pong": True}  # others are served meanwhile
        stalled.settimeout(5)
        reply = stalled.recv(65536)
    assert b"Timeout" in reply


def test_a_bug_in_a_handler_answers_with_an_error_and_the_server_lives(server):
    with pytest.raises(RemoteError, match="internal error"):
        DaemonClient(str(server.path)).call("status")
    assert DaemonClient(str(server.path)).call("ping") == {"pong": True}


def test_many_concurrent_clients_are_all_answered(server):
    client = DaemonClient(str(server.path))
    results: list[object] = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(client.call("search", query=f"q{i}", wait_fresh=0.2))
        )
        for i in range(40)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r["echo"] for r in results) == sorted(f"q{i}" for i in range(40))
    assert time.monotonic() - started < 4  # concurrent, not 40 x 0.2s in a row


def test_a_live_socket_means_already_running_and_names_the_process(server):
    with pytest.raises(AlreadyRunningError, match=rf"\(process {os.getpid()}\) is already running"):
        SocketServer(str(server.path), handler).claim()


def test_stop_removes_the_socket_file(server):
    server.stop()
    assert not server.path.exists()


@pytest.mark.skipif(os.getuid() != 0, reason="running a client as another user needs root")
def test_a_client_running_as_another_user_is_refused(server):
    # Open the file-system gate wide on purpose, so the refusal must come from SO_PEERCRED.
    os.chmod(server.path.parent.parent, 0o755)
    os.chmod(server.path.parent, 0o777)
    os.chmod(server.path, 0o777)
    code = (
        "import socket, sys;"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]);"
        's.sendall(b\'{"v": 1, "op": "ping"}\\n\'); print(s.recv(4096).decode())'
    )
    result = subprocess.run(
        ["setpriv", "--reuid=1", "--regid=1", "--clear-groups", sys.executable, "-c", code, str(server.path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    reply = json.loads(result.stdout)
    assert reply["ok"] is False and reply["error"]["type"] == "PermissionDenied"
    os.chmod(server.path.parent, 0o700)  # a client of its own user refuses a folder open to others
    assert DaemonClient(str(server.path)).call("ping") == {"pong": True}  # its own user still is


def test_a_stop_that_closes_the_listener_as_the_loop_begins_ends_it_quietly():
    # CI caught a stop right after a start: the listener was closed between the loop's first
    # two steps, and the accept thread died with "Invalid file descriptor: -1".
    import threading

    from mdrag.serve.lobby import Lobby

    class ClosedByAStop(socket.socket):
        def setblocking(self, flag: bool) -> None:
            super().setblocking(flag)
            stopping.set()
            self.close()

    stopping = threading.Event()
    listener = ClosedByAStop(socket.AF_UNIX, socket.SOCK_STREAM)
    lobby = Lobby(listener, lambda conn, rest: None, stopping, 1.0, 1.0, 1.0, 1024)
    lobby.run()  # returns; before, it raised ValueError
    assert listener.fileno() == -1

"""Client slots: idle or silent connections never lock others out; a busy daemon is said so, never taken for none."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from mdrag.client import connection as client_module
from mdrag.client.connection import DaemonClient
from mdrag.client.route import open_route
from mdrag.config import Config
from mdrag.errors import DaemonBusyError
from mdrag.serve.server import SocketServer

release = threading.Event()


def handler(op, params):
    if op == "search":  # held until the test lets it go
        release.wait(10)
    return {"pong": True}


def start_server(directory: Path, **limits) -> SocketServer:
    server = SocketServer(str(directory / "sock" / "s.sock"), handler, **limits)
    server.start()
    return server


@pytest.fixture()
def two_slots(short_tmp):
    server = start_server(short_tmp, max_clients=2, first_line_timeout_s=0.5, idle_timeout_s=0.5)
    yield server
    release.set()
    server.stop()


def connect(server: SocketServer) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(server.path))
    return sock


def test_connections_that_never_speak_hold_no_client_slot(two_slots):
    silent = [connect(two_slots) for _ in range(50)]
    try:
        started = time.monotonic()
        assert DaemonClient(str(two_slots.path)).call("ping") == {"pong": True}
        assert time.monotonic() - started < 1.0
    finally:
        for sock in silent:
            sock.close()


def test_a_connection_that_never_speaks_is_closed_after_the_first_line_deadline(two_slots):
    with connect(two_slots) as silent:
        silent.settimeout(5)
        started = time.monotonic()
        assert silent.recv(100) == b""
        assert time.monotonic() - started < 3


def ping(sock: socket.socket) -> bytes:
    """A ping on a raw connection, asked again while Busy for up to 2 s, as DaemonClient does: a
    slot is freed just after its answer is sent, so an answer can reach the client first."""
    deadline = time.monotonic() + 2
    while True:
        sock.sendall(b'{"v": 1, "op": "ping"}\n')
        answer = sock.recv(1000)
        if b'"Busy"' not in answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.02)


def test_a_kept_connection_idle_between_requests_holds_no_slot(two_slots):
    kept = [connect(two_slots) for _ in range(5)]
    try:
        for sock in kept:  # each asks once, then says nothing more
            assert b'"pong"' in ping(sock)
        assert DaemonClient(str(two_slots.path)).call("ping") == {"pong": True}
        assert b'"pong"' in ping(kept[0])  # and a kept one may ask again
    finally:
        for sock in kept:
            sock.close()


def test_a_daemon_with_every_slot_busy_is_reported_busy_and_never_taken_for_none(
    two_slots, monkeypatch, tmp_path
):
    monkeypatch.setattr(client_module, "BUSY_RETRY_S", 0.3)
    release.clear()
    holders = [
        threading.Thread(target=DaemonClient(str(two_slots.path)).call, args=("search",)) for _ in range(2)
    ]
    for thread in holders:
        thread.start()
    try:
        time.sleep(0.3)  # both slots taken
        with pytest.raises(DaemonBusyError, match="busy"):
            DaemonClient(str(two_slots.path)).call("ping")
        with pytest.raises(DaemonBusyError):
            DaemonClient(str(two_slots.path)).alive()
        config = Config().with_overrides(
            server_socket_path=str(two_slots.path), milvus_uri=str(tmp_path / "index" / "milvus.db")
        )
        with pytest.raises(DaemonBusyError), open_route(config, quiet=True):
            pass
        assert not (tmp_path / "index").exists()  # the index was never opened here
    finally:
        release.set()
        for thread in holders:
            thread.join(10)
    assert DaemonClient(str(two_slots.path)).call("ping") == {"pong": True}

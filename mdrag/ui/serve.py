"""Serve: `mdrag ui`'s web server on 127.0.0.1, a free port and a key per run, its connections bounded.

Anyone on the machine can connect to 127.0.0.1, so what a connection costs before it shows the key
is bounded: a request's head is at most 16 KiB, a connection has a few seconds to send it (and to
send the next one after an answer), and past a number of open connections the one idle longest is
closed for the newest. A user holding connections open therefore cannot use up the page's file
descriptors, and the key holder's requests, once sent, are never the ones closed.
"""

from __future__ import annotations

import asyncio
import functools
import resource
import secrets
import signal
import socket
import sys
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from mdrag.client.route import Route
from mdrag.config import Config
from mdrag.ui import launch
from mdrag.ui.app import build_app
from mdrag.ui.guard import MAX_HEAD_BYTES

IDLE_S = 5.0  # to send a whole request head, from the connection or from the last answer
BACKLOG = 64  # also how many connections one wake of the server accepts, before any is served or closed


def connection_bound() -> int:
    """How many connections the page keeps open: an eighth of its file descriptors, at most 256
    (the rest are for the BACKLOG a wake of the server accepts before any is closed, the
    daemon's socket, the static files and the server itself)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(8, min(256, soft // 8)) if soft != resource.RLIM_INFINITY else 256


class BoundedH11(H11Protocol):
    """uvicorn's HTTP/1.1 connection, closed when it stays idle (no complete request head, and no
    request being answered) for IDLE_S, or when it is the idle one that has waited longest and the
    open connections pass `max_connections`. uvicorn itself times out only a kept-alive connection
    that sends nothing: not one that never completes a request, nor one that sends it a byte at a time."""

    def __init__(self, *args: Any, max_connections: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections = max_connections
        self.idle_since = 0.0
        self.deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle()
        self._close_the_longest_idle()

    def handle_events(self) -> None:
        super().handle_events()
        if self.busy():  # a whole request head came: it is being answered
            self._cancel()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._idle()
        super().on_response_complete()  # may start a pipelined request: handle_events then cancels

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def busy(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _idle(self) -> None:
        self._cancel()
        self.idle_since = self.loop.time()
        self.deadline = self.loop.call_later(IDLE_S, self._close)

    def _cancel(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _close(self) -> None:
        self._cancel()
        if not self.busy() and not self.transport.is_closing():
            self.transport.close()

    def _close_the_longest_idle(self) -> None:
        open_ = [c for c in self.connections if isinstance(c, BoundedH11) and not c.transport.is_closing()]
        excess = len(open_) - self.max_connections
        if excess <= 0:
            return
        idle = sorted((c for c in open_ if c is not self and not c.busy()), key=lambda c: c.idle_since)
        for connection in idle[:excess]:
            connection._close()


def bind(port: int = 0) -> socket.socket:
    """A listening socket on the loopback address alone (never 0.0.0.0): port 0 takes a free one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(BACKLOG)
    return sock


def serve(route: Route, config: Config, open_browser: bool, port: int = 0) -> None:
    """Serve the page until interrupted; print its address (with the key), open it if asked.

    The key is never on a command line (any user reads those): the browser is opened on a private
    file that leads to the address (see launch.py)."""
    sock = bind(port)
    port = sock.getsockname()[1]
    key = secrets.token_urlsafe(32)
    url = f"http://127.0.0.1:{port}/{key}/"
    print(f"mdrag ui: {url}", flush=True)
    print("(the address holds this run's key: share it with nobody; Ctrl-C stops the page)", file=sys.stderr)
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(route, config, key, port),
            http=functools.partial(BoundedH11, max_connections=connection_bound()),  # type: ignore[arg-type]
            ws="none",
            lifespan="off",
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            timeout_keep_alive=int(IDLE_S),
            timeout_graceful_shutdown=2,
            backlog=BACKLOG,
            log_level="error",  # not a warning per malformed request: anyone can send those
            access_log=False,  # the log would hold every address, and so the key
            server_header=False,
        )
    )
    opened = launch.open_browser(config, port, url) if open_browser else None
    # uvicorn ends a SIGTERM'd server by raising the signal again once it has stopped, which kills
    # the process before any `finally`: as an exit instead, the launch file is removed first.
    stopping = [sig for sig in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(sig) is signal.SIG_DFL]
    for sig in stopping:
        signal.signal(sig, _exit)
    try:
        server.run(sockets=[sock])
    finally:
        if opened is not None:
            opened.unlink(missing_ok=True)


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)

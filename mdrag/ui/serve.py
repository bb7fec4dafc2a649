"""Serve: `mdrag ui`'s web server, on 127.0.0.1 and a free port, with a random token per run."""

from __future__ import annotations

import secrets
import socket
import sys
import threading
import webbrowser

import uvicorn

from mdrag.cli.route import Route
from mdrag.config import Config
from mdrag.ui.app import build_app


def bind(port: int = 0) -> socket.socket:
    """A listening socket on the loopback address alone (never 0.0.0.0): port 0 takes a free one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


def serve(route: Route, config: Config, open_browser: bool, port: int = 0) -> None:
    """Serve the page until interrupted; print its address (with the token), open it if asked."""
    sock = bind(port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    url = f"http://127.0.0.1:{port}/?token={token}"
    print(f"mdrag ui: {url}", flush=True)
    print("(the address holds this run's key: share it with nobody; Ctrl-C stops the page)", file=sys.stderr)
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(route, config, token, port),
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
        )
    )
    if open_browser:
        threading.Timer(0.3, webbrowser.open, args=(url,)).start()
    server.run(sockets=[sock])

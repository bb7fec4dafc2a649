"""Client: one request to the daemon over its unix socket, one JSON line back."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

from mdrag import protocol
from mdrag.errors import RemoteError, ServerNotRunningError

CONNECT_TIMEOUT_S = 2.0


class DaemonClient:
    """Speaks the daemon's protocol; every method is one request and one response."""

    def __init__(self, socket_path: str, timeout: float | None = 600.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    def alive(self) -> bool:
        """True when a daemon answers a ping on the socket."""
        try:
            self.call("ping", timeout=CONNECT_TIMEOUT_S)
        except (ServerNotRunningError, RemoteError):
            return False
        return True

    def call(
        self,
        op: str,
        timeout: float | None = None,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        **params: Any,
    ) -> Any:
        """One request; with `on_progress`, the daemon streams progress lines (told to it) first."""
        if on_progress is not None:
            params["stream"] = True
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            try:
                sock.connect(self.socket_path)
            except (TimeoutError, FileNotFoundError, ConnectionRefusedError) as exc:
                raise ServerNotRunningError(
                    f"no mdrag daemon answers on {self.socket_path} ({exc})"
                ) from None
            except OSError as exc:
                raise ServerNotRunningError(f"cannot reach the daemon on {self.socket_path}: {exc}") from None
            sock.settimeout(timeout if timeout is not None else self.timeout)
            sock.sendall(protocol.encode(protocol.request(op, **params)))
            reply = b""
            for line in _lines(sock):
                if on_progress is not None and b'"progress"' in line:
                    message = json.loads(line)
                    if "progress" in message:
                        on_progress(message["progress"])
                        continue
                reply = line
                break
        except TimeoutError:
            raise RemoteError(f"the daemon did not answer '{op}' in time") from None
        finally:
            sock.close()
        if not reply:
            raise RemoteError(f"the daemon closed the connection without answering '{op}'")
        message = json.loads(reply)
        if not message.get("ok"):
            failure = message.get("error") or {}
            raise RemoteError(failure.get("message") or "the daemon reported an unknown error")
        return message["result"]

    def search(self, params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.call("search", **params)
        return result

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.call("status")
        return result

    def reindex(
        self,
        paths: list[str],
        force: bool,
        rebuild: bool,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.call(
            "reindex", timeout=None, on_progress=on_progress, paths=paths, force=force, rebuild=rebuild
        )
        return result


def _lines(sock: socket.socket) -> Iterator[bytes]:
    """The lines the daemon sends, each without its newline; a last one cut short is yielded too."""
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            yield line
        chunk = sock.recv(65536)
        if not chunk:
            if buffer:
                yield buffer
            return
        buffer += chunk

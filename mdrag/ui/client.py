"""Client: the page reaches the index through the daemon alone, and never opens it itself.

Milvus Lite lets one process hold an index: a page that opened it would lock `mdrag serve` and
`mdrag search` out for as long as it stays open. So with no daemon the page says to start one, and
answers as soon as one runs (taking that daemon's roots to show paths against).
"""

from __future__ import annotations

from typing import Any

from mdrag.client.connection import CONNECT_TIMEOUT_S, DaemonClient
from mdrag.errors import ServerNotRunningError
from mdrag.progress import OnProgress

NO_DAEMON = (
    "no mdrag daemon is running: start it with `mdrag serve`, and this page answers as soon as it runs"
)
PAGE_TIMEOUT_S = 120.0


class PageClient(DaemonClient):
    """The daemon's client for the page: a missing daemon is NO_DAEMON, and one that appears is
    first asked for its roots (its ping sets this client's `paths`, which the page shows)."""

    def __init__(self, socket_path: str) -> None:
        super().__init__(socket_path, timeout=PAGE_TIMEOUT_S)

    def call(
        self, op: str, timeout: float | None = None, on_progress: OnProgress | None = None, **params: Any
    ) -> Any:
        try:
            if not self.paths.known and op != "ping":
                super().call("ping", timeout=CONNECT_TIMEOUT_S)  # it takes the daemon's roots
            return super().call(op, timeout, on_progress, **params)
        except ServerNotRunningError as exc:
            self.paths.use_roots(())  # the next daemon may serve other roots: none read until it says
            raise ServerNotRunningError(f"{NO_DAEMON} ({exc})") from None

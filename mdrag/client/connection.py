"""Client: one request to the daemon over its unix socket, one JSON line back."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mdrag import protocol
from mdrag.client.paths import Paths
from mdrag.errors import DaemonBusyError, RemoteError, RequestTooLargeError, ServerNotRunningError
from mdrag.files import trust
from mdrag.params.operations import OPERATIONS
from mdrag.params.search import SearchParams
from mdrag.progress import OnProgress

if TYPE_CHECKING:
    from mdrag.answers.search import SearchAnswer
    from mdrag.answers.status import ReindexReport, StartingAnswer, StatusAnswer

CONNECT_TIMEOUT_S = 2.0
BUSY_RETRY_S = 3.0  # how long a call retries a daemon that answers "busy" before saying so


class DaemonClient:
    """Speaks the daemon's protocol; every method is one request and one response. Its `paths`
    are shown against the roots of the daemon that last answered its ping."""

    def __init__(self, socket_path: str, timeout: float | None = 600.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self.paths = Paths()

    def alive(self) -> bool:
        """True when a daemon answers a ping on the socket; False only when none listens there.

        A daemon that is there but busy (or answers with an error) raises: a caller must never
        take it for no daemon and open the index itself.
        """
        try:
            self.call("ping", timeout=CONNECT_TIMEOUT_S)
        except ServerNotRunningError:
            return False
        return True

    def call(
        self,
        op: str,
        timeout: float | None = None,
        on_progress: OnProgress | None = None,
        **params: Any,
    ) -> Any:
        """One request; a daemon out of client slots is asked again for up to BUSY_RETRY_S. With
        `on_progress`, the daemon streams progress lines (told to it) before its answer."""
        if op not in OPERATIONS:  # a typo fails here, not as the daemon's refusal
            raise ValueError(f"unknown operation {op!r}; known: {', '.join(OPERATIONS)}")
        if on_progress is not None:
            params["stream"] = True
        deadline = time.monotonic() + BUSY_RETRY_S
        pause = 0.02
        while True:
            try:
                answer = self._call_once(op, timeout, on_progress, **params)
            except DaemonBusyError:
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
                continue
            if op == "ping":  # the daemon's roots: the ones its answers' paths are shown against
                self.paths.use_roots(answer.get("roots") or ())
            return answer

    def _call_once(
        self,
        op: str,
        timeout: float | None,
        on_progress: OnProgress | None,
        **params: Any,
    ) -> Any:
        request = protocol.encode(protocol.request(op, **params))
        if len(request) > protocol.MAX_REQUEST_BYTES:  # said here, not as a connection cut short
            raise RequestTooLargeError(protocol.too_large(len(request)))
        # The folder first: a socket in a folder another user can write may be theirs.
        if not trust.check_folder(Path(self.socket_path).expanduser().parent):
            raise ServerNotRunningError(f"no mdrag daemon answers on {self.socket_path} (no such folder)")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            try:
                sock.connect(self.socket_path)
            except (TimeoutError, BlockingIOError) as exc:
                # The socket is there and its backlog full: a daemon, too busy to accept.
                raise DaemonBusyError(
                    f"the mdrag daemon on {self.socket_path} is busy ({exc}); try again shortly"
                ) from None
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                raise ServerNotRunningError(
                    f"no mdrag daemon answers on {self.socket_path} ({exc})"
                ) from None
            except OSError as exc:
                raise ServerNotRunningError(f"cannot reach the daemon on {self.socket_path}: {exc}") from None
            trust.check_server(sock, self.socket_path)  # before a word is sent or read
            sock.settimeout(timeout if timeout is not None else self.timeout)
            try:
                sock.sendall(request)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the daemon stopped reading (a refusal): its answer, if it gave one, is read below
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
        except OSError as exc:  # never a bare OSError: click ends a broken pipe silently with 1
            raise RemoteError(f"the connection to the daemon broke during '{op}': {exc}") from None
        finally:
            sock.close()
        if not reply:
            raise RemoteError(f"the daemon closed the connection without answering '{op}'")
        message = json.loads(reply)
        if not message.get("ok"):
            failure = message.get("error") or {}
            if failure.get("type") == "Busy":
                raise DaemonBusyError(
                    f"the mdrag daemon on {self.socket_path} is busy: {failure.get('message')}"
                )
            # The daemon's error as its own class (a refused argument is a QueryError, as if
            # checked here; a note the index lacks a NotFoundError), a RemoteError too.
            protocol.raise_failure(failure)
        return message["result"]

    def search(self, params: SearchParams, wait_fresh: float | None = None) -> SearchAnswer:
        """The search these parameters ask for; the fields they leave out take the daemon's
        defaults (`SearchParams.to_request`), and `wait_fresh` waits for its queue first."""
        request: dict[str, Any] = dict(params.to_request())
        if wait_fresh is not None:
            request["wait_fresh"] = wait_fresh
        result: SearchAnswer = self.call("search", **request)
        return result

    def status(self) -> StatusAnswer | StartingAnswer:
        """What the index holds, or, while the daemon starts, what it is loading (at once)."""
        result: StatusAnswer | StartingAnswer = self.call("status")
        return result

    def reindex(
        self,
        paths: list[str],
        force: bool,
        rebuild: bool,
        on_progress: OnProgress | None = None,
    ) -> ReindexReport:
        """One run, or, for more paths than one request holds (a shell glob of 40,000 notes is
        megabytes), one run per batch in turn, their reports added up; a rebuild goes with the first."""
        reports: list[ReindexReport] = []
        for batch in _batches(paths, protocol.MAX_REQUEST_BYTES - 4096):  # room for the rest of it
            reports.append(
                self.call(
                    "reindex",
                    timeout=None,
                    on_progress=on_progress,
                    paths=batch,
                    force=force,
                    rebuild=rebuild and not reports,
                )
            )
        return _added_up(reports)


def _batches(paths: list[str], budget: int) -> Iterator[list[str]]:
    """`paths` in lists whose JSON takes at most `budget` bytes each (one list when they fit)."""
    batch: list[str] = []
    size = 0
    for path in paths:
        cost = len(json.dumps(path, ensure_ascii=False).encode("utf-8", "surrogateescape")) + 2
        if batch and size + cost > budget:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += cost
    yield batch


def _added_up(reports: list[ReindexReport]) -> ReindexReport:
    """One report of several runs: counts and seconds summed, failures listed together."""
    total: dict[str, Any] = dict(reports[0])
    for report in reports[1:]:
        for key, value in report.items():
            if isinstance(value, list):
                total[key] = [*total.get(key, []), *value]
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return cast("ReindexReport", total)


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

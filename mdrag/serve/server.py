"""Server: the daemon's unix socket; newline-delimited JSON requests from local, same-user clients."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from loguru import logger

from mdrag import protocol
from mdrag.errors import AlreadyRunningError, MdragError
from mdrag.files import trust
from mdrag.files.trust import peer_uid
from mdrag.serve.lobby import Lobby, reply

Handler = Callable[[str, dict[str, Any]], Any]


class SocketServer:
    """Accepts connections on a unix socket and answers each request line with one response line."""

    def __init__(
        self,
        path: str,
        handler: Handler,
        max_request_bytes: int = protocol.MAX_REQUEST_BYTES,
        read_timeout_s: float = 10.0,
        idle_timeout_s: float = 120.0,
        max_clients: int = 64,
        first_line_timeout_s: float = 5.0,
    ) -> None:
        self.path = Path(path).expanduser()
        self.handler = handler
        self.max_request_bytes = max_request_bytes
        self.read_timeout_s = read_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.first_line_timeout_s = first_line_timeout_s
        self._slots = threading.BoundedSemaphore(max_clients)
        self._allowed = {os.getuid(), 0}
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lobby: Lobby | None = None
        self._bound: tuple[int, int] | None = None  # (device, inode) of the socket file bound
        self._rebind_problem: str | None = None  # said once, not every second

    def claim(self) -> None:
        """Create the socket: a live one means another daemon; a dead one is replaced. Its folder
        is made 0700, and one that is not this user's alone is refused (see trust)."""
        trust.check_folder(self.path.parent, create=True)
        if self.path.exists() or self.path.is_symlink():
            if not self.path.is_socket():
                raise AlreadyRunningError(
                    f"{self.path} exists and is not a socket; remove it or choose another path"
                )
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.settimeout(2)
            try:
                probe.connect(str(self.path))
            except OSError:
                logger.info("replacing the stale socket {} (its daemon is gone)", self.path)
                self.path.unlink()
            else:
                # named by its process, as the index lock names its holder
                raise AlreadyRunningError.serving(str(self.path), trust.peer_credentials(probe)[0])
            finally:
                probe.close()
        self._listener = self._bind()

    def _bind(self) -> socket.socket:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            previous = os.umask(0o177)  # the socket is born 0600: no moment where others may connect
            try:
                listener.bind(str(self.path))
            finally:
                os.umask(previous)
            os.chmod(self.path, 0o600)
            info = os.lstat(self.path)
            listener.listen(128)
        except BaseException:
            listener.close()
            raise
        self._bound = (info.st_dev, info.st_ino)
        return listener

    def rebind_if_gone(self) -> None:
        """Bind the socket again if its file was removed (a /tmp cleaner, logind at logout) or
        replaced by a dead one: without it every client would fail for good. Called every second
        or so; a live socket of another process at the path is left alone (and said once)."""
        if self._lobby is None or self._stopping.is_set():
            return
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            self._say_once(f"cannot check the socket {self.path}: {exc}")
            return
        if info is not None and (info.st_dev, info.st_ino) == self._bound:
            self._rebind_problem = None
            return
        what = "removed" if info is None else "replaced"
        if info is not None:
            if not stat.S_ISSOCK(info.st_mode):
                self._say_once(f"the socket {self.path} was replaced by a file, not a socket; remove it")
                return
            if _answers(self.path):
                self._say_once(f"another process now serves {self.path}; this daemon is unreachable there")
                return
        try:
            if info is not None:
                self.path.unlink(missing_ok=True)  # a dead socket in our own folder
            trust.check_folder(self.path.parent, create=True)  # the folder may have gone with it
            listener = self._bind()
        except (OSError, MdragError) as exc:
            self._say_once(f"the socket {self.path} was {what} and cannot be bound again: {exc}")
            return
        self._listener = listener
        self._lobby.replace_listener(listener)
        self._rebind_problem = None
        logger.warning("the socket {} was {} (a temp cleaner? a logout?); bound it again", self.path, what)

    def _say_once(self, problem: str) -> None:
        if problem != self._rebind_problem:
            self._rebind_problem = problem
            logger.warning("{}", problem)

    def start(self) -> None:
        if self._listener is None:
            self.claim()
        assert self._listener is not None
        # Connections wait for their request lines in the lobby, with no thread or slot.
        self._lobby = Lobby(
            self._listener,
            self._dispatch,
            self._stopping,
            first_line_s=self.first_line_timeout_s,
            read_s=self.read_timeout_s,
            idle_s=self.idle_timeout_s,
            max_request_bytes=self.max_request_bytes,
        )
        self._thread = threading.Thread(target=self._accept_loop, name="mdrag-accept", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting and remove the socket file; requests in hand finish on their own."""
        self._stopping.set()
        if self._lobby is not None:
            self._lobby.wake()
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        if self._thread is not None:
            self._thread.join(timeout=2)
        try:
            info = os.lstat(self.path)
            if (info.st_dev, info.st_ino) == self._bound:  # ours: never another daemon's socket
                self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            logger.warning("could not remove the socket {}: {}", self.path, exc)

    def _accept_loop(self) -> None:
        assert self._lobby is not None
        self._lobby.run()

    def _dispatch(self, conn: socket.socket, buffer: bytes) -> None:
        """A connection with a whole request line: answered on a thread of its own, in a slot."""
        uid = peer_uid(conn)
        if uid not in self._allowed:  # refused once its request is in, so that it reads the answer
            logger.warning("refused a client running as uid {}", uid)
            reply(conn, protocol.error("PermissionDenied", "only the daemon's own user may connect"))
            return
        if not self._slots.acquire(blocking=False):
            reply(
                conn,
                protocol.error("Busy", "too many requests at once; try again shortly"),
            )
            return
        try:
            threading.Thread(
                target=self._serve, args=(conn, buffer), name="mdrag-client", daemon=True
            ).start()
        except BaseException:
            self._slots.release()  # no thread, no slot held
            raise

    def _serve(self, conn: socket.socket, buffer: bytes) -> None:
        """Answer every whole line in hand, then free the slot: the connection waits for its
        next request in the lobby."""
        keep = False
        try:
            conn.settimeout(self.read_timeout_s)  # a client that reads nothing stalls only itself
            while b"\n" in buffer and not self._stopping.is_set():
                line, _, buffer = buffer.partition(b"\n")
                for message in self._answer(line):  # progress lines first, when it streams
                    conn.sendall(protocol.encode(message))
            keep = not self._stopping.is_set()
        except (OSError, TimeoutError):
            return  # the client went away or stalled: its connection only
        finally:
            self._slots.release()
            if keep and self._lobby is not None:
                self._lobby.hand_back(conn, buffer)
            else:
                conn.close()

    def _answer(self, line: bytes) -> Iterator[protocol.Message]:
        """The response to one request: one line, or progress lines first when the handler
        streams (returns a generator: what it yields is progress, what it returns the result)."""
        try:
            op, params = protocol.decode_request(line)
            result = self.handler(op, params)
            if isinstance(result, Generator):
                while True:
                    try:
                        step = next(result)
                    except StopIteration as stop:
                        result = stop.value
                        break
                    yield protocol.progress(step)
            yield protocol.ok(result)
        except MdragError as exc:  # its kind travels: the client raises the same class
            yield protocol.failure(exc)
        except Exception as exc:  # a bug answers this request with an error, never the daemon's life
            logger.exception("request failed")
            yield protocol.error("InternalError", f"internal error: {exc!r}")


def _answers(path: Path) -> bool:
    """Whether a process accepts connections on the socket at `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True

"""Lobby: the socket server's connections waiting for a request line, held with no thread or slot.

A client slot (and a thread) is given only to a connection with a whole request line in hand,
and returned as soon as it is answered: a connection then waits here again for its next line.
So idle connections, however many, never lock others out: a new one must send its first line
within `first_line_s`, a started line must be finished within `read_s`, a kept connection may
sit idle `idle_s`; and when `max_waiting` are waiting, the one waiting longest is closed for a
newcomer.
"""

from __future__ import annotations

import errno
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from loguru import logger

from mdrag import protocol


@dataclass
class _Waiting:
    deadline: float
    buffer: bytes = b""


class Lobby:
    def __init__(
        self,
        listener: socket.socket,
        dispatch: Callable[[socket.socket, bytes], None],
        stopping: threading.Event,
        first_line_s: float,
        read_s: float,
        idle_s: float,
        max_request_bytes: int,
        max_waiting: int = 512,  # well under a service's usual soft limit of 1,024 open files
    ) -> None:
        self._listener = listener
        self._dispatch = dispatch  # takes a connection with a whole line in hand
        self._stopping = stopping
        self.first_line_s, self.read_s, self.idle_s = first_line_s, read_s, idle_s
        self.max_request_bytes = max_request_bytes
        self.max_waiting = max_waiting
        self._waiting: dict[socket.socket, _Waiting] = {}  # oldest first
        self._returned: queue.SimpleQueue[tuple[socket.socket, bytes]] = queue.SimpleQueue()
        self._listeners: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()  # to swap in
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector = selectors.DefaultSelector()

    def hand_back(self, conn: socket.socket, rest: bytes) -> None:
        """A connection whose request was answered waits here for its next one (any thread)."""
        self._returned.put((conn, rest))
        self.wake()

    def replace_listener(self, listener: socket.socket) -> None:
        """Accept on `listener` from now on, closing the one before (any thread): the socket was
        bound again after its file was removed."""
        self._listeners.put(listener)
        self.wake()

    def wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass  # already woken (the pipe is full) or closed

    def run(self) -> None:
        try:
            try:
                self._listener.setblocking(False)
                self._selector.register(self._listener, selectors.EVENT_READ, "listener")
                self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
            except (OSError, ValueError):  # a socket closed meanwhile has no descriptor: ValueError
                if self._stopping.is_set():
                    return  # stopped before the loop began: the listener is closed already
                raise
            while not self._stopping.is_set():
                now = time.monotonic()
                soonest = min((w.deadline for w in self._waiting.values()), default=now + 1.0)
                for key, _ in self._selector.select(max(0.0, min(soonest - now, 1.0))):
                    try:
                        if key.data == "listener":
                            self._accept()
                        elif key.data == "wake":
                            self._take_returned()
                        else:
                            self._read(key.fileobj)  # type: ignore[arg-type]
                    except Exception:  # one connection's trouble must never end the accepting
                        logger.exception("a client connection failed")
                        if key.data == "client":
                            self._drop(key.fileobj)  # type: ignore[arg-type]
                self._expire()
        finally:
            for conn in list(self._waiting):
                self._drop(conn)
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()
            while not self._returned.empty():
                self._returned.get()[0].close()
            if not self._listeners.empty():  # a listener bound again, never swapped in
                self._listener.close()
                while not self._listeners.empty():
                    self._listeners.get().close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    # Out of descriptors: the one waiting longest makes room, or the listener,
                    # readable all the while, would spin this loop.
                    if self._waiting:
                        self._drop(next(iter(self._waiting)))
                        continue
                    time.sleep(0.05)
                return  # else the listener was closed (stopping), or a connection failed as it came
            if len(self._waiting) >= self.max_waiting:
                self._drop(next(iter(self._waiting)))  # the one waiting longest makes room
            self._wait(conn, b"", time.monotonic() + self.first_line_s)

    def _take_returned(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        while not self._listeners.empty():
            listener = self._listeners.get()
            self._selector.unregister(self._listener)
            self._listener.close()
            listener.setblocking(False)
            self._selector.register(listener, selectors.EVENT_READ, "listener")
            self._listener = listener
        while not self._returned.empty():
            conn, rest = self._returned.get()
            if self._stopping.is_set():
                conn.close()
                continue
            self._wait(conn, b"", time.monotonic() + self.idle_s)
            if rest:
                self._take(conn, rest)

    def _wait(self, conn: socket.socket, buffer: bytes, deadline: float) -> None:
        conn.setblocking(False)
        self._waiting[conn] = _Waiting(deadline, buffer)
        self._selector.register(conn, selectors.EVENT_READ, "client")

    def _read(self, conn: socket.socket) -> None:
        try:
            chunk = conn.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)  # the client is done
            return
        self._take(conn, chunk)

    def _take(self, conn: socket.socket, chunk: bytes) -> None:
        waiting = self._waiting[conn]
        if not waiting.buffer:  # a line has started: it must be finished soon
            waiting.deadline = min(waiting.deadline, time.monotonic() + self.read_s)
        waiting.buffer += chunk
        end = waiting.buffer.find(b"\n")
        if (end < 0 and len(waiting.buffer) > self.max_request_bytes) or end > self.max_request_bytes:
            self._refuse(
                conn,
                protocol.error("RequestTooLarge", protocol.too_large(limit=self.max_request_bytes)),
            )
            return
        if end >= 0:
            self._release(conn)
            self._dispatch(conn, waiting.buffer)

    def _expire(self) -> None:
        now = time.monotonic()
        for conn, waiting in list(self._waiting.items()):
            if waiting.deadline <= now:
                if waiting.buffer:
                    self._refuse(conn, protocol.error("Timeout", "request incomplete; closed"))
                else:
                    self._drop(conn)  # idle too long (or never spoke): its connection only

    def _refuse(self, conn: socket.socket, message: protocol.ErrorAnswer) -> None:
        self._release(conn)
        reply(conn, message)

    def _release(self, conn: socket.socket) -> None:
        self._waiting.pop(conn, None)
        try:
            self._selector.unregister(conn)
        except (KeyError, ValueError):
            pass

    def _drop(self, conn: socket.socket) -> None:
        self._release(conn)
        conn.close()


def reply(conn: socket.socket, message: protocol.Message) -> None:
    """One message, then close: never blocks the caller for long on a client that reads nothing."""
    try:
        conn.settimeout(0.5)
        conn.sendall(protocol.encode(message))
    except OSError as exc:
        logger.debug("could not answer a refused client: {}", exc)
    finally:
        conn.close()

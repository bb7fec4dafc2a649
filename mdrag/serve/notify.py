"""systemd notify protocol: READY=1, STATUS= and WATCHDOG=1 datagrams to $NOTIFY_SOCKET."""

from __future__ import annotations

import os
import socket

from loguru import logger


class SystemdNotifier:
    """Speaks sd_notify(3) directly: one datagram per message, silently off outside systemd."""

    def __init__(self, address: str | None = None) -> None:
        address = address if address is not None else os.environ.get("NOTIFY_SOCKET", "")
        # A leading "@" names a socket in the abstract namespace.
        self._address = "\0" + address[1:] if address.startswith("@") else address
        self._socket: socket.socket | None = None
        if self._address:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        usec = os.environ.get("WATCHDOG_USEC", "")
        pid = os.environ.get("WATCHDOG_PID", "")
        watched = usec.isdigit() and (not pid or pid == str(os.getpid()))
        # Heartbeat at half the deadline, as sd_watchdog_enabled(3) advises.
        self.watchdog_interval_s = int(usec) / 2e6 if watched else None

    @property
    def enabled(self) -> bool:
        return self._socket is not None

    def send(self, *lines: str) -> None:
        if self._socket is None:
            return
        try:
            self._socket.sendto("\n".join(lines).encode("utf-8"), self._address)
        except OSError as exc:  # systemd gone or socket full: never fatal to the daemon
            logger.debug("sd_notify failed: {}", exc)

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def heartbeat(self) -> None:
        self.send("WATCHDOG=1")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

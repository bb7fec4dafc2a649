"""Liveness: when the writer thread last showed progress, so the systemd watchdog sees a stuck writer."""

from __future__ import annotations

import threading
import time

# A writer silent this long is stuck (in a Milvus call that never returns, say). Generous: it
# shows progress at least once per model batch or queue poll, and a false restart repeats work.
WRITER_STALL_S = 300.0


class Liveness:
    """The last moment a worker showed progress."""

    def __init__(self, stall_s: float = WRITER_STALL_S) -> None:
        self.stall_s = stall_s
        self._last = time.monotonic()

    def beat(self) -> None:
        self._last = time.monotonic()

    def stalled_for(self) -> float | None:
        """Seconds since the last beat once past `stall_s`; None while the worker is alive."""
        silent = time.monotonic() - self._last
        return silent if silent > self.stall_s else None


class PulsingEvent(threading.Event):
    """A stop event whose checks by the named thread count as its beats.

    Long work checks its stop event between steps (the embedder between model batches, the
    indexer between write batches), so each check is proof that the thread still moves.
    """

    def __init__(self, liveness: Liveness, thread_name: str) -> None:
        super().__init__()
        self._liveness = liveness
        self._thread_name = thread_name

    def is_set(self) -> bool:
        if threading.current_thread().name == self._thread_name:
            self._liveness.beat()
        return super().is_set()

"""Gate: the daemon's requests share the store; reopening it waits for them and holds new ones back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Gate:
    """Any number of shared holders at once, or one exclusive holder alone.

    An exclusive holder that waits goes first: requests arriving meanwhile wait behind it, so a
    steady stream of searches cannot put off a reopen for ever.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    @property
    def busy(self) -> bool:
        """True while anyone holds the gate or waits for it alone."""
        with self._cond:
            return bool(self._shared or self._exclusive or self._waiting)

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[bool]:
        """Alone with the store: yields True. With `timeout` (a stopping daemon), after that many
        seconds it goes on beside the shared holders still in (yields False), new ones held back."""
        deadline = None if timeout is None else time.monotonic() + timeout
        alone = True
        with self._cond:
            self._waiting += 1
            try:
                while self._exclusive or self._shared:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        alone = False
                        break
                    self._cond.wait(left)
            finally:
                self._waiting -= 1
            self._exclusive = True
        try:
            yield alone
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

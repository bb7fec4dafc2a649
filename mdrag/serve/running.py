"""A daemon's state, set by its lifecycle, read by its requests: what its start does, then what it runs."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mdrag.answers.status import ProgressSnapshot
from mdrag.errors import StoreError
from mdrag.serve.writer import Writer

if TYPE_CHECKING:  # imported when the service opens: `status` answers before pymilvus and the model load
    from mdrag.index.watcher import Watcher
    from mdrag.service import Service

STILL_LOADING = "the daemon is still loading the model and opening the index; try again shortly"


@dataclass
class Running:
    """What the daemon builds once its socket is bound and the index is open: all of it at once."""

    service: Service
    writer: Writer
    watcher: Watcher  # replaced by a new one if it stops


class DaemonState:
    """Where the daemon is: loading (and what), then running; the daemon (daemon.py) sets it,
    its requests (requests.py) read it."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.started_at = time.time()
        self.loading = "starting"  # what the start is doing, for a status asked meanwhile
        self.current: Running | None = None  # set once, with the index open (see Daemon.run)
        # Set after `current`: the writer runs and the first reconcile is queued.
        self.ready = threading.Event()

    @property
    def running(self) -> Running:
        """The service, writer and watcher; only asked for once the daemon is ready."""
        if self.current is None:
            raise StoreError(STILL_LOADING)
        return self.current

    def indexing(self) -> ProgressSnapshot | None:
        """The run under way (notes and texts done of those known, rate, ETA), else None."""
        return self.current.writer.indexing() if self.current is not None else None

    def uptime_s(self) -> float:
        return round(time.time() - self.started_at, 1)

"""Route: how a command reaches the index: the daemon over its socket, else a Service opened here."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from mdrag.client.paths import Paths
from mdrag.config import Config
from mdrag.errors import (
    AlreadyRunningError,
    MdragError,
    NoIndexError,
    ServerNotRunningError,
    StoreLockedError,
    UnsafePathError,
)
from mdrag.params.search import SearchParams
from mdrag.progress import OnProgress

if TYPE_CHECKING:
    from mdrag.answers.search import SearchAnswer
    from mdrag.answers.status import ReindexReport, StartingAnswer, StatusAnswer
    from mdrag.files.indexlock import IndexLock

# The index's own modules (its lock, its files, the engine's helpers) are imported where a command
# opens the index in this process: a search through the daemon never needs them, and its start
# is what a person waits for.


class Route(Protocol):
    """What the commands need: the daemon over its socket, or a Service in this process; and
    the index's paths as a person reads and types them (against the roots it serves)."""

    paths: Paths

    def search(self, params: SearchParams, wait_fresh: float | None = None) -> SearchAnswer: ...

    def status(self) -> StatusAnswer | StartingAnswer: ...

    def reindex(
        self, paths: list[str], force: bool, rebuild: bool, on_progress: OnProgress | None = None
    ) -> ReindexReport: ...

    def call(self, op: str, **params: Any) -> Any: ...


class LocalRoute:
    """Opens the index in this process (only when no daemon holds it)."""

    def __init__(self, config: Config) -> None:
        from mdrag.files import indexlock, private
        from mdrag.files.indexfiles import IndexFiles
        from mdrag.milvus import start_early

        private.restrict_umask()  # what this command (and the Lite servers it starts) makes is private
        # The index's lock before any Lite server starts: a refused command touches nothing.
        lock = indexlock.acquire(IndexFiles.of(config).lock, config.milvus_uri)
        try:
            start_early(config.milvus_uri)  # the servers' start overlaps the imports below
            from mdrag.service import Service  # heavy: pymilvus, numpy, the model's runtime
        except BaseException:
            lock.release()
            raise
        self.service = Service.open(config, lock)  # owns the lock from here: releases it on close
        # Paths as the daemon showed them: from its roots, when this command's config names none.
        self.paths = Paths(config.roots or self.service.files.recorded_roots())

    def search(self, params: SearchParams, wait_fresh: float | None = None) -> SearchAnswer:
        """The search, on the parameters as parsed (once); a local index is as fresh as it gets,
        so `wait_fresh` has nothing to wait for."""
        return self.service.search(params)

    def status(self) -> StatusAnswer:
        return {"daemon": None, **self.service.status()}

    def call(self, op: str, **params: Any) -> Any:
        """Any operation of the table that the service answers, here as the daemon would."""
        return self.service.handle(op, params)

    def reindex(
        self, paths: list[str], force: bool, rebuild: bool, on_progress: OnProgress | None = None
    ) -> ReindexReport:
        from mdrag.progress import ProgressMeter

        meter = ProgressMeter(on_progress)
        report = self.service.reindex(paths or None, force=force, rebuild=rebuild, progress=meter)
        return report.to_dict()

    def close(self) -> None:
        self.service.close()


@contextmanager
def open_route(config: Config, quiet: bool, create: bool = False) -> Iterator[Route]:
    """The daemon when one answers on the socket, else the index opened here (and only then
    is logging set up: loguru's import is a fifth of a short command's start-up).

    Only `create` (reindex) may make an index; a read command with no daemon and no index says
    so. A command that loses the start race (a daemon bound its socket after we looked, and
    holds the index now) yields: it asks that daemon instead."""
    from mdrag.client.connection import DaemonClient

    client = DaemonClient(config.server_socket_path)
    if _answers(client):
        yield client
        return
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.milvus import index_exists

    if not create and not index_exists(config.milvus_uri):
        raise NoIndexError(
            f"no index at {IndexFiles.of(config).database}: start `mdrag serve` or run `mdrag reindex DIR`"
        )
    configure_command_logging(config, quiet)
    route = _local_unless_daemon(config, client)
    if route is None:
        yield client
        return
    try:
        yield route
    finally:
        route.close()


DAEMON_START_WAIT_S = 30.0  # how long a command waits for a starting daemon's socket to answer
DAEMON_POLL_S = 0.1


def _local_unless_daemon(config: Config, client: Any) -> LocalRoute | None:
    """The index opened here, or None when a daemon holds it and answers: ask that one.

    A daemon takes the index's lock before it binds its socket (a second `serve` is refused at
    once), so a command may find the lock held by a daemon that does not answer yet: it waits for
    it (bounded, polling the socket) rather than fail a `status` polled while the daemon starts.
    A command holding the index, or a daemon that never answers, gets the lock's clear error."""
    from mdrag.files import indexlock

    deadline = time.monotonic() + DAEMON_START_WAIT_S
    while True:
        try:
            return LocalRoute(config)
        except StoreLockedError as busy:
            if _answers(client):
                return None
            # Only a daemon that will serve our socket is worth the wait (another never answers here).
            starting = (
                isinstance(busy, indexlock.IndexBusyError)
                and busy.role == indexlock.DAEMON
                and busy.socket in ("", config.server_socket_path)
            )
            if not starting:
                raise
            if time.monotonic() >= deadline:
                raise StoreLockedError(
                    f"{busy}; it has not answered on {config.server_socket_path} "
                    f"for {DAEMON_START_WAIT_S:.0f} s (still starting? see its log)"
                ) from busy
        time.sleep(DAEMON_POLL_S)


def _answers(client: Any) -> bool:
    """True when a daemon answers a ping (the client takes its roots to show paths against)."""
    from mdrag.errors import DaemonBusyError, RemoteError

    try:
        client.call("ping", timeout=2.0)
    except DaemonBusyError:
        raise  # a live daemon, only busy: never open the index beside it
    except (ServerNotRunningError, RemoteError):
        return False
    return True


def lock_index_for_daemon(config: Config) -> IndexLock | None:
    """The index's lock for `mdrag serve`, taken before its heavy imports and held for the
    process's life, so that a second daemon is refused at once. A daemon already serving this
    socket is named as such, another daemon by its pid. A short-lived command holding the index
    (a `status` polled while the daemon starts) is not refused: None, and the daemon takes the
    lock once its socket is bound, waiting for the command to let go (the daemon wins the race)."""
    from mdrag.files import indexlock
    from mdrag.files.indexfiles import IndexFiles

    try:
        return indexlock.acquire(
            IndexFiles.of(config).lock,
            config.milvus_uri,
            indexlock.DAEMON,
            config.server_socket_path,
        )
    except indexlock.IndexBusyError as busy:
        if busy.role == indexlock.COMMAND:
            return None
        from mdrag.client.connection import DaemonClient

        try:
            serving = DaemonClient(config.server_socket_path).alive()
        except UnsafePathError:
            raise  # a socket we may not trust: say so, not "already running"
        except MdragError:
            serving = True  # it answered, busy: a daemon all the same
        if serving:
            raise AlreadyRunningError.serving(config.server_socket_path, busy.pid) from None
        raise


def configure_command_logging(config: Config, quiet: bool) -> None:
    """Commands whose output is the answer (search, status, --json) log only warnings,
    unless MDRAG_LOG_LEVEL asks for more."""
    from mdrag.log import configure_logging

    configure_logging("WARNING" if quiet and not os.environ.get("MDRAG_LOG_LEVEL") else config.log_level)

"""Backend: how a command reaches the index: the daemon over its socket, else a Service opened here."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from mdrag import indexlock, lite
from mdrag.config import Config
from mdrag.errors import AlreadyRunningError, MdragError, ServerNotRunningError


class Backend(Protocol):
    """What the commands need: the daemon over its socket, or a Service in this process."""

    def search(self, params: dict[str, Any]) -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...

    def reindex(self, paths: list[str], force: bool, rebuild: bool) -> dict[str, Any]: ...

    def call(self, op: str, **params: Any) -> Any: ...


class LocalBackend:
    """Opens the index in this process (only when no daemon holds it)."""

    def __init__(self, config: Config) -> None:
        # The index's lock before any Lite server starts: a refused command touches nothing.
        self._lock = indexlock.acquire(
            indexlock.lock_path(config.milvus_uri, config.data_dir), config.milvus_uri
        )
        try:
            lite.start_early(config.milvus_uri)  # its fixed start-up wait overlaps the imports below
            from mdrag.service import Service  # heavy: pymilvus, numpy, the model's runtime

            self.service = Service(config)
        except BaseException:
            self._lock.release()
            raise

    def search(self, params: dict[str, Any]) -> dict[str, Any]:
        response = self.service.search(params)
        # No daemon, no queue: the index is exactly as fresh as its last reindex.
        response["freshness"] = {
            "queue_depth": 0,
            "last_change_applied_at": self.service.catalog.last_indexed_at(),
        }
        return response

    def status(self) -> dict[str, Any]:
        return {"daemon": None, **self.service.status()}

    def call(self, op: str, **params: Any) -> Any:
        """Any read operation of the protocol, answered here as the daemon would."""
        return self.search(params) if op == "search" else self.service.handle(op, params)

    def reindex(self, paths: list[str], force: bool, rebuild: bool) -> dict[str, Any]:
        with _progress_bar() as progress:
            report = self.service.reindex(paths or None, force=force, rebuild=rebuild, progress=progress)
        return report.to_dict()

    def close(self) -> None:
        try:
            self.service.close()
        finally:
            self._lock.release()


@contextmanager
def _progress_bar() -> Iterator[Any]:
    """A tqdm bar on a terminal (files, sections/s, ETA); a log line now and then otherwise."""
    if not sys.stderr.isatty():
        from loguru import logger

        last = [0.0]

        def log_progress(done: int, total: int, sections: int) -> None:
            if time.monotonic() - last[0] > 5 or done == total:
                last[0] = time.monotonic()
                logger.info("indexed {}/{} files, {} sections embedded", done, total, sections)

        yield log_progress
        return
    from tqdm import tqdm

    bar = tqdm(total=0, unit="file", dynamic_ncols=True, file=sys.stderr)
    started = time.monotonic()

    def update(done: int, total: int, sections: int) -> None:
        bar.total = total
        bar.n = done
        rate = sections / max(time.monotonic() - started, 1e-6)
        bar.set_postfix_str(f"{sections} sections, {rate:.0f} sections/s", refresh=False)
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()


@contextmanager
def open_backend(config: Config, quiet: bool, need_daemon: bool = False) -> Iterator[Backend]:
    """The daemon when one answers on the socket, else the index opened here (and only then
    is logging set up: loguru's import is a fifth of a short command's start-up)."""
    from mdrag.client import DaemonClient

    client = DaemonClient(config.server_socket_path)
    if client.alive():
        yield client
        return
    if need_daemon:
        raise ServerNotRunningError(
            f"no mdrag daemon answers on {config.server_socket_path}; start it with `mdrag serve`"
        )
    configure_command_logging(config, quiet)
    backend = LocalBackend(config)
    try:
        yield backend
    finally:
        backend.close()


def lock_index_for_daemon(config: Config) -> indexlock.IndexLock:
    """The index's lock for `mdrag serve`, held for the process's life; a daemon already serving
    this socket is named as such, any other holder by its pid."""
    try:
        return indexlock.acquire(indexlock.lock_path(config.milvus_uri, config.data_dir), config.milvus_uri)
    except indexlock.IndexBusyError:
        from mdrag.client import DaemonClient

        try:
            serving = DaemonClient(config.server_socket_path).alive()
        except MdragError:
            serving = True  # it answered, busy: a daemon all the same
        if serving:
            raise AlreadyRunningError(
                f"an mdrag daemon is already running on {config.server_socket_path}"
            ) from None
        raise


def command_config(ctx: Any, **overrides: Any) -> Config:
    """The loaded config (in the click context), with this command's overrides."""
    config: Config = ctx.obj["config"]
    return config.with_overrides(**overrides)


def configure_command_logging(config: Config, quiet: bool) -> None:
    """Commands whose output is the answer (search, status, --json) log only warnings,
    unless MDRAG_LOG_LEVEL asks for more."""
    from mdrag.log import configure_logging

    configure_logging("WARNING" if quiet and not os.environ.get("MDRAG_LOG_LEVEL") else config.log_level)

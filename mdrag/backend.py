"""Backend: how a command reaches the index: the daemon over its socket, else a Service opened here."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from mdrag import lite
from mdrag.config import Config
from mdrag.errors import ServerNotRunningError
from mdrag.progress import OnProgress, progress_line, short_eta


class Backend(Protocol):
    """What the commands need: the daemon over its socket, or a Service in this process."""

    def search(self, params: dict[str, Any]) -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...

    def reindex(
        self, paths: list[str], force: bool, rebuild: bool, on_progress: OnProgress | None = None
    ) -> dict[str, Any]: ...

    def call(self, op: str, **params: Any) -> Any: ...


class LocalBackend:
    """Opens the index in this process (only when no daemon holds it)."""

    def __init__(self, config: Config) -> None:
        lite.start_early(config.milvus_uri)  # its fixed start-up wait overlaps the imports below
        from mdrag.service import Service  # heavy: pymilvus, numpy, the model's runtime

        self.service = Service(config)

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

    def reindex(
        self, paths: list[str], force: bool, rebuild: bool, on_progress: OnProgress | None = None
    ) -> dict[str, Any]:
        from mdrag.progress import ProgressMeter

        meter = ProgressMeter(on_progress)
        report = self.service.reindex(paths or None, force=force, rebuild=rebuild, progress=meter)
        return report.to_dict()

    def close(self) -> None:
        self.service.close()


@contextmanager
def progress_bar(quiet: bool = False) -> Iterator[OnProgress]:
    """On a terminal, a tqdm bar of the texts embedded (notes done, rate, ETA); otherwise a
    progress line on stderr every 10 s (none when `quiet`). Fed by a run here or the daemon's stream."""
    if not sys.stderr.isatty():
        last = [time.monotonic()]

        def print_progress(progress: dict[str, Any]) -> None:
            if not quiet and time.monotonic() - last[0] >= 10:
                last[0] = time.monotonic()
                print(progress_line(progress), file=sys.stderr, flush=True)

        yield print_progress
        return
    import shutil

    from tqdm import tqdm

    # A terminal that reports no size (a pty nobody sized) gets a bar of 100 columns: tqdm draws
    # nothing on a terminal of 0 rows or columns.
    sized = shutil.get_terminal_size((0, 0)).columns > 0
    bar = tqdm(
        total=0,
        unit="text",
        dynamic_ncols=sized,
        ncols=None if sized else 100,
        nrows=None if sized else 20,
        file=sys.stderr,
        bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} texts [{elapsed}{postfix}]",
        desc="indexing",
    )

    def update(progress: dict[str, Any]) -> None:
        if progress["state"] == "scanning" or not progress["total"]:
            return  # nothing counted yet, or a run with nothing to embed: the bar stays as it is
        bar.total = progress["total"]
        bar.n = progress["done"]
        rate = progress["rate"]
        bar.set_postfix_str(
            f"{progress['notes_done']}/{progress['notes_total']} notes"
            + (f", {rate:.0f} texts/s" if rate else "")
            + (", done" if progress["state"] == "done" else f", {short_eta(progress['eta_s'])}"),
            refresh=False,
        )
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


def command_config(ctx: Any, **overrides: Any) -> Config:
    """The loaded config (in the click context), with this command's overrides."""
    config: Config = ctx.obj["config"]
    return config.with_overrides(**overrides)


def configure_command_logging(config: Config, quiet: bool) -> None:
    """Commands whose output is the answer (search, status, --json) log only warnings,
    unless MDRAG_LOG_LEVEL asks for more."""
    from mdrag.log import configure_logging

    configure_logging("WARNING" if quiet and not os.environ.get("MDRAG_LOG_LEVEL") else config.log_level)

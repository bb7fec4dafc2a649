"""Command: what a CLI command sets up around its work: its config (flags over the file), its progress bar."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mdrag.config import Config, load_config
from mdrag.errors import ConfigError
from mdrag.progress import OnProgress, progress_line, short_eta

if TYPE_CHECKING:
    from mdrag.answers.status import ProgressSnapshot


def command_config(ctx: Any, need_roots: bool = False, **overrides: Any) -> Config:
    """The config (loaded once, from the --config given before or after the command), with this
    command's overrides. A root that does not exist (an unmounted drive) fails the commands that
    read the roots (`need_roots`: serve, reindex); the others warn and go on with the index."""
    if ctx.obj.get("config") is None:
        ctx.obj["config"] = load_config(ctx.obj.get("config_path"))
    config: Config = ctx.obj["config"].with_overrides(**overrides)
    missing = config.missing_roots()
    if missing and need_roots:
        raise ConfigError(
            f"{config.source}: roots: {missing[0]} does not exist or is not a directory "
            "(an unmounted drive?); mount it, or leave it out of the roots"
        )
    for root in missing:
        sys.stderr.write(f"warning: the root {root} does not exist (an unmounted drive?); going on\n")
    return config


@contextmanager
def progress_bar(quiet: bool = False) -> Iterator[OnProgress]:
    """On a terminal, a tqdm bar of the passages embedded (notes done, rate, ETA); otherwise a
    progress line on stderr every 10 s (none when `quiet`). Fed by a run here or the daemon's stream."""
    if not sys.stderr.isatty():
        last = [time.monotonic()]

        def print_progress(progress: ProgressSnapshot) -> None:
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
        unit="passage",
        dynamic_ncols=sized,
        ncols=None if sized else 100,
        nrows=None if sized else 20,
        file=sys.stderr,
        bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} passages [{elapsed}{postfix}]",
        desc="indexing",
    )

    def update(progress: ProgressSnapshot) -> None:
        if progress["state"] == "scanning" or not progress["total"]:
            return  # nothing counted yet, or a run with nothing to embed: the bar stays as it is
        bar.total = progress["total"]
        bar.n = progress["done"]
        rate = progress["rate"]
        bar.set_postfix_str(
            f"{progress['notes_done']}/{progress['notes_total']} notes"
            + (f", {rate:.0f} passages/s" if rate else "")
            + (", done" if progress["state"] == "done" else f", {short_eta(progress['eta_s'])}"),
            refresh=False,
        )
        bar.refresh()

    try:
        yield update
    finally:
        if not bar.total:
            bar.leave = False  # nothing was embedded: the bar goes, the report says what was done
        bar.close()

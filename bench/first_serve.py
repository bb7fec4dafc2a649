"""First serve: the whole daemon's memory once its first index is done, against the same daemon restarted.

    python -m bench.first_serve [--files N] [--work DIR]

A user's daemon meets its notes unindexed once, indexes them all, then idles for weeks; it must
not keep its first index's peak for that time. Two real `mdrag serve` processes over the same
notes (the bench corpus, or N files of it): the first builds the index, the second starts on it.
Each is measured idle (a few seconds after its start-up reconcile and three searches): the
daemon's RSS, the whole daemon's (with its Milvus Lite servers, summed) and the daemon's peak.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.session import Daemon

QUERIES = ("restart a service", "copy files to a remote computer", "format a date")
FILES = 300  # about 80 s of indexing on 2 cores: long enough for every kind of run to have happened


def idle(daemon: Daemon) -> dict[str, Any]:
    for query in QUERIES:
        daemon.search(query)
    time.sleep(5)
    rss = daemon.rss()
    return {
        "daemon_mb": rss["VmRSS"],
        "whole_daemon_mb": rss["with_milvus"],
        "daemon_peak_mb": rss["VmHWM"],
        "ready_s": round(daemon.started_in_s, 1),
    }


def measure(work: harness.Work) -> dict[str, Any]:
    shutil.rmtree(work.db.parent, ignore_errors=True)  # the first serve starts on no index
    with Daemon(work) as daemon:
        first = idle(daemon)
        sections = daemon.status()["sections"]
    with Daemon(work) as daemon:
        restarted = idle(daemon)
    return {"sections": sections, "first_serve": first, "restarted": restarted}


def summary(result: dict[str, Any]) -> str:
    first, again = result["first_serve"], result["restarted"]
    return (
        f"daemon idle after its first index of {result['sections']} sections ({first['ready_s']} s): "
        f"{first['daemon_mb']:.0f} MB (peak {first['daemon_peak_mb']:.0f} MB), whole daemon "
        f"{first['whole_daemon_mb']:.0f} MB; restarted: {again['daemon_mb']:.0f} MB, whole daemon "
        f"{again['whole_daemon_mb']:.0f} MB"
    )


def run(work_dir: Path | None, files: int) -> dict[str, Any]:
    """The figure on a work dir of its own: `files` of the corpus (make bench: FILES)."""
    work = harness.prepare(work_dir, files)
    try:
        return {"files": files, **measure(work)}
    finally:
        harness.cleanup(work, keep=work_dir is not None)


def main() -> None:
    args: argparse.Namespace = harness.parser(__doc__, files_default=FILES).parse_args()
    result = run(args.work, args.files)
    print(summary(result))
    print(f"written to {harness.save('first_serve', result)}")


if __name__ == "__main__":
    main()

"""First serve: the whole daemon's memory once its first index is done, against the same daemon restarted.

    python -m bench.first_serve [--files N] [--work DIR]

A user's daemon meets its notes unindexed once, indexes them all, then idles for weeks; it must
not keep its first index's peak for that time. Two real `mdrag serve` processes over the same
notes (the bench corpus, or N files of it): the first builds the index (any index already in
the work dir is deleted first), the second starts on it. Each is measured idle (a few seconds
after its start-up reconcile and three searches): the daemon's RSS, the whole daemon's (with
its Milvus Lite servers, summed) and the daemon's peak.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.memory import QUERIES
from bench.session import Daemon, poll

FILES = 300  # about 80 s of indexing on 2 cores: every kind of run (long, short, writes) happens
FIRST_INDEX_TIMEOUT_S = 3 * 3600


def idle(daemon: Daemon) -> dict[str, Any]:
    # A search's wait for freshness is capped (300 s): a longer first index is waited for here.
    poll(lambda: daemon.status()["daemon"]["state"] == "watching", FIRST_INDEX_TIMEOUT_S, interval=1)
    for query in QUERIES:
        daemon.search(query)
    time.sleep(5)
    rss = daemon.rss()
    return {
        "daemon_mb": rss["VmRSS"],
        "whole_daemon_mb": rss["with_milvus"],
        "daemon_peak_mb": rss["VmHWM"],
        "sections": daemon.status()["sections"],
    }


def measure(work: harness.Work) -> dict[str, Any]:
    shutil.rmtree(work.db.parent, ignore_errors=True)  # the first serve starts on no index
    with Daemon(work) as daemon:
        first = idle(daemon)
    with Daemon(work) as daemon:
        restarted = idle(daemon)
    if restarted["sections"] != first["sections"]:
        raise RuntimeError(
            f"the restarted daemon holds {restarted['sections']} sections, not {first['sections']}"
        )
    return {"sections": first["sections"], "after_first_index": first, "restarted": restarted}


def summary(result: dict[str, Any]) -> str:
    first, again = result["after_first_index"], result["restarted"]
    return (
        f"daemon idle after its first index of {result['sections']} sections: "
        f"{first['daemon_mb']:.0f} MB (peak {first['daemon_peak_mb']:.0f} MB), whole daemon "
        f"{first['whole_daemon_mb']:.0f} MB; restarted: {again['daemon_mb']:.0f} MB, whole daemon "
        f"{again['whole_daemon_mb']:.0f} MB"
    )


def run(work_dir: Path | None, files: int) -> dict[str, Any]:
    """The figure on a work dir of its own: `files` of the corpus (0: all of it)."""
    work = harness.prepare(work_dir, files)
    try:
        return {"files": files or "all", **measure(work)}
    finally:
        harness.cleanup(work, keep=work_dir is not None)


def main() -> None:
    args: argparse.Namespace = harness.parser(__doc__, files_default=FILES).parse_args()
    result = run(args.work, args.files)
    print(summary(result))
    print(f"written to {harness.save('first_serve', result)}")


if __name__ == "__main__":
    main()

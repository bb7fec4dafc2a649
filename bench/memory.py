"""Memory: the daemon's resident set, idle after start and idle after it has indexed and searched.

    python -m bench.memory [--files N] [--work DIR]

A real `mdrag serve` over an indexed work dir: RSS once its start-up reconcile is done, then
after it has embedded an edited note and answered searches (the model surely loaded), each
after a few quiet seconds; and the peak (VmHWM). The headline counts the whole daemon: the
process and every Milvus Lite server it started (one per shard), their resident sets summed, and
beside it their proportional set (PSS: a page the servers share counted once). The cold
index's peak RSS is bench.cold's.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench import harness
from bench.session import Daemon, poll

QUERIES = ("restart a service", "copy files to a remote computer", "format a date")


def measure(daemon: Daemon) -> dict[str, Any]:
    time.sleep(5)
    after_start = daemon.rss()
    note = sorted(daemon.work.notes.rglob("*.md"))[0]
    with note.open("a", encoding="utf-8") as handle:
        handle.write("\n\n## Memory probe\n\nThe daemon embeds this paragraph, zqmemoryprobe.\n")
    poll(
        lambda: any(
            "zqmemoryprobe" in h["section_text"]
            for h in daemon.search("memory probe zqmemoryprobe", threshold=0.0)["results"]
        ),
        120,
    )
    for query in QUERIES:
        daemon.search(query)
    time.sleep(5)
    after_work = daemon.rss()
    return {
        "sections": daemon.status()["sections"],
        "idle_after_start_mb": after_start["VmRSS"],
        "idle_after_indexing_and_search_mb": after_work["VmRSS"],
        "idle_with_milvus_lite_server_mb": after_work["with_milvus"],
        # The same processes with each shared page counted once (the sum above counts the code
        # the Lite servers share once per server).
        "idle_with_milvus_lite_server_pss_mb": after_work["with_milvus_pss"],
        "peak_mb": after_work["VmHWM"],
        "start_to_ready_s": round(daemon.started_in_s, 1),
    }


def summary(result: dict[str, Any]) -> str:
    # The headline is the whole daemon: itself and every Milvus Lite server it started (one per shard).
    return (
        f"whole daemon (with its Milvus Lite servers) idle at {result['sections']} sections: "
        f"{result['idle_with_milvus_lite_server_mb']} MB resident "
        f"({result.get('idle_with_milvus_lite_server_pss_mb', '?')} MB proportional, shared pages once); "
        f"the daemon alone: idle after start {result['idle_after_start_mb']} MB, "
        f"idle after indexing and searching {result['idle_after_indexing_and_search_mb']} MB, "
        f"peak {result['peak_mb']} MB (ready in {result['start_to_ready_s']}s)"
    )


def main() -> None:
    def run(work: harness.Work, args: argparse.Namespace) -> dict[str, Any]:
        with Daemon(work) as daemon:
            return measure(daemon)

    harness.figure_main("memory", harness.parser(__doc__), run, summary)


if __name__ == "__main__":
    main()

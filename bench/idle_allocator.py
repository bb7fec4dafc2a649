"""Idle allocator: what a daemon just started holds, with mdrag's allocator settings for its Milvus
Lite servers and with jemalloc's defaults.

    python -m bench.idle_allocator --work DIR [--rounds 2]

A daemon under systemd starts at boot, loads its index and then mostly idles: this is the memory
it holds then. Each round starts `mdrag serve` on DIR's index twice, once with jemalloc's
defaults for its Lite servers (MALLOC_CONF=background_thread:false, which mdrag passes on as a
user's own) and once with mdrag's settings (mdrag.milvus.lite.allocator_settings); each daemon
answers the one search that waits for its start-up reconcile, then idles, and the whole daemon
(itself and its Lite servers, resident sets summed) is read after IDLE_S and again a minute
later. Writes bench/results/idle_allocator.json.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench import harness
from bench.session import Daemon

IDLE_S = 20
LATER_S = 60
DEFAULTS = "background_thread:false"


def idle(work: harness.Work, allocator: str | None) -> dict[str, float]:
    """The whole daemon's MB after IDLE_S and LATER_S of idling, with `allocator` as MALLOC_CONF
    (None: mdrag's own settings)."""
    os.environ.pop("MALLOC_CONF", None)
    if allocator is not None:
        os.environ["MALLOC_CONF"] = allocator  # the daemon's environment, passed on to its servers
    try:
        with Daemon(work) as daemon:
            time.sleep(IDLE_S)
            first = daemon.rss()
            time.sleep(LATER_S - IDLE_S)
            later = daemon.rss()
    finally:
        os.environ.pop("MALLOC_CONF", None)
    return {
        f"after_{IDLE_S}s_mb": first["with_milvus"],
        f"after_{LATER_S}s_mb": later["with_milvus"],
        "daemon_alone_mb": later["VmRSS"],
    }


def main() -> None:
    cli = harness.parser(__doc__)
    cli.add_argument("--rounds", type=int, default=2)
    args = cli.parse_args()
    if args.work is None:
        cli.error("--work DIR: the work dir of a built index (bench.scale --work DIR builds one)")
    work = harness.prepare(args.work, args.files)
    result: dict[str, Any] = {"work": str(args.work), "defaults": [], "mdrag": []}
    try:
        for _ in range(args.rounds):
            for name, allocator in (("defaults", DEFAULTS), ("mdrag", None)):
                result[name].append(idle(work, allocator))
                print(name, result[name][-1], flush=True)
    finally:
        harness.cleanup(work, keep=True)
    print(f"written to {harness.save('idle_allocator', result)}")


if __name__ == "__main__":
    main()

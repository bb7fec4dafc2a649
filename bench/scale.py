"""Scale: what a large vault costs on one machine, at 1x and Nx the PowerShell corpus.

    python -m bench.scale [--factor 5] [--work DIR] [--queries 100]

The corpus is indexed once (a cold `mdrag reindex`), then a daemon serves it and the index grows
to --factor times its sections by copies of the corpus in further folders under the root
(section ids derive from content, so no copy is embedded again: bench.query's growth). At 1x and
at Nx, each measured the same way:

- memory: the whole daemon idle (itself and every Milvus Lite server it started, resident sets
  summed), and the slope between the two sizes in KB per section, the cost a vault pays as it grows;
- search: socket p50/p99/max over --queries realistic queries (three passes, the median pass),
  and whole `mdrag search` processes (start, ask the daemon, print); at Nx also the same queries
  filtered by `--path` to one copy and to every copy, beside them unfiltered;
- restart: the daemon stopped and started again on the same index: when `status` first answers
  (and what it says it loads, sampled every POLL_S, so each loading step gets its time), when a
  search sent at that moment is answered, and when the start-up reconcile is done;
- a reopen (Nx only): the daemon reopens a grown Milvus Lite index by itself once it is quiet;
  searches sent for as long as `status` says REOPENING measure how long a reopen holds one, and
  the whole daemon's memory meanwhile its peak.

With --work DIR the built index is kept, and a later run on the same DIR skips the cold index
and the growth it finds done (the 1x figures are kept there, in ONE_FILE). Takes ~40 min on 2
cores at 5x. Writes bench/results/scale.json (scale-Nx.json for another factor).

    python -m bench.scale --work DIR --again

measures the Nx figures (memory, search, restart) of DIR's grown index again, on a quieter
machine or after a change, keeping the growth and reopen figures of the run that grew it.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench import harness, memory, query
from bench.scale_table import summary_of
from bench.session import Daemon
from mdrag.client.connection import DaemonClient
from mdrag.errors import RemoteError, ServerNotRunningError

POLL_S = 0.05
ONE_FILE = "scale-1x.json"  # the 1x figures, kept in the work dir for a run that goes on
REOPEN_WAIT_S = 240  # quiet time (30 s) and a reload of the grown index
REOPEN_SEARCH_EVERY_S = 0.25  # searches sent while the daemon reopens


def disk_mb(index: Path) -> float:
    """Every file under the index's folder: each shard's database, and what mdrag keeps beside
    them (the keyword index is a folder of files)."""
    return round(sum(p.stat().st_size for p in index.parent.rglob("*") if p.is_file()) / 2**20, 1)


def idle_memory(daemon: Daemon) -> dict[str, Any]:
    """The whole daemon's resident memory after a few quiet seconds, once it has answered searches."""
    for text in memory.QUERIES:
        daemon.search(text)
    time.sleep(5)
    found = daemon.rss()
    status = daemon.status()
    return {
        "notes": status["documents"].get("indexed", 0),
        "sections": status["sections"],
        "whole_daemon_mb": found["with_milvus"],
        "whole_daemon_pss_mb": found["with_milvus_pss"],
        "whole_daemon_anon_mb": found["with_milvus_anon"],
        "daemon_alone_mb": found["VmRSS"],
    }


def restart(daemon: Daemon) -> dict[str, Any]:
    """Stop the daemon, start it again, and time what a user meets: status, a search, readiness."""
    daemon.__exit__(None, None, None)
    client = DaemonClient(daemon.work.socket, timeout=600)
    started = time.perf_counter()
    process = daemon.spawn()
    steps: dict[str, float] = {}
    status_s = None
    first: dict[str, Any] = {}
    while time.perf_counter() - started < 600:
        if process.poll() is not None:
            raise RuntimeError(f"mdrag serve exited with {process.returncode}:\n{daemon.log()}")
        try:
            answer: dict[str, Any] = dict(client.status())
        except (ServerNotRunningError, RemoteError, OSError):
            time.sleep(POLL_S)
            continue
        now = round(time.perf_counter() - started, 2)
        if status_s is None:
            status_s, first = now, answer
            searched = _FirstSearch(client, started)
            searched.start()
        if not answer.get("starting"):
            break
        steps.setdefault(answer["daemon"]["loading"], now)
        time.sleep(POLL_S)
    serving_s = round(time.perf_counter() - started, 2)
    searched.join(600)
    daemon.search("warm-up", wait_fresh=300)  # the start-up reconcile applied
    return {
        "status_answers_s": status_s,
        "first_status": {"starting": bool(first.get("starting")), **first.get("daemon", {})},
        "loading_steps_s": steps,  # each step's first sighting, seconds from the start
        "serving_s": serving_s,
        "first_search_answered_s": searched.answered_s,
        "reconciled_s": round(time.perf_counter() - started, 2),
    }


class _FirstSearch(threading.Thread):
    """One search sent now through `client`; `answered_s` counts from `origin` (the daemon's start)."""

    def __init__(self, client: DaemonClient, origin: float) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.origin = origin
        self.answered_s: float | None = None

    def run(self) -> None:
        self.client.call("search", query="restart a service")
        self.answered_s = round(time.perf_counter() - self.origin, 2)


def reopen_block(daemon: Daemon) -> dict[str, Any] | None:
    """Wait, asking only `status`, until the daemon reopens the grown index; then, for as long as
    it says REOPENING, a search every REOPEN_SEARCH_EVERY_S (how long each waited) and the whole
    daemon's memory (its peak: the new servers load beside the old). None if no reopen came."""
    before = len(daemon.status()["daemon"]["index_reopens"])
    started = time.perf_counter()
    while time.perf_counter() - started < REOPEN_WAIT_S:
        status = daemon.status()
        if status["daemon"]["state"] == "reopening":
            waits, peak_mb = [], 0.0
            while len(daemon.status()["daemon"]["index_reopens"]) == before:
                sent = time.perf_counter()
                daemon.search("restart a service")
                waits.append(time.perf_counter() - sent)
                peak_mb = max(peak_mb, daemon.rss()["with_milvus"])
                time.sleep(REOPEN_SEARCH_EVERY_S)
            return {
                **daemon.status()["daemon"]["index_reopens"][-1],
                "searches_during": len(waits),
                "search_waited_s": round(max(waits), 2),
                "search_waited_median_s": round(statistics.median(waits), 3),
                "peak_whole_daemon_mb": round(peak_mb),
            }
        if len(status["daemon"]["index_reopens"]) > before:
            return {**status["daemon"]["index_reopens"][-1], "search_waited_s": None}
        time.sleep(POLL_S)
    return None


def at_size(daemon: Daemon, queries: list[str]) -> dict[str, Any]:
    return {
        "memory": idle_memory(daemon),
        "search": query.measured(daemon, queries),
        "index_on_disk_mb": disk_mb(daemon.work.db),
    }


def measure(work: harness.Work, factor: int, count: int) -> dict[str, Any]:
    """Every figure; a work dir grown by an earlier run that stopped part way (its 1x figures kept
    in ONE_FILE) goes on growing from where it stopped."""
    result: dict[str, Any] = {"factor": factor}
    one_file = work.root / ONE_FILE
    with Daemon(work) as daemon:
        queries = query.realistic_queries(work.notes, count)
        if one_file.exists():
            result["one"] = json.loads(one_file.read_text())
        else:
            result["one"] = at_size(daemon, queries)
            result["one"]["restart"] = restart(daemon)
            one_file.write_text(json.dumps(result["one"]))
            print(summary_of("1x", result["one"]), flush=True)
        base = result["one"]["memory"]["sections"]
        result["growth"] = query.grow(daemon, factor * base, per_copy=base)
        result["growth"].pop("reindex_reports")
        grown_by = result["growth"]
        print(f"grown by {grown_by['copies']} copies in {grown_by['seconds']} s", flush=True)
        result["reopen"] = reopen_block(daemon)
        print(f"reopen: {result['reopen']}", flush=True)
        result["many"] = grown_figures(daemon, queries, f"{factor}x")
    result["slope_kb_per_section"] = slope(result)
    return result


def measure_again(work: harness.Work, result: dict[str, Any], count: int) -> dict[str, Any]:
    """The Nx figures of a grown work dir measured again; the rest of `result` kept. The work dir
    must hold the index those figures were of: as many sections (not grown on since, not another)."""
    with Daemon(work) as daemon:
        held, grown = daemon.status()["sections"], result["many"]["memory"]["sections"]
        if held != grown:
            raise SystemExit(f"{work.root} holds {held} sections, the saved {result['factor']}x run {grown}")
        queries = query.realistic_queries(work.notes, count)
        result["many"] = grown_figures(daemon, queries, f"{result['factor']}x")
    result["slope_kb_per_section"] = slope(result)
    return result


def filtered_search(daemon: Daemon, queries: list[str]) -> dict[str, float]:
    """Socket median (ms) of the queries filtered by `--path` to one copy (a fifth of the notes at
    5x: their doc_ids are sent) and to every copy (four fifths: the fifth left out is sent), each
    query asked in turn unfiltered, to one copy and to every copy (so a noisy moment hits all three)."""
    notes = daemon.work.notes
    if not (notes / "copy-1").is_dir():
        return {}
    scopes = {"unfiltered_ms": "", "one_copy_ms": f"{notes}/copy-1/", "every_copy_ms": f"{notes}/copy-"}
    taken: dict[str, list[float]] = {name: [] for name in scopes}
    for text in queries:
        for name, prefix in scopes.items():
            started = time.perf_counter()
            daemon.search(text, **({"path_prefix": prefix} if prefix else {}))
            taken[name].append((time.perf_counter() - started) * 1000)
    return {name: round(statistics.median(times), 1) for name, times in taken.items()}


def grown_figures(daemon: Daemon, queries: list[str], name: str) -> dict[str, Any]:
    """At Nx: the figures of at_size, then a restart, and the whole daemon's memory after it."""
    many = at_size(daemon, queries)
    many["filtered_search"] = filtered_search(daemon, queries)
    many["restart"] = restart(daemon)
    many["after_restart"] = idle_memory(daemon)
    print(summary_of(name, many), flush=True)
    return many


def slope(result: dict[str, Any]) -> float:
    """KB of the whole daemon's memory per section added between 1x and Nx (both restarted)."""
    one, many = result["one"]["memory"], result["many"]["after_restart"]
    added_mb = many["whole_daemon_mb"] - one["whole_daemon_mb"]
    return round(added_mb * 1024 / (many["sections"] - one["sections"]), 2)


def main() -> None:
    cli = harness.parser(__doc__)
    cli.add_argument("--factor", type=int, default=5, help="grow the index to N times the corpus")
    cli.add_argument("--queries", type=int, default=100)
    cli.add_argument("--again", action="store_true", help="measure the Nx figures of --work's index again")
    args = cli.parse_args()
    if args.factor < 2:
        cli.error("--factor must be 2 or more: the slope is measured between 1x and Nx")
    name = "scale" if args.factor == 5 else f"scale-{args.factor}x"  # 5x: the targets' own size
    saved = harness.RESULTS / f"{name}.json"
    if args.again and not (args.work and saved.exists()):
        cli.error(f"--again needs --work DIR (a grown index) and {saved} (the run that grew it)")
    work = harness.prepare(args.work, args.files)
    result: dict[str, Any] = {"corpus": str(harness.CORPUS)}
    try:
        if args.again:
            grown = {k: v for k, v in json.loads(saved.read_text()).items() if k != "machine"}  # now
            result = measure_again(work, grown, args.queries)
        else:
            if not work.indexed():
                _, finished = harness.reindex(work)
                result["cold_index_s"] = round(finished.wall_s, 1)
                print(f"cold index: {finished.wall_s:.0f} s", flush=True)
            result.update(measure(work, args.factor, args.queries))
    finally:
        harness.cleanup(work, keep=args.work is not None)
    print(f"slope: {result.get('slope_kb_per_section')} KB per section")
    print(f"written to {harness.save(name, result)}")


if __name__ == "__main__":
    main()

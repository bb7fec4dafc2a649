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


def summary_of(name: str, size: dict[str, Any]) -> str:
    m, s, r = size["memory"], size["search"], size["restart"]
    return (
        f"{name}: {m['notes']} notes, {m['sections']} sections, index {size['index_on_disk_mb']} MB on disk; "
        f"whole daemon idle {m['whole_daemon_mb']} MB{_anon(m)}; "
        f"search socket p50 {s['p50_ms']} ms, max {s['max_ms']} ms, "
        f"process median {s['process']['wall_ms']['median']} ms "
        f"(max {s['process']['wall_ms']['max']}){_bare(s)}; "
        f"restart: status answers at {r['status_answers_s']} s, serving at {r['serving_s']} s "
        f"(steps {r['loading_steps_s']}), first search answered {r['first_search_answered_s']} s, "
        f"reconciled {r['reconciled_s']} s{_filtered(size)}"
    )


def _filtered(size: dict[str, Any]) -> str:
    medians = size.get("filtered_search")
    if not medians:
        return ""
    return (
        f"; filtered by --path, socket median: none {medians['unfiltered_ms']} ms, one copy "
        f"{medians['one_copy_ms']} ms, every copy {medians['every_copy_ms']} ms"
    )


# The large-vault targets (issue #35), each checked against the Nx figures.
TARGETS = (
    ("whole daemon idle per section at Nx (all it holds / sections)", "whole_kb_per_section", 3.0, "KB"),
    ("whole daemon idle at 1x", "one_whole_mb", 500.0, "MB"),
    ("whole daemon per section added (slope 1x to Nx, restarted)", "slope_kb_per_section", 3.0, "KB"),
    ("`status` answers after a restart", "status_answers_s", 1.0, "s"),
    ("a restarted daemon serves searches", "serving_s", 10.0, "s"),
    ("a search sent during a reopen waits", "search_waited_s", 1.0, "s"),
    ("whole `mdrag search` process, median", "process_median_ms", 150.0, "ms"),
    ("whole `mdrag search` process, max", "process_max_ms", 1000.0, "ms"),
    ("socket search p50", "p50_ms", 60.0, "ms"),
)


def _row(name: str, size: dict[str, Any]) -> str:
    m, s, r = size.get("after_restart", size["memory"]), size["search"], size["restart"]
    return (
        f"| {name} | {m['notes']:,} | {m['sections']:,} | {size['index_on_disk_mb']:,.0f} MB | "
        f"{m['whole_daemon_mb']:,.0f} MB{_anon(m)} | {s['p50_ms']} / {s['max_ms']} ms | "
        f"{s['process']['wall_ms']['median']:.0f} / {s['process']['wall_ms']['max']:.0f} ms{_bare(s)} | "
        f"{r['status_answers_s']} s | {r['serving_s']} s | {r['reconciled_s']} s |"
    )


def _anon(memory: dict[str, Any]) -> str:
    """' (1,180 MB of it heap)': the part of the resident memory no file backs (the rest is mapped
    files, such as the keyword index, which the kernel may drop); empty for a run without it."""
    anon = memory.get("whole_daemon_anon_mb")
    return f" ({anon:,.0f} MB of it heap)" if anon is not None else ""


def _bare(search: dict[str, Any]) -> str:
    """' (bare python 31 ms)': the interpreter's own start beside those processes (the machine's
    state then); empty for a run that did not time it."""
    bare = search["process"].get("bare_python_ms")
    return f" (bare python {bare['median']:.0f} ms)" if bare else ""


def figures(result: dict[str, Any]) -> dict[str, float | None]:
    """The Nx figures the targets name, flat."""
    many = result["many"]
    reopen = result.get("reopen") or {}
    held = many.get("after_restart", many["memory"])
    return {
        "whole_kb_per_section": round(held["whole_daemon_mb"] * 1024 / held["sections"], 2),
        "one_whole_mb": result["one"]["memory"]["whole_daemon_mb"],
        "slope_kb_per_section": result.get("slope_kb_per_section"),
        "status_answers_s": many["restart"]["status_answers_s"],
        "serving_s": many["restart"]["serving_s"],
        "search_waited_s": reopen.get("search_waited_s"),
        "process_median_ms": many["search"]["process"]["wall_ms"]["median"],
        "process_max_ms": many["search"]["process"]["wall_ms"]["max"],
        "p50_ms": many["search"]["p50_ms"],
    }


def reopen_sentence(reopen: dict[str, Any]) -> str:
    said = (
        f"The daemon reopened the grown index by itself ({reopen['rows_written']:,} rows written) "
        f"in {reopen['seconds']} s"
    )
    if "searches_during" not in reopen:  # a run before reopens loaded beside the running servers
        return f"{said}; a search sent as it began waited {reopen['search_waited_s']} s."
    return (
        f"{said}; {reopen['searches_during']} searches sent meanwhile waited "
        f"{reopen['search_waited_median_s']} s (median), {reopen['search_waited_s']} s at most "
        f"(requests held back {reopen['requests_held_s']} s in all for the switches); the whole "
        f"daemon peaked at {reopen['peak_whole_daemon_mb']:,} MB "
        "(each shard's new server loads beside the old one)."
    )


def table(result: dict[str, Any]) -> str:
    """The sizes side by side, then each target with its Nx figure (for docs/benchmarks.md)."""
    lines = [
        "| size | notes | sections | index on disk | whole daemon idle after a start | socket search "
        "p50 / max | whole `mdrag search` median / max | restart: `status` answers | restart: "
        "serving | restart: reconciled |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    if "one" in result:
        lines.append(_row("1x", result["one"]))
    lines.append(_row(f"{result['factor']}x", result["many"]))
    steps = result["many"]["restart"]["loading_steps_s"]
    lines += [
        "",
        f"The {result['factor']}x restart, each step's first sighting by `status` (seconds "
        "from the start): " + ", ".join(f"{k} {v}" for k, v in steps.items()) + ".",
    ]
    if "note" in result.get("one", {}):
        lines.append(f"The 1x figures: {result['one']['note']}.")
    reopen = result.get("reopen")
    if not reopen:
        lines.append(
            "The daemon did not reopen the grown index within the wait (not due: it reopens once a "
            "fifth of the index was written since it opened), so no search met a reopen this run."
        )
    else:
        lines.append(reopen_sentence(reopen))
    lines += ["", "| target | measured | goal | met |", "| --- | ---: | ---: | --- |"]
    found = figures(result)
    for name, key, goal, unit in TARGETS:
        value = found[key]
        shown = "-" if value is None else f"{value} {unit}"
        met = "-" if value is None else ("yes" if value <= goal else "no")
        lines.append(f"| {name} | {shown} | ≤ {goal:g} {unit} | {met} |")
    return "\n".join(lines)


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

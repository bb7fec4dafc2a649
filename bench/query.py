"""Query latency through the daemon's socket, at the corpus size and at 100,000+ sections.

    python -m bench.query [--files N] [--work DIR] [--queries 200] [--sections 100000]

200 realistic queries, three passes 15 s apart (the median pass is reported, with the min-max)
(the example headings of the notes, "Example 3: Get the ..." without the
"Example 3:", and cmdlet titles), seeded, each through mdrag.client.connection.DaemonClient with the
daemon's default search (hybrid, top 10, threshold 0.7); latency is the client's wall time.
Then the index grows to --sections by copies of the corpus in further folders under the root:
section ids come from content, so their vectors are reused from the store and nothing is
embedded again (the copy's reindex report shows it). Also the wall time of whole
`mdrag search` processes against the daemon.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.metrics import percentile
from bench.session import Daemon, poll
from mdrag.errors import StoreError

EXAMPLE = re.compile(r"^#{2,4}\s+Example\s+\d+\s*[:.-]\s*(.{12,120})$", re.MULTILINE)
TITLE = re.compile(r"^title:\s*(.+)$", re.MULTILINE)
ROUNDS = 3  # passes over the queries; the figures are the median pass
ROUND_GAP_S = 15
# The measured states of the index (keys of measure()'s result) and how a report names them.
STATES = (
    ("corpus", ""),
    ("scaled", ", just grown"),
    ("scaled_reopened", ", reopened by the daemon"),
    ("scaled_restarted", ", daemon restarted"),
)
REOPEN_WAIT_S = 120  # the daemon's quiet time (30 s) and a reload (~20 s at 126k rows)


def realistic_queries(notes: Path, count: int, seed: int = 7) -> list[str]:
    examples: set[str] = set()
    titles: set[str] = set()
    for path in sorted(notes.rglob("*.md")):
        if "/copy-" in str(path):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        examples.update(m.strip() for m in EXAMPLE.findall(text))
        titles.update(m.strip().strip("'\"") for m in TITLE.findall(text[:2000]))
    rng = random.Random(seed)
    picked = rng.sample(sorted(examples), min(len(examples), count * 3 // 4))
    picked += rng.sample(sorted(titles), min(len(titles), count - len(picked)))
    rng.shuffle(picked)
    return picked


def latencies(daemon: Daemon, queries: list[str], rounds: int = ROUNDS) -> dict[str, Any]:
    """p50/p99 of the queries through the socket: the median over `rounds` passes, apart by
    ROUND_GAP_S, with the min-max of the per-pass figures (a noisy minute moves one pass)."""
    for query in queries[:10]:  # warm-up, not counted
        daemon.search(query)
    passes = []
    for round_ in range(rounds):
        if round_:
            time.sleep(ROUND_GAP_S)
        client_ms, server_ms = [], []
        for query in queries:
            started = time.perf_counter()
            response = daemon.search(query)
            client_ms.append((time.perf_counter() - started) * 1000)
            server_ms.append(response["execution_time_ms"])
        passes.append(
            {
                "p50": percentile(client_ms, 50),
                "p95": percentile(client_ms, 95),
                "p99": percentile(client_ms, 99),
                "max": max(client_ms),
                "server_p50": percentile(server_ms, 50),
            }
        )

    def median(key: str) -> float:
        return round(statistics.median(p[key] for p in passes), 1)

    def span(key: str) -> list[float]:
        return [round(min(p[key] for p in passes), 1), round(max(p[key] for p in passes), 1)]

    return {
        "queries": len(queries),
        "rounds": rounds,
        "sections": daemon.status()["sections"],
        "p50_ms": median("p50"),
        "p95_ms": median("p95"),
        "p99_ms": median("p99"),
        "max_ms": round(max(p["max"] for p in passes), 1),
        "server_p50_ms": median("server_p50"),
        "p50_range_ms": span("p50"),
        "p99_range_ms": span("p99"),
    }


def process_wall(daemon: Daemon, queries: list[str], runs: int = 21) -> dict[str, Any]:
    """Whole `mdrag search` processes (start, import, ask the daemon, print) against the daemon:
    21 of them, so the median of a process that costs ~0.15 s is not moved by one busy moment.

    Each is preceded by a bare start of the same interpreter (`python -c pass`), whose time says
    what the machine gave a process at that moment: on these 2-core VMs the same process takes
    0.07 to 0.15 s from one minute to the next, and a reader can tell mdrag's part from that."""
    walls, bare = [], []
    for query in queries[:runs]:
        bare.append(harness.run([sys.executable, "-c", "pass"], daemon.work.env(), timeout=60).wall_s * 1000)
        finished = harness.run(harness.mdrag("search", query), daemon.work.env(), timeout=60)
        # exit 1 with no `Error:` is a search that found nothing (about half of these queries)
        if finished.returncode not in (0, 1) or "Error:" in finished.stderr or "Traceback" in finished.stderr:
            raise RuntimeError(f"mdrag search failed: {finished.stderr[-2000:]}")
        walls.append(finished.wall_s * 1000)
    return {
        "runs": len(walls),
        "wall_ms": harness.spread(walls, 0),
        "bare_python_ms": harness.spread(bare, 0),
    }


def measured(daemon: Daemon, queries: list[str]) -> dict[str, Any]:
    """The socket latencies of the index as it is now, and whole `mdrag search` processes."""
    result = latencies(daemon, queries)
    result["process"] = process_wall(daemon, queries)
    return result


def grow(daemon: Daemon, sections: int, per_copy: int | None = None) -> dict[str, Any]:
    """Copies of the corpus under the root until the index holds `sections` (vectors reused).

    The last copy holds only the share of the files still needed, so the index lands just above
    `sections` rather than at the next whole multiple of the corpus.
    """
    notes = daemon.work.notes
    originals = sorted(
        p for p in notes.rglob("*") if p.is_file() and not p.relative_to(notes).parts[0].startswith("copy-")
    )
    per_copy = per_copy or daemon.status()["sections"]  # (given when copies are there already)
    reports = []
    stalls: list[str] = []
    started = time.perf_counter()
    # After the copies a run that grew this work dir left (a later run grows it on).
    copy = first = max((int(p.name[5:]) for p in notes.glob("copy-*") if p.name[5:].isdigit()), default=0)
    while (have := daemon.status()["sections"]) < sections:
        copy += 1
        target = notes / f"copy-{copy}"
        share = min(1.0, (sections - have) / per_copy)
        # Every file whose position crosses a multiple of 1/share: spread over the whole corpus,
        # so the copy's sections are close to that share (a short one loops for the rest).
        picked = [f for i, f in enumerate(originals) if math.floor((i + 1) * share) > math.floor(i * share)]
        for source in picked or originals[:1]:
            destination = target / source.relative_to(notes)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
        reports.append(_absorbed(daemon, target, stalls))
        daemon.search("settle", wait_fresh=300)  # the watcher's own events for the copy, too
    return {
        "copies": copy - first,  # added by this run
        "seconds": round(time.perf_counter() - started, 1),
        "reindex_reports": reports,
        "store_stalls": stalls,
    }


def _ignored(_progress: object) -> None:
    """A progress line, not shown."""


def _absorbed(daemon: Daemon, target: Path, stalls: list[str]) -> dict[str, Any]:
    """The daemon's report of indexing the copy `target`. A Milvus Lite engine can stall past
    the store's deadline while it absorbs a copy: the daemon queues the changes and retries by
    itself, so the stall is recorded (a figure of its own) and the request sent again."""
    for _ in range(5):
        try:
            # Streamed: a request queued behind a long run (the daemon's own reconcile of a moved
            # work dir) hears its progress rather than meeting the client's 600 s timeout.
            report = daemon.client.reindex([str(target)], force=False, rebuild=False, on_progress=_ignored)
            return dict(report)
        except StoreError as exc:
            stalls.append(f"{time.strftime('%H:%M:%S')} {target.name}: {exc}")
            print(f"store stalled while absorbing {target.name}: {exc}", flush=True)
            poll(lambda: daemon.status()["daemon"]["store_available"], 300, interval=1)
    raise RuntimeError(f"the store stalled five times absorbing {target.name}: {stalls}")


def wait_for_reopen(daemon: Daemon) -> dict[str, Any] | None:
    """Ask nothing of the store until the daemon has reopened the grown index: its record, or
    None if it did not within REOPEN_WAIT_S (not due: too few rows written, as in a small run)."""
    before = len(daemon.status()["daemon"]["index_reopens"])
    started = time.perf_counter()
    while time.perf_counter() - started < REOPEN_WAIT_S:
        reopens = daemon.status()["daemon"]["index_reopens"]
        if len(reopens) > before:
            return {**reopens[-1], "waited_s": round(time.perf_counter() - started, 1)}
        time.sleep(1)
    return None


def shrink(daemon: Daemon) -> None:
    for target in sorted(daemon.work.notes.glob("copy-*")):
        shutil.rmtree(target)
        daemon.client.reindex([str(target)], force=False, rebuild=False)
    daemon.search("settle", wait_fresh=300)


def measure(daemon: Daemon, count: int = 200, sections: int = 100_000) -> dict[str, Any]:
    queries = realistic_queries(daemon.work.notes, count)
    result: dict[str, Any] = {"corpus": measured(daemon, queries)}
    result["growth"] = grow(daemon, sections)
    result["scaled"] = measured(daemon, queries)
    # Milvus Lite searches rows written since it opened the index slower than rows it loaded:
    # the same index again once the daemon has reopened it by itself (it waits for searches to
    # pause), and once more after a restart, which loads everything afresh.
    result["reopen"] = wait_for_reopen(daemon)
    result["scaled_reopened"] = measured(daemon, queries)
    daemon.restart()
    result["scaled_restarted"] = measured(daemon, queries)
    embedded = sum(r["sections_embedded"] for r in result["growth"]["reindex_reports"])
    result["scaled"]["how"] = (
        f"{result['growth']['copies']} copies of the corpus (the last one partial) in further "
        "folders under the root; "
        "section ids derive from content, so their vectors were reused from the store, "
        f"sections embedded for the copies: {embedded}"
    )
    return result


def _span(low_high: list[float]) -> str:
    return f"{low_high[0]}-{low_high[1]}"


def summary(result: dict[str, Any]) -> str:
    lines = []
    for name, state in STATES:
        r = result[name]
        lines.append(
            f"query latency at {r['sections']} sections{state} ({r['queries']} queries x "
            f"{r['rounds']} passes, socket, median pass): "
            f"p50 {r['p50_ms']} ms (passes {_span(r['p50_range_ms'])}), "
            f"p99 {r['p99_ms']} ms (passes {_span(r['p99_range_ms'])}), "
            f"server p50 {r['server_p50_ms']} ms; whole `mdrag search` process "
            f"{r['process']['wall_ms']['median']} ms (min {r['process']['wall_ms']['min']}, "
            f"max {r['process']['wall_ms']['max']})"
        )
    lines.append(f"scaled by: {result['scaled']['how']} ({result['growth']['seconds']}s)")
    reopen = result["reopen"]
    lines.append(
        f"the daemon reopened the grown index after {reopen['rows_written']} rows written, "
        f"{reopen['waited_s']} s after the last search, in {reopen['seconds']} s"
        if reopen
        else f"the daemon did not reopen the grown index within {REOPEN_WAIT_S} s (not due)"
    )
    return "\n".join(lines)


def main() -> None:
    cli = harness.parser(__doc__)
    cli.add_argument("--queries", type=int, default=200)
    cli.add_argument("--sections", type=int, default=100_000, help="grow the index to this many sections")

    def run(work: harness.Work, args: argparse.Namespace) -> dict[str, Any]:
        with Daemon(work) as daemon:
            try:
                return measure(daemon, args.queries, args.sections)
            finally:
                shrink(daemon)

    harness.figure_main("query", cli, run, summary)


if __name__ == "__main__":
    main()

"""Searches while the daemon indexes: whole `mdrag search` processes during a burst of new long notes.

    python -m bench.busy [--files N] [--work DIR] [--burst 400] [--socket] [--neighbours K]

The burst is --burst pages of 4 KB and more from the 5.1 folder of the PowerShell reference,
spread over it; the daemon first indexes N files of the other folders (--files, default 300),
leaving out every page named like a burst page, so the burst is new text for the model (a copy
of an indexed note would reuse its vectors and embed nothing; the daemon's log says how many
sections the burst embedded). A few whole `mdrag search` processes run on the quiet daemon first;
then the burst is copied into the notes at once and `mdrag search` processes (the default
search, realistic queries) run back to back until the daemon has indexed every burst note.
Latency is a process's wall time, start to exit. --socket adds a search through the socket
after each process; --neighbours runs K CPU-bound processes (`while 1: pass`) beside it all,
as other programs on a busy machine. The burst is deleted again at the end (the index shrinks back).
"""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import harness
from bench.metrics import percentile
from bench.query import realistic_queries
from bench.session import Daemon, poll

BURST_VERSION = "reference/5.1/"
LONG_BYTES = 4096
FILES = 300  # notes indexed before the burst
QUIET_RUNS = 10  # processes on the quiet daemon, for comparison
EMBEDDED = re.compile(r"(\d+) sections embedded")


def prepare(work_dir: Path | None, files: int, burst: int) -> tuple[harness.Work, Path]:
    """A work dir with N indexed-to-be notes under notes/ and the burst's pages under burst/."""
    root = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="mdrag-busy-"))
    work = harness.Work(root.resolve())
    pages = work.root / "burst"
    if work.notes.exists() and pages.exists():
        return work, pages
    with tarfile.open(harness.CORPUS) as archive:
        members = [m for m in archive.getmembers() if m.isfile() and m.name.endswith(".md")]
    long_pages = sorted(
        (m for m in members if m.name.startswith(BURST_VERSION) and m.size >= LONG_BYTES),
        key=lambda m: m.name,
    )
    if len(long_pages) < burst:
        raise SystemExit(f"only {len(long_pages)} pages of {LONG_BYTES} bytes and more in {BURST_VERSION}")
    picked = [long_pages[i * len(long_pages) // burst] for i in range(burst)]
    names = {Path(m.name).name for m in picked}
    others = sorted(
        m.name for m in members if not m.name.startswith(BURST_VERSION) and Path(m.name).name not in names
    )
    if files and files < len(others):
        others = [others[i * len(others) // files] for i in range(files)]
    wanted = set(others)
    with tarfile.open(harness.CORPUS) as archive:
        # In the archive's order: a gzip stream read backwards is decompressed again from the start.
        archive.extractall(work.notes, members=[m for m in members if m.name in wanted], filter="data")
        archive.extractall(pages, members=picked, filter="data")
    return work, pages


@contextmanager
def neighbours(count: int) -> Iterator[None]:
    """`count` CPU-bound processes for the duration (other programs on the machine)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def search_process(work: harness.Work, query: str, cpu: list[float]) -> float:
    """One whole `mdrag search` process: its wall time in ms (its CPU time appended to `cpu`).
    Plain subprocess.run, not harness.run, whose RSS sampling every 10 ms would take CPU from
    the daemon it measures."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        harness.mdrag("search", query), env=work.env(), capture_output=True, text=True, timeout=120
    )
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    # exit 1 with no `Error:` is a search that found nothing
    if done.returncode not in (0, 1) or "Error:" in done.stderr or "Traceback" in done.stderr:
        raise RuntimeError(f"mdrag search failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall


def figures(ms: list[float]) -> dict[str, Any]:
    if not ms:
        return {"count": 0}
    return {
        "count": len(ms),
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "max_ms": round(max(ms), 1),
    }


def measure(daemon: Daemon, pages: Path, socket: bool = False) -> dict[str, Any]:
    work = daemon.work
    queries = realistic_queries(work.notes, 200)
    quiet_cpu: list[float] = []
    quiet = [search_process(work, q, quiet_cpu) for q in queries[:QUIET_RUNS]]
    before = daemon.status()
    expected = before["documents"].get("indexed", 0) + sum(1 for _ in pages.rglob("*.md"))
    target = work.notes / "burst"
    log_from = len(daemon.log())
    processes: list[float] = []
    cpu: list[float] = []
    sockets: list[float] = []

    def absorbed() -> bool:
        status = daemon.status()
        return status["documents"].get("indexed", 0) >= expected and not status["daemon"]["queue_depth"]

    started = time.perf_counter()
    shutil.copytree(pages, target)
    copied_s = time.perf_counter() - started
    asked = 0
    while True:
        processes.append(search_process(work, queries[asked % len(queries)], cpu))
        if socket:
            begun = time.perf_counter()
            daemon.search(queries[(asked + 100) % len(queries)])
            sockets.append((time.perf_counter() - begun) * 1000)
        asked += 1
        if absorbed():
            break
    burst_s = time.perf_counter() - started
    after = daemon.status()
    embedded = sum(int(n) for n in EMBEDDED.findall(daemon.log()[log_from:]))
    notes, size = harness.corpus_size(target)
    shutil.rmtree(target)
    poll(lambda: daemon.status()["documents"].get("indexed", 0) <= expected - notes, timeout=300, interval=1)
    return {
        "indexed_notes": before["documents"].get("indexed", 0),
        "sections_before": before["sections"],
        "burst": {
            "notes": notes,
            "kb": round(size / 1024),
            "sections": after["sections"] - before["sections"],
            "sections_embedded": embedded,
            "copied_s": round(copied_s, 2),
            "indexed_s": round(burst_s, 1),
        },
        "quiet_process": {**figures(quiet), "cpu_p50_ms": round(percentile(quiet_cpu, 50), 1)},
        "process": {**figures(processes), "cpu_p50_ms": round(percentile(cpu, 50), 1)},
        "socket": figures(sockets) if socket else None,
    }


def summary(result: dict[str, Any]) -> str:
    b, p, q = result["burst"], result["process"], result["quiet_process"]
    lines = [
        f"busy: {b['notes']} new long notes ({b['kb']} KB, {b['sections']} sections, "
        f"{b['sections_embedded']} embedded) indexed in {b['indexed_s']} s beside "
        f"{result['indexed_notes']} indexed notes; meanwhile {p['count']} whole `mdrag search` "
        f"processes: p50 {p['p50_ms']} ms, p95 {p['p95_ms']} ms, max {p['max_ms']} ms, CPU time "
        f"p50 {p.get('cpu_p50_ms')} ms (quiet daemon: p50 {q['p50_ms']} ms, max {q['max_ms']} ms)"
    ]
    if result.get("socket"):
        s = result["socket"]
        lines.append(
            f"busy: {s['count']} socket searches: p50 {s['p50_ms']} ms, "
            f"p95 {s['p95_ms']} ms, max {s['max_ms']} ms"
        )
    if result.get("neighbours"):
        lines.append(f"busy: with {result['neighbours']} CPU-bound neighbour process(es) running")
    return "\n".join(lines)


def run(work_dir: Path | None, files: int, burst: int, socket: bool, spinners: int) -> dict[str, Any]:
    work, pages = prepare(work_dir, files, burst)
    try:
        if not work.indexed():
            harness.reindex(work)
        with Daemon(work) as daemon, neighbours(spinners):
            result = measure(daemon, pages, socket)
    finally:
        harness.cleanup(work, keep=work_dir is not None)
    return {"files_requested": files or "all", "neighbours": spinners, **result}


def main() -> None:
    cli = harness.parser(__doc__, files_default=FILES)
    cli.add_argument("--burst", type=int, default=400, help="new long notes copied in at once")
    cli.add_argument("--socket", action="store_true", help="also a socket search after each process")
    cli.add_argument("--neighbours", type=int, default=0, help="CPU-bound processes running beside")
    args = cli.parse_args()
    result = run(args.work, args.files, args.burst, args.socket, args.neighbours)
    print(summary(result))
    print(f"written to {harness.save('busy', result)}")


if __name__ == "__main__":
    main()

"""Bench harness: the corpus in a work dir, real mdrag processes with their peak RSS, result files."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.metrics import percentile

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "data" / "powershell-docs" / "reference.tar.gz"
RESULTS = REPO / "bench" / "results"


@dataclass
class Work:
    """One benchmark's notes, index and socket; every figure of a `make bench` run shares one."""

    root: Path
    backend: str = ""  # embedding.backend for every mdrag process of this work dir ("": as configured)

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    @property
    def db(self) -> Path:
        return self.root / "index" / "milvus.db"

    @property
    def socket(self) -> str:
        # AF_UNIX paths are limited to ~107 bytes, and a work dir may be deep.
        digest = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:10]
        return f"/tmp/mdb-{os.getuid()}-{digest}/mdrag.sock"

    def indexed(self) -> bool:
        return self.db.exists()

    def env(self) -> dict[str, str]:
        config = self.root / "config.yaml"
        if not config.exists():
            config.write_text("{}\n")
        backend = {"MDRAG_EMBEDDING_BACKEND": self.backend} if self.backend else {}
        # A user's Python keeps mdrag's compiled bytecode after the first run; a machine that
        # turns that off (PYTHONDONTWRITEBYTECODE, as CI's does) would have every timed process
        # compile mdrag from source again, ~20 ms no user pays.
        inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        return {
            **inherited,
            **backend,
            "MDRAG_CONFIG": str(config),
            "MDRAG_ROOTS": str(self.notes),
            "MDRAG_MILVUS_URI": str(self.db),
            "MDRAG_SERVER_SOCKET_PATH": self.socket,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }


def prepare(work_dir: Path | None, files: int = 0, corpus: Path = CORPUS) -> Work:
    """A work dir holding the corpus's .md files (every one, or `files` spread evenly over it)."""
    root = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="mdrag-bench-"))
    work = Work(root.resolve())
    if work.notes.exists():
        return work
    with tarfile.open(corpus) as archive:
        members = [m for m in archive.getmembers() if m.isfile() and m.name.endswith(".md")]
        if files and files < len(members):
            # Evenly spaced over the sorted names: every version and module is represented.
            names = sorted(m.name for m in members)
            wanted = {names[i * len(names) // files] for i in range(files)}
            members = [m for m in members if m.name in wanted]
        # In the archive's order: a gzip stream read backwards is decompressed again from the start.
        archive.extractall(work.notes, members=members, filter="data")
    return work


def corpus_size(notes: Path) -> tuple[int, int]:
    """(markdown files, bytes) under a folder."""
    sizes = [p.stat().st_size for p in notes.rglob("*.md")]
    return len(sizes), sum(sizes)


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_mb: float  # the mdrag process itself
    peak_tree_rss_mb: float  # with its children (the Milvus Lite server), sampled


def run(
    args: list[str], env: dict[str, str], timeout: float | None = None, cwd: Path | None = None
) -> Finished:
    """Run a process to its end: its wall time, and its peak RSS (VmHWM, sampled as it runs).

    Not wait4's ru_maxrss: a child forked from a big bench process counts the parent's pages
    until it execs, so that figure is the parent's size, not the child's.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True, cwd=cwd)
        deadline = None if timeout is None else started + timeout
        peak = tree = 0.0
        while True:
            try:
                peak = max(peak, rss_mb(process.pid).get("VmHWM", 0.0))
                tree = max(tree, tree_rss_mb(process.pid))
            except (OSError, ValueError):
                pass  # between exit and reaping
            if deadline is not None and time.perf_counter() > deadline:
                process.kill()
            # Sampled often at first (short runs), then twice a second: sampling must not steal
            # the CPU from the process it measures (every 10 ms cost ~40% of a core). The wait in
            # between returns within 50 ms of the exit: a sleep would round the wall time up to
            # the next half second.
            try:
                process.wait(timeout=0.01 if time.perf_counter() - started < 2 else 0.5)
                break
            except subprocess.TimeoutExpired:
                pass
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return Finished(process.returncode, out.read(), err.read(), wall, peak, tree)


def mdrag(*args: str) -> list[str]:
    """The `mdrag` console script of this interpreter's environment (what a user runs)."""
    script = Path(sys.executable).parent / "mdrag"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "mdrag.cli.main", *args]


def reindex(work: Work) -> tuple[dict[str, Any], Finished]:
    """One `mdrag reindex --json` process over the work dir (no daemon: it opens the index itself)."""
    finished = run(mdrag("reindex", "--json"), work.env())
    if finished.returncode != 0:
        raise RuntimeError(f"mdrag reindex failed ({finished.returncode}):\n{finished.stderr[-4000:]}")
    return json.loads(finished.stdout), finished


def rss_mb(pid: int, keys: tuple[str, ...] = ("VmRSS", "VmHWM")) -> dict[str, float]:
    """Memory figures of a live process from its status, in MB: by default resident (VmRSS) and
    peak resident (VmHWM); RssAnon and RssFile split the resident set."""
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in keys:
            figures[key] = round(int(value.split()[0]) / 1024, 1)
    return figures


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (mdrag plus its Milvus Lite servers)."""
    return tree_memory_mb(pid, pss=False)["rss"]


def tree_memory_mb(pid: int, pss: bool = True) -> dict[str, float]:
    """A process and all its descendants, summed: `rss` (each process's resident set, so pages
    they share, such as two Lite servers' code, count once per process), `anon` (the part of it
    no file backs: heaps the kernel cannot drop, where `rss` - `anon` is mapped files, such as
    the keyword index, that it may) and `pss` (each shared page split among the processes that
    map it: what the tree holds, every page counted once). Reading PSS walks every mapping:
    `pss=False` skips it where the tree is sampled often."""
    rss = anon = proportional = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            figures = rss_mb(current, ("VmRSS", "RssAnon"))
            rss += figures.get("VmRSS", 0.0)
            anon += figures.get("RssAnon", 0.0)
            proportional += _pss_mb(current) if pss else 0.0
            for task in Path(f"/proc/{current}/task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue  # exited meanwhile
    return {"rss": round(rss, 1), "anon": round(anon, 1), "pss": round(proportional, 1)}


def _pss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def spread(values: list[float], digits: int = 1) -> dict[str, Any]:
    """Median and min–max of repeated measurements (these machines are noisy)."""
    return {
        "median": round(percentile(values, 50), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
    }


def machine() -> dict[str, Any]:
    memory_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return {
        "cores": len(os.sched_getaffinity(0)),
        "memory_gib": round(memory_kb / 1024**2),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def save(name: str, result: dict[str, Any], out_dir: Path = RESULTS) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **result}, indent=2))
    return path


def cleanup(work: Work, keep: bool) -> None:
    shutil.rmtree(Path(work.socket).parent, ignore_errors=True)
    if not keep:
        shutil.rmtree(work.root, ignore_errors=True)


def parser(doc: str | None, files_default: int = 0) -> argparse.ArgumentParser:
    """The options every bench command shares: how many files of the corpus, and a work dir to keep."""
    result = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    result.add_argument(
        "--files", type=int, default=files_default, help="only N files of the corpus (0: all)"
    )
    result.add_argument("--work", type=Path, help="work dir to keep (default: a temporary one)")
    return result


def figure_main(
    name: str,
    cli: argparse.ArgumentParser,
    measure: Callable[[Work, argparse.Namespace], dict[str, Any]],
    summary: Callable[[dict[str, Any]], str],
) -> None:
    """One figure as a command: the corpus indexed in a work dir, measured, summarised, saved."""
    args = cli.parse_args()
    work = prepare(args.work, args.files)
    try:
        if not work.indexed():
            reindex(work)
        result = measure(work, args)
    finally:
        cleanup(work, keep=args.work is not None)
    print(summary(result))
    print(f"written to {save(name, result)}")

"""Whole `mdrag search` processes of two installs against one daemon, in turn: what an install kind costs.

`make run` installs mdrag as a user gets it; the tests' venv has it editable, whose finder every
process pays at start. Both ask the same daemon over examples/notes, in turn, each preceded by a
bare start of its interpreter, so a busy moment of the machine falls on both alike.

    python -m bench.process_start --mdrag .venv/bin/mdrag --mdrag /tmp/clone/.venv/bin/mdrag
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench import harness
from bench.session import Daemon

EXAMPLES = harness.REPO / "examples" / "notes"
QUERIES = (
    "how do I back up my notes",
    "sourdough starter feeding",
    "kubernetes pod restarts",
    "tax deadline",
)


def cpu_ms() -> float:
    """CPU time of this process's reaped children so far: unlike wall time, another process's
    load on the 2 cores barely moves it."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def process_walls(mdrags: list[str], work: harness.Work, runs: int) -> dict[str, Any]:
    walls: dict[str, list[float]] = {m: [] for m in mdrags}
    cpus: dict[str, list[float]] = {m: [] for m in mdrags}
    bare: dict[str, list[float]] = {m: [] for m in mdrags}
    for turn in range(runs):
        for mdrag in mdrags:
            python = str(Path(mdrag).parent / "python")
            bare[mdrag].append(harness.run([python, "-c", "pass"], work.env(), timeout=60).wall_s * 1000)
            before = cpu_ms()
            finished = harness.run([mdrag, "search", QUERIES[turn % len(QUERIES)]], work.env(), timeout=60)
            cpus[mdrag].append(cpu_ms() - before)
            if finished.returncode not in (0, 1) or "Error:" in finished.stderr:
                raise RuntimeError(f"{mdrag} search failed: {finished.stderr[-2000:]}")
            walls[mdrag].append(finished.wall_s * 1000)
    return {
        mdrag: {
            "wall_ms": harness.spread(walls[mdrag], 0),
            "cpu_ms": harness.spread(cpus[mdrag], 0),
            "bare_python_ms": harness.spread(bare[mdrag], 0),
        }
        for mdrag in mdrags
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mdrag", action="append", required=True, help="an install's mdrag script")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdrag-start-") as root:
        work = harness.Work(Path(root))
        shutil.copytree(EXAMPLES, work.notes)
        try:
            with Daemon(work):
                result = process_walls(args.mdrag, work, args.runs)
        finally:
            harness.cleanup(work, keep=True)  # the socket's folder; the work dir goes with its tempdir
    for mdrag, figures in result.items():
        wall, cpu, bare = figures["wall_ms"], figures["cpu_ms"], figures["bare_python_ms"]
        print(
            f"{mdrag}: whole search median {wall['median']} ms wall, {cpu['median']} ms CPU "
            f"(bare python {bare['median']} ms)"
        )
    harness.save("process_start", {"runs": args.runs, "installs": result})


if __name__ == "__main__":
    main()

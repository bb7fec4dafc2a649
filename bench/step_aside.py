"""Step-aside memory: the whole daemon while it indexes a 4.9 MB one-line note and small notes are saved.

    python -m bench.step_aside [--size 4900000] [--saves 10] [--every 5] [--work DIR]

A real `mdrag serve` over a folder of one small note. A note of one line of words (SIZE bytes)
is written, then SAVES small notes a few seconds apart (EVERY): each makes the large note step
aside for it (docs/design/daemon.md, "Large notes"). The whole daemon (itself and its Milvus Lite
servers, resident sets summed) is sampled every 0.2 s from the large note's write until it is
indexed, after the saves; the headline is its peak. Issue #59's figure before the fix: 0.47 GB
idle, 4.5-5.0 GB at the peak; its target: at most 1.5 GB. Also how long each small note took to
be searchable, how far the large note got between them (its texts embedded or kept, of its
total) and how long it took once they were over. Writes bench/results/step_aside.json.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.session import Daemon, poll

QUIET_S = 5
FINISH_S = 1800  # for the large note once the saves are over


def one_line(size: int) -> str:
    """One line of random words, `size` bytes."""
    rng = random.Random(1)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]
    return " ".join(rng.choice(words) for _ in range(size // 5))[:size] + "\n"


def found(daemon: Daemon, path: Path) -> bool:
    hits = daemon.search("kestrel hovers over the hayfield", top_k=50, threshold=0.0)["results"]
    return str(path) in {h["file_path"] for h in hits}


def measure(work: harness.Work, size: int, saves: int, every: float) -> dict[str, Any]:
    with Daemon(work) as daemon:
        idle = harness.tree_rss_mb(daemon.pid)
        samples = [idle]
        stop = threading.Event()

        seen: dict[str, Any] = {}  # the large note's last turn as status showed it

        def sample() -> None:
            while not stop.is_set():
                samples.append(harness.tree_rss_mb(daemon.pid))
                if len(samples) % 5 == 0:
                    run = daemon.status()["daemon"].get("indexing") or {}
                    if run.get("total", 0) > 1000:
                        seen.update(run)
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        (work.notes / "ledger.md").write_text(one_line(size))
        time.sleep(2)
        searchable_s: list[float] = []
        progress: list[str] = []  # texts of the large note embedded or kept, of its total, after each save
        for i in range(saves):
            path = work.notes / f"kestrel{i}.md"
            path.write_text(f"# Kestrel {i}\n\nA kestrel hovers over the hayfield, sighting {i}.\n")
            saved = time.monotonic()
            searchable_s.append(round(poll(lambda p=path: found(daemon, p), 120), 2))  # type: ignore[misc]
            time.sleep(max(0.0, every - (time.monotonic() - saved)))
            progress.append(f"{seen.get('done', 0)}/{seen.get('total', 0)}")
            print(
                f"save {i + 1}: searchable in {searchable_s[-1]} s, whole daemon {samples[-1]:.0f} MB, "
                f"large note's texts {progress[-1]}",
                flush=True,
            )
        time.sleep(QUIET_S)
        # Then the large note alone: every turn kept what it had read and embedded, so it gets done.
        indexed = saves + 2  # the seed, the small notes and the large one
        finished_s = poll(lambda: daemon.status()["documents"].get("indexed") == indexed, FINISH_S)
        stop.set()
        sampler.join()
        return {
            "note_bytes": size,
            "saves": saves,
            "every_s": every,
            "idle_mb": idle,
            "peak_mb": max(samples),
            "seconds": round(time.monotonic() - started, 1),
            "small_note_searchable_s": searchable_s,
            "large_note_texts_after_each_save": progress,
            "steps_aside": daemon.log().count("waits behind newer changes"),
            "large_note_done_after_the_saves_s": round(finished_s, 1),
        }


def summary(result: dict[str, Any]) -> str:
    return (
        f"whole daemon indexing a {result['note_bytes'] / 1e6:.1f} MB one-line note while "
        f"{result['saves']} notes were saved {result['every_s']:g} s apart: idle {result['idle_mb']:.0f} MB, "
        f"peak {result['peak_mb']:.0f} MB; each small note searchable in at most "
        f"{max(result['small_note_searchable_s']):.1f} s; the large note stepped aside "
        f"{result['steps_aside']} times and was indexed {result['large_note_done_after_the_saves_s']:.0f} s "
        "after the last"
    )


def main() -> None:
    cli = harness.parser(__doc__)
    cli.add_argument("--size", type=int, default=4_900_000)
    cli.add_argument("--saves", type=int, default=10)
    cli.add_argument("--every", type=float, default=5.0)
    args = cli.parse_args()
    work = harness.Work(args.work or Path(tempfile.mkdtemp(prefix="mdrag-step-aside-")))
    work.notes.mkdir(parents=True, exist_ok=True)
    (work.notes / "seed.md").write_text("# Seed\n\nThe lighthouse keeper trims the wick every evening.\n")
    try:
        result = measure(work, args.size, args.saves, args.every)
    finally:
        harness.cleanup(work, keep=args.work is not None)
    print(summary(result))
    print(f"written to {harness.save('step_aside', result)}")


if __name__ == "__main__":
    main()

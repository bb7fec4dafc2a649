"""Keywords ahead: how soon a big first index finds every note by its words, and what that costs the model.

    python -m bench.ahead [--work DIR] [--minutes M]

A large vault's first index is bound by the model (hours on two cores). Four real documentation
folders from ../shared/data (the PowerShell reference, the OpenTelemetry docs, the EIPs and the
tldr pages) go into one notes folder, and a real `mdrag serve` starts on it with no index. Its
status is read every second: the minutes until every note is searchable by its words (the
progress's `keyword_notes` reaches its notes), then until every note is searchable by meaning
(the daemon watches), and the texts the model has done. Half a minute after keyword coverage,
default searches ask for the titles of 20 notes the model has not reached yet (a title no other
note has), and where each note ranks is kept. The model's pace, while the notes are read ahead
and after, and over the whole index, is compared with the encode ceiling (the same model
encoding a sample of the texts it embedded, in a plain loop): the efficiency. A run stopped by
`--minutes` before the end estimates the time to full coverage at the pace after.
"""

from __future__ import annotations

import argparse
import random
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import cold, harness
from bench.session import Daemon

DATA = harness.REPO.parent / "shared" / "data"
FOLDERS = {
    "powershell": DATA / "powershell-docs" / "reference.tar.gz",
    "opentelemetry": DATA / "opentelemetry-docs" / "docs.tar.gz",
    "eips": DATA / "edge-corpora" / "ethereum-eips.tar.gz",
    "tldr": DATA / "tldr-pages" / "pages.tar.gz",
}
CEILING_SAMPLE = 1500


def prepare(work_dir: Path | None) -> harness.Work:
    """A work dir whose notes are the four folders' markdown files, each in a folder of its own."""
    root = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="mdrag-ahead-"))
    work = harness.Work(root.resolve())
    if not work.notes.exists():
        for name, archive_path in FOLDERS.items():
            with tarfile.open(archive_path) as archive:
                members = [m for m in archive.getmembers() if m.isfile() and m.name.endswith(".md")]
                archive.extractall(work.notes / name, members=members, filter="data")
    return work


PROBES = 20


def _waiting_notes(daemon: Daemon) -> dict[str, Any]:
    """Keyword searches for the titles of notes the model has not reached (a dense search
    restricted to the note finds nothing: it has no vector yet), and where each note ranked.
    A title several notes share (tldr's translated pages keep the English one) is left out."""
    notes = sorted(daemon.work.notes.rglob("*.md"))
    titles: dict[str, list[Path]] = {}
    for note in notes:
        lines = note.read_text(errors="replace").splitlines()
        title = next((line.lstrip("# ").strip() for line in lines if line.startswith("# ")), "")
        if len(title.split()) >= 2:
            titles.setdefault(title, []).append(note)
    unique = [(title, found[0]) for title, found in titles.items() if len(found) == 1]
    random.Random(7).shuffle(unique)
    probes = []
    for title, note in unique:
        if daemon.search(title, mode="dense", threshold=0.0, path_prefix=str(note))["results"]:
            continue  # embedded already
        answer = daemon.search(title, threshold=0.0)  # the default search: hybrid
        paths = [hit["file_path"] for hit in answer["results"]]
        probes.append(
            {
                "note": str(note),
                "query": title,
                "rank": paths.index(str(note)) + 1 if str(note) in paths else None,
            }
        )
        if len(probes) >= PROBES:
            break
    ranks = [p["rank"] for p in probes]
    return {
        "probes": probes,
        "first": sum(r == 1 for r in ranks),
        "in_10": sum(r is not None for r in ranks),
        "asked": len(ranks),
    }


def measure(work: harness.Work, minutes: float) -> dict[str, Any]:
    files, size = harness.corpus_size(work.notes)
    daemon = Daemon(work)
    started = time.perf_counter()
    daemon.spawn()
    samples: list[dict[str, Any]] = []
    keyword_all_s = full_s = None
    probe: dict[str, Any] = {}
    try:
        while time.perf_counter() - started < minutes * 60:
            time.sleep(1)
            if not daemon.client.alive():
                continue
            state = daemon.status().get("daemon", {})
            progress = state.get("indexing")
            elapsed = time.perf_counter() - started
            if samples and progress is None and state.get("state") == "watching":
                full_s = elapsed  # the first index is done: every note is searchable by meaning
                break
            if not progress or progress["state"] != "indexing":
                continue
            samples.append({"s": round(elapsed, 1), **progress})
            if keyword_all_s is None and progress["keyword_notes"] >= progress["notes_total"] > 0:
                keyword_all_s = elapsed
            if keyword_all_s is not None and not probe and elapsed > keyword_all_s + 30:
                probe = _waiting_notes(daemon)  # while most notes still wait for the model
        rss = daemon.rss()
    finally:
        daemon.__exit__(None, None, None)
    texts = cold.embedded_texts(work.db)
    sample = random.Random(3).sample(texts, min(CEILING_SAMPLE, len(texts)))
    ceiling = cold.ceiling(sample, work.root / "config.yaml")
    run = {
        "machine": harness.machine(),
        "notes": files,
        "mb": round(size / 1e6, 1),
        "minutes_run": minutes,
        "keyword_all_s": keyword_all_s,
        "full_s": full_s,
        "embedded": len(texts),
        "ceiling_texts_per_s": round(ceiling["texts"] / ceiling["seconds"]["median"], 1),
        "probe": probe,
        "whole_daemon_mb": rss.get("with_milvus"),
        # The first index's run only: a run the watcher queued behind it counts from 0 again.
        "samples": [x for x in samples if x["started_at"] == samples[0]["started_at"]] if samples else [],
    }
    return {**run, **figures(run)}


def _pace(samples: list[dict[str, Any]]) -> float | None:
    """Texts done a second (embedded, or reused from a section already embedded) over `samples`."""
    if len(samples) < 2 or samples[-1]["s"] <= samples[0]["s"]:
        return None
    return (samples[-1]["done"] - samples[0]["done"]) / (samples[-1]["s"] - samples[0]["s"])


def figures(run: dict[str, Any]) -> dict[str, Any]:
    """What a person reads from a run: minutes to keyword and to full coverage, and the model's
    pace and efficiency (the texts it embedded a second against the encode ceiling's)."""
    samples, keyword_all_s, full_s = run["samples"], run["keyword_all_s"], run["full_s"]
    ceiling = run["ceiling_texts_per_s"]
    reading = [x for x in samples if keyword_all_s is not None and x["s"] <= keyword_all_s]
    after = [x for x in samples if keyword_all_s is not None and x["s"] >= keyword_all_s]
    while_pace, after_pace = _pace(reading), _pace(after)
    last = samples[-1] if samples else {}
    overall = None
    if full_s is not None and samples and full_s > samples[0]["s"]:
        overall = run["embedded"] / (full_s - samples[0]["s"])  # from the model's first batch to the end
    hours = None
    if full_s is not None:
        hours = round(full_s / 3600, 2)
    elif after_pace:
        hours = round((last["total"] - last["done"]) / after_pace / 3600 + run["minutes_run"] / 60, 2)
    return {
        "keyword_coverage_min": None if keyword_all_s is None else round(keyword_all_s / 60, 2),
        "full_coverage_min": None if full_s is None else round(full_s / 60, 2),
        "hours_to_full_coverage": hours,
        "texts_done": last.get("done"),
        "progress_texts_per_s_while_reading_ahead": None if while_pace is None else round(while_pace, 1),
        "progress_texts_per_s_after": None if after_pace is None else round(after_pace, 1),
        "embedded_texts_per_s": None if overall is None else round(overall, 1),
        "efficiency": None if overall is None else round(overall / ceiling, 3),
    }


def summary(result: dict[str, Any]) -> str:
    probe = result["probe"]
    found = (
        f"{probe['first']} of {probe['asked']} first, {probe['in_10']} in the first 10"
        if probe.get("asked")
        else "not asked"
    )
    efficiency = (
        f"the model embedded {result['embedded']} texts at {result['embedded_texts_per_s']} a second, "
        f"{result['efficiency']} of its pace alone ({result['ceiling_texts_per_s']})"
        if result.get("efficiency") is not None
        else f"the model's pace alone {result['ceiling_texts_per_s']} texts a second"
    )
    return (
        f"ahead: {result['notes']} notes ({result['mb']} MB): every note searchable by its words after "
        f"{result['keyword_coverage_min']} min, by meaning {_full(result)}; progress "
        f"{result['progress_texts_per_s_while_reading_ahead']} texts a second while the notes were read "
        f"ahead, {result['progress_texts_per_s_after']} after (sections repeated across notes count, "
        f"embedded once); {efficiency}; default searches for the titles of notes the model had not "
        f"reached: {found}"
    )


def _full(result: dict[str, Any]) -> str:
    if result.get("full_coverage_min") is not None:
        return f"after {result['full_coverage_min']} min"
    return f"in about {result['hours_to_full_coverage']} h (estimated at that pace)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, help="work dir (kept); default: a temporary one, removed")
    parser.add_argument("--minutes", type=float, default=60.0, help="stop after this long (default 60)")
    args = parser.parse_args()
    work = prepare(args.work)
    if work.db.exists() or (work.root / "index").exists():
        raise SystemExit(f"{work.root / 'index'} exists: a first index needs an empty one")
    result = measure(work, args.minutes)
    harness.save("ahead", result)
    print(summary(result))


if __name__ == "__main__":
    main()

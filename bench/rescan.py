"""No-op rescan: `mdrag reindex` over an index already true to the files (nothing changed).

    python -m bench.rescan [--files N] [--work DIR] [--repeat 3]

Each run is a whole `mdrag reindex --json` process (no daemon); reported are its wall time and
the indexing part alone (hash every file, compare with the catalog), median and min–max.
"""

from __future__ import annotations

from typing import Any

from bench import harness


def measure(work: harness.Work, repeat: int = 3) -> dict[str, Any]:
    files, _ = harness.corpus_size(work.notes)
    walls, indexing, rss = [], [], []
    for _ in range(repeat):
        report, finished = harness.reindex(work)
        if report["sections_embedded"] or report["added"] or report["updated"]:
            raise RuntimeError(f"the rescan found changes: {report}")
        walls.append(finished.wall_s)
        indexing.append(report["seconds"])
        rss.append(finished.peak_rss_mb)
    return {
        "command": "mdrag reindex --json (a separate process, nothing changed)",
        "files": files,
        "wall_s": harness.spread(walls, 2),
        "indexing_s": harness.spread(indexing, 2),
        "peak_rss_mb": harness.spread(rss, 0),
    }


def summary(result: dict[str, Any]) -> str:
    w, i = result["wall_s"], result["indexing_s"]
    return (
        f"no-op rescan of {result['files']} files: whole process {w['median']}s "
        f"(min {w['min']}, max {w['max']}), indexing part {i['median']}s (min {i['min']}, max {i['max']}); "
        f"peak RSS {result['peak_rss_mb']['median']} MB"
    )


def main() -> None:
    cli = harness.parser(__doc__)
    cli.add_argument("--repeat", type=int, default=3)
    harness.figure_main("rescan", cli, lambda work, args: measure(work, args.repeat), summary)


if __name__ == "__main__":
    main()

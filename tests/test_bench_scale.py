"""bench.scale's report: the sizes side by side, and each large-vault target checked."""

from __future__ import annotations

from typing import Any

from bench import scale_table


def _size(notes: int, sections: int, whole_mb: float, serving_s: float) -> dict[str, Any]:
    memory = {"notes": notes, "sections": sections, "whole_daemon_mb": whole_mb}
    return {
        "memory": memory,
        "after_restart": memory,
        "index_on_disk_mb": sections / 200,
        "search": {"p50_ms": 20.0, "max_ms": 40.0, "process": {"wall_ms": {"median": 130.0, "max": 160.0}}},
        "restart": {
            "status_answers_s": 0.6,
            "serving_s": serving_s,
            "reconciled_s": serving_s + 1,
            "loading_steps_s": {"opening the index": 0.6, "loading the model and the vectors": 0.9},
        },
    }


def _result(reopen: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "factor": 5,
        "one": _size(3088, 56_000, 900.0, 4.0),
        "many": _size(15_440, 280_000, 2400.0, 39.0),
        "reopen": reopen,
        "slope_kb_per_section": 6.86,
    }


def test_each_target_is_checked_against_the_grown_figure() -> None:
    lines = scale_table.table(_result({"rows_written": 224_000, "seconds": 20.0, "search_waited_s": 19.5}))
    assert "| 5x | 15,440 | 280,000 | 1,400 MB | 2,400 MB | 20.0 / 40.0 ms | 130 / 160 ms |" in lines
    assert "| a restarted daemon serves searches | 39.0 s | ≤ 10 s | no |" in lines
    assert "| `status` answers after a restart | 0.6 s | ≤ 1 s | yes |" in lines
    assert "| whole daemon per section added (slope 1x to Nx, restarted) | 6.86 KB | ≤ 3 KB | no |" in lines
    # What it holds at Nx over its sections (2,400 MB / 280,000), and at 1x, as #35 states them.
    assert (
        "| whole daemon idle per section at Nx (all it holds / sections) | 8.78 KB | ≤ 3 KB | no |" in lines
    )
    assert "| whole daemon idle at 1x | 900.0 MB | ≤ 500 MB | no |" in lines
    assert "| a search sent during a reopen waits | 19.5 s | ≤ 1 s | no |" in lines
    assert "a search sent as it began waited 19.5 s" in lines
    assert "opening the index 0.6, loading the model and the vectors 0.9" in lines


def test_a_run_without_a_reopen_says_it_was_not_measured() -> None:
    lines = scale_table.table(_result(None))
    assert "| a search sent during a reopen waits | - | ≤ 1 s | - |" in lines
    assert "reopened the grown index by itself" not in lines
    assert "did not reopen the grown index within the wait" in lines


def test_a_reopen_beside_the_running_servers_reports_its_searches_and_peak_memory() -> None:
    reopen = {
        "rows_written": 169_000,
        "seconds": 61.2,
        "requests_held_s": 0.04,
        "searches_during": 200,
        "search_waited_s": 0.31,
        "search_waited_median_s": 0.052,
        "peak_whole_daemon_mb": 6400,
    }
    lines = scale_table.table(_result(reopen))
    assert "| a search sent during a reopen waits | 0.31 s | ≤ 1 s | yes |" in lines
    assert "200 searches sent meanwhile waited 0.052 s (median), 0.31 s at most" in lines
    assert "requests held back 0.04 s" in lines and "peaked at 6,400 MB" in lines

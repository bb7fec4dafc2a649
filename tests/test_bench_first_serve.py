"""bench.first_serve's figure: its summary, and its row in the report."""

from __future__ import annotations

from bench import first_serve, report_speed


def _figure() -> dict:
    return {
        "files": 300,
        "sections": 5603,
        "after_first_index": {"daemon_mb": 309.0, "whole_daemon_mb": 593.0, "daemon_peak_mb": 530.0},
        "restarted": {"daemon_mb": 250.0, "whole_daemon_mb": 532.0, "daemon_peak_mb": 262.0},
    }


def test_the_summary_sets_the_first_serve_beside_the_restarted_daemon() -> None:
    text = first_serve.summary(_figure())
    assert "first index of 5603 sections: 309 MB (peak 530 MB), whole daemon 593 MB" in text
    assert "restarted: 250 MB, whole daemon 532 MB" in text


def test_the_report_row_names_both_states_and_what_each_sum_holds() -> None:
    rows = dict(report_speed.first_serve_rows({"first_serve": _figure()}))
    [(figure, measured)] = rows.items()
    assert "first index is built (300 notes, 5,603 sections) / restarted on it" in figure
    assert measured == "593 MB (the daemon 309 MB, peak 530 MB) / 532 MB (the daemon 250 MB)"
    assert report_speed.first_serve_rows({}) == []

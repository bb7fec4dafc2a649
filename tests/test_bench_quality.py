"""bench.quality's figures in a bench run: its summary, the report's rows and targets, and a failed gate."""

from __future__ import annotations

from bench import quality, report_speed


def _gate() -> dict:
    return {
        "mode": "hybrid",
        "threshold": 0.7,
        "seconds": 41.5,
        "sets": {
            "scifact": {
                "backend": "onnx",
                "queries": 300,
                "index_cached": True,
                "ndcg@10": 0.7181,
                "recall@100": 0.9357,
                "answered": 0.5533,
                "silent": 0.5467,
            },
            "natural": {
                "backend": "onnx",
                "queries": 81,
                "index_cached": True,
                "ndcg@10": 0.7724,
                "recall@100": 0.9701,
                "answered": 0.81,
                "silent": 0.9286,
            },
        },
    }


def test_the_summary_names_the_mode_back_end_and_every_figure_of_each_set() -> None:
    text = quality.summary(_gate())
    assert "hybrid search, threshold 0.7" in text
    assert (
        "scifact (onnx, 300 queries): nDCG@10 0.718, Recall@100 0.936, answered 0.553, silent 0.547" in text
    )
    assert "natural (onnx, 81 queries)" in text


def test_the_targets_hold_the_ndcg_floor_and_both_rates_per_set() -> None:
    rows = {
        figure: (measured, goal, met) for figure, measured, goal, met in report_speed.quality_targets(_gate())
    }
    assert rows["SciFact nDCG@10, default search"] == ("0.718", "≥ 0.71", True)
    assert rows["scifact: answered / silent at threshold 0.7"] == ("0.553 / 0.547", "≥ 0.8 each", False)
    assert rows["natural: answered / silent at threshold 0.7"][2] is True


def test_a_failed_gate_is_one_row_saying_why_and_no_target() -> None:
    failed = {"error": "FileNotFoundError: ../shared/data/scifact/notes.tar.gz"}
    assert report_speed.quality_rows(failed) == [("quality gate", f"failed: {failed['error']}")]
    assert report_speed.quality_targets(failed) == [] and report_speed.quality_rows(None) == []

"""bench.vaultfit's rates: what a threshold keeps, and the curve of what moving it trades."""

from bench import report_quality, vaultfit


def _row(version: str, labelled_scores: list[tuple[int, float]]) -> dict:
    cands = [(f"note{i}.md", label, [score]) for i, (label, score) in enumerate(labelled_scores)]
    return {"version": version, "cands": cands, "set": "s", "split": "test", "q": str(id(cands))}


ROWS = [
    _row("answerable", [(1, 0.9), (0, 0.4)]),  # answered at any threshold up to 0.9
    _row("answerable", [(0, 0.8), (1, 0.6)]),  # a right page second, kept only under 0.6
    _row("unanswerable", [(0, 0.75)]),  # a near miss: confident above 0.75 only
    _row("unanswerable", [(0, 0.2)]),
]


def _scores(row: dict) -> list[float]:
    return [values[0] for _, _, values in row["cands"]]


def test_a_threshold_keeps_what_reaches_it():
    at = vaultfit.figures(ROWS, lambda _: _scores, threshold=0.7)
    assert (at["answered"]["rate"], at["answered"]["of"]) == (0.5, 2)
    assert (at["silent"]["rate"], at["silent"]["of"]) == (0.5, 2)
    assert at["right_first"]["rate"] == 0.5 and at["right_in_3"]["rate"] == 1.0
    low = vaultfit.figures(ROWS, lambda _: _scores, threshold=0.5)
    assert low["answered"]["rate"] == 1.0 and low["silent"]["rate"] == 0.5
    lo, hi = low["answered"]["ci95"]
    assert lo < 1.0 and hi == 1.0  # two questions say little: the interval says how little


def test_the_curve_trades_answers_for_silence_as_the_threshold_rises():
    points = vaultfit.curve(ROWS, lambda _: _scores)
    assert [p["threshold"] for p in points] == list(vaultfit.CURVE)
    answered = [p["answered"]["rate"] for p in points]
    silent = [p["silent"]["rate"] for p in points]
    assert answered == sorted(answered, reverse=True) and silent == sorted(silent)
    assert answered[0] == 1.0 and silent[-1] == 1.0


def test_each_outcome_counts_the_searches_given_it_and_how_often_their_first_hit_is_right():
    cells = {c["kind"]: c for c in vaultfit.levels(ROWS, lambda _: _scores)}
    assert list(cells) == ["high", "medium", "possibly related", "nothing close"]
    assert (cells["high"]["of"], cells["high"]["right_first"]) == (1, 1.0)  # 0.9: a right page first
    # 0.8 (a wrong page first) and 0.75 (an unanswerable question): medium, neither right.
    assert (cells["medium"]["of"], cells["medium"]["right_first"]) == (2, 0.0)
    # Under 0.7 nothing is an answer: 0.5 to 0.7 is possibly related, lower is nothing close.
    assert cells["possibly related"]["of"] == 0 and cells["possibly related"]["right_first"] is None
    assert (cells["nothing close"]["of"], cells["nothing close"]["right_first"]) == (1, 0.0)


def test_at_a_lower_threshold_low_confidence_is_an_answer_and_the_band_moves_down():
    cells = vaultfit.levels(ROWS, lambda _: _scores, threshold=0.5)
    assert [(c["kind"], c["from"], c["to"]) for c in cells] == [
        ("high", 0.9, 1.0),
        ("medium", 0.7, 0.9),
        ("low", 0.5, 0.7),
        ("possibly related", 0.3, 0.5),
        ("nothing close", 0.0, 0.3),
    ]
    assert [c["of"] for c in cells] == [1, 2, 0, 0, 1]


def test_the_report_names_what_a_search_gives_and_leaves_out_what_none_got():
    lines = report_quality._levels(vaultfit.levels(ROWS, lambda _: _scores))
    assert lines[2].startswith("| an answer, high confidence | 0.9 or more | 1 | 1.00 (")
    assert lines[3].startswith("| an answer, medium confidence | 0.7 to under 0.9 | 2 | 0.00 (")
    assert lines[4].startswith("| nothing close | under 0.5 | 1 | 0.00 (")
    assert len(lines) == 5  # possibly related: no search got it, no row

"""Report, retrieval quality: docs/benchmarks.md's tables of eval.json, vaults.json, fit.json,
baseline.json, order.json and lovo.json, with the prose that says how each was measured."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

EVAL_METHOD = """\
`make eval` indexes each judged set with mdrag's indexer (each index cached under
`.eval-work/`, reused while the corpus and mdrag's index identity are the same), runs every query
through `Service.search` (the code behind `mdrag search` and the daemon) in every mode, and ranks
notes by their best section (BEIR's nDCG@10 and Recall@100, binary relevance):
- **scifact**: 5,183 abstracts as notes and the 300 test queries (`../shared/data/scifact`);
- **natural**: 81 questions written as people ask them (53 answerable, 28 not) over 412 notes of
  the PowerShell 7.5 reference and the Final EIPs (`bench/data/natural/`);
- **the vaults** (`bench/data/vaults/`): seven real documentation folders and Obsidian vaults,
  each indexed as a vault of its own, with 921 questions written as people ask them and judged by
  reading (342 unanswerable near misses): powershell, eips and tldr (a quarter of each sealed),
  otel (all sealed), hugo (the unseen vault), and the Obsidian developer docs and Obsidian Hub
  (all sealed: file names as titles, aliases, hub pages), each with natural, keyword and
  identifier queries. The answer decision is fitted on the train questions alone; the hybrid
  order on every vault's questions, so its figures held out are those with each vault left out
  of its own fit (below).
"""

VAULTS_METHOD = """\
**On the vaults, by split** (`make eval`; every rate with its Wilson 95% interval and its count).
*Answered*: an answerable question keeps a right page among its hits at 0.7; *silent*: an
unanswerable one keeps nothing at 0.7 (it may still show "possibly related" hits under it);
*right first / in 3*: a right page is the first note / among the first three (the order alone).
The score's answer decision is fitted on the `train` questions only; `sealed` (200 questions of
the four fitted-on folders) and `hugo` are never fitted on."""

VAULTFIT_METHOD = """\
**Ways to score, compared** (`python -m bench.vaultfit`, from `make eval`'s dumps): *scifact*, the
constants fitted on SciFact alone; *words*, those plus the query-level evidence fitted on the
vaults' train questions (a weight for a query that names something no note found holds, one for
a query with a word no note holds, a shift of the bias: what mdrag shipped before its answer
decision); *refit*, every per-hit weight refitted on the vaults; *decision*, a query-level
decision on the best hit's evidence with SciFact's order kept; *small decision*, the same on
four pieces of it (the best hit's cosine and share of the query's words, a name no note found
holds, a word no note holds), what mdrag ships; *shipped*, the scores mdrag gives with the
constants it holds. Answered / silent at 0.7; train is held out by 5 folds."""


ANSWERABILITY = """\
*Answered*: an answerable query keeps a relevant note among its hits at the default threshold
(0.7, top 10). *Silent*: an unanswerable query keeps nothing (SciFact: the query asked again
with its relevant notes left out of the ranking; the natural set: its questions that the corpus
does not answer). The relevance score's constants are fitted on SciFact test (`python -m bench.fit`),
so its rows above are in-sample (its held-out figures follow); the natural-question set
(`bench/data/natural/`) is never fitted on. Hybrid search over thresholds:"""

HELD_OUT = """\
**Held out.** Each query scored by constants fitted without it (`python -m bench.fit fit`, folds by
query over the set named, other sets named joining every fold's training; the default threshold
0.7 is placed on the training folds where answered and silent balance):"""


def _held_out(fit: dict[str, Any]) -> str:
    lines = [
        f"Cross-validated on **{fit['set']}** ({fit['folds']} folds; also trained on: "
        f"{', '.join(fit['also']) or 'nothing else'}), {fit['date']}.",
        "",
        "| mode | nDCG@10 | answered @0.7 | silent @0.7 |",
        "| --- | --- | --- | --- |",
    ]
    for mode, data in fit["modes"].items():
        held = data["held_out"]
        rates = held["at_0.7"]
        lines.append(f"| {mode} | {held['ndcg@10']:.3f} | {rates['answered']:.3f} | {rates['silent']:.3f} |")
    if "hybrid" in fit["modes"]:
        curve = {str(t): r for t, r in fit["modes"]["hybrid"]["held_out"]["curve"].items()}
        lines += ["", _curve(f"{fit['set']} hybrid, held out", curve)]
    return "\n".join(lines)


def _cell(figure: dict[str, Any] | None) -> str:
    if figure is None or figure["rate"] is None:
        return "–"
    low, high = figure["ci95"]
    return f"{figure['rate']:.2f} ({low:.2f}–{high:.2f}, n={figure['of']})"


def _vault_rows(evaluation: dict[str, Any]) -> list[str]:
    rows = [
        "| vault | mode | split | answered | silent | right first | right in 3 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, data in evaluation["sets"].items():
        for mode, figures in data["modes"].items():
            for split, f in figures.get("splits", {}).items():
                if not f["answered"]["of"] and not f["silent"]["of"]:
                    continue
                if mode.startswith("rrf"):  # the baseline ranks; its fused scores are no confidence
                    f = {**f, "answered": None, "silent": None}
                rows.append(
                    f"| {name} | {mode} | {split} | {_cell(f['answered'])} | {_cell(f['silent'])} | "
                    f"{_cell(f['right_first'])} | {_cell(f['right_in_3'])} |"
                )
    return rows if len(rows) > 2 else []


def _vaultfit(result: dict[str, Any]) -> str:
    lines = [
        "| mode | way | train (held out) | sealed | hugo (unseen) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for mode, ways in result["modes"].items():
        for way, f in ways.items():
            cells = [
                f"{f[s]['answered']['rate']:.2f} / {f[s]['silent']['rate']:.2f}"
                if f[s]["answered"]["rate"] is not None
                else "–"
                for s in ("train", "sealed", "unseen")
            ]
            lines.append(f"| {mode} | {way} | " + " | ".join(cells) + " |")
    shipped = result["modes"].get("hybrid", {}).get("shipped", {})
    if shipped.get("curve"):
        lines += ["", CURVE_METHOD, "", *_trades(shipped["curve"])]
    if shipped.get("levels"):
        lines += ["", LEVELS_METHOD, "", *_levels(shipped["levels"])]
    return "\n".join(lines)


LEVELS_METHOD = """\
**What an outcome means** (hybrid, the shipped decision, at the default threshold 0.7, over every
question it was never fitted on: the sealed split, Hugo and natural, answerable or not): the
outcome and level come from a search's first hit's score; of the searches given each, the share
whose first hit is a right page (an unanswerable question's never is), with its 95% interval."""


def _levels(cells: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| search gives | first hit's score | searches | first hit a right page |",
        "| --- | --- | --- | --- |",
    ]
    for cell in cells:
        if not cell["of"]:
            continue
        lo, hi = cell["ci95"]
        if cell["to"] == 1.0:
            span = f"{cell['from']:.1f} or more"
        elif cell["from"] == 0.0:
            span = f"under {cell['to']:.1f}"
        else:
            span = f"{cell['from']:.1f} to under {cell['to']:.1f}"
        kind = (
            f"an answer, {cell['kind']} confidence"
            if cell["kind"] in ("high", "medium", "low")
            else cell["kind"]
        )
        right = f"{cell['right_first']:.2f} ({lo:.2f}–{hi:.2f})"
        lines.append(f"| {kind} | {span} | {cell['of']} | {right} |")
    return lines


CURVE_METHOD = """\
**What the threshold trades** (hybrid, the shipped decision, on questions it was never fitted
on): answered / silent at each threshold, with the 95% interval of each rate; 1 − silent is the
share of unanswerable questions given a confident answer."""


def _trades(curve: dict[str, list[dict[str, Any]]]) -> list[str]:
    splits = [
        s
        for s in ("sealed", "unseen", "natural")
        if s in curve
        and all(p["answered"]["rate"] is not None and p["silent"]["rate"] is not None for p in curve[s])
    ]
    if not splits:
        return []
    names = {"sealed": "sealed", "unseen": "hugo (unseen)", "natural": "natural"}
    head = "| threshold | " + " | ".join(names[s] for s in splits) + " |"
    lines = [head, "| --- " * (len(splits) + 1) + "|"]

    def cell(rate: dict[str, Any]) -> str:
        lo, hi = rate["ci95"]
        return f"{rate['rate']:.2f} ({lo:.2f}–{hi:.2f})"

    for i, point in enumerate(curve[splits[0]]):
        row = [f"{cell(curve[s][i]['answered'])} / {cell(curve[s][i]['silent'])}" for s in splits]
        lines.append(f"| {point['threshold']:.2f} | " + " | ".join(row) + " |")
    return lines


def _evaluated_on(evaluation: dict[str, Any]) -> str:
    m = evaluation.get("machine", {})
    backends = sorted({str(data.get("backend")) for data in evaluation["sets"].values()})
    date, cores = evaluation.get("date", "?"), m.get("cores", "?")
    return f"Measured {date} on {cores} cores, back-end {', '.join(backends)}."


def _curve(name: str, curve: dict[str, dict[str, float]]) -> str:
    lines = [f"| {name}: threshold | answered | silent |", "| --- | --- | --- |"]
    lines += [f"| {t} | {r['answered']:.3f} | {r['silent']:.3f} |" for t, r in curve.items()]
    return "\n".join(lines)


BASELINE_METHOD = """### Beside a plain baseline, every judged vault

`python -m bench.eval --modes hybrid rrf` then `python -m bench.baseline` and
`python -m bench.baseline_parts` (`bench/results/baseline.json`): a right page first and in the first
three, over the answerable questions of each vault's sealed test split, the ranking alone
(threshold 0), Wilson 95% intervals in brackets. `hybrid` is the order mdrag ships, fitted on
these vaults' questions, this one's included (the next table holds each vault out of its own
fit). `rrf`: reciprocal-rank fusion (k=60) of mdrag's
dense ranking, BM25 and a fuzzy title match (frontmatter title, aliases, first `#` heading or file
name); `dense+BM25`: the same fusion without the title list, the harder bar."""


def _baseline_rows(result: dict[str, Any]) -> list[str]:
    """Per vault (test split): shipped hybrid, the RRF baseline, and dense+BM25 fused."""

    def cell(figure: dict[str, Any] | None) -> str:
        if not figure or figure.get("rate") is None:
            return "–"
        low, high = figure["ci95"]
        return f"{figure['rate']:.2f} [{low:.2f}–{high:.2f}]"

    rows = [
        "| vault | questions | hybrid first | hybrid top 3 | rrf first | rrf top 3 "
        "| dense+BM25 first | dense+BM25 top 3 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, data in result["sets"].items():
        test = {mode: data["modes"][mode]["splits"]["test"] for mode in ("hybrid", "rrf")}
        fused = data.get("components", {}).get("both", {}).get("test", {}).get("dense+bm25", {})
        both_first = f"{fused['first']:.2f}" if fused else "–"
        both_3 = f"{fused['in_3']:.2f}" if fused else "–"
        rows.append(
            f"| {name} | {test['hybrid']['right_first']['of']} | {cell(test['hybrid']['right_first'])} | "
            f"{cell(test['hybrid']['right_in_3'])} | {cell(test['rrf']['right_first'])} | "
            f"{cell(test['rrf']['right_in_3'])} | {both_first} | {both_3} |"
        )
    return rows


ORDER_METHOD = """### The order fitted on the vaults, each vault left out

`python -m bench.orderfit` over `python -m bench.fit dump --set VAULT` for each judged vault
(`bench/results/order.json`): the order (which hit comes first) fitted per question on every
answerable question of the other six vaults, never the one it is measured on, and measured on that
vault's sealed test split: a right page first and among the first three pages, Wilson 95%
intervals in brackets. Beside it: the shipped order (fitted on all seven vaults, so this vault's
questions included), the SciFact order it replaced, and the plain baselines of the table above
(RRF of dense, BM25 and a fuzzy title; RRF of dense and BM25). The worst vault is the figure
that counts."""


def _order_rows(result: dict[str, Any]) -> list[str]:
    """Per vault (test split, hybrid): the held-out vault order beside the others; then the summary."""
    mode = result["modes"]["hybrid"]

    def cell(figure: dict[str, Any]) -> str:
        low, high = figure["ci95"]
        return f"{figure['rate']:.2f} [{low:.2f}–{high:.2f}]"

    def plain(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    rows = [
        "| vault left out | questions | first, held out | top 3, held out | first, shipped "
        "| first, SciFact order | RRF first | dense+BM25 first |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, data in mode["vaults"].items():
        test, base = data["test"], data["baselines_test"]
        rows.append(
            f"| {name} | {test['lovo']['right_first']['of']} | {cell(test['lovo']['right_first'])} | "
            f"{cell(test['lovo']['right_in_3'])} | {plain(test['shipped']['right_first']['rate'])} | "
            f"{plain(test['scifact']['right_first']['rate'])} | {plain(base.get('rrf'))} | "
            f"{plain(base.get('dense+bm25'))} |"
        )
    summary = mode["summary"]["test"]
    ndcg = mode["scifact_ndcg@10"]
    rows += [
        "",
        f"Held out: worst vault {summary['lovo']['worst_vault']} {summary['lovo']['worst_first']:.2f} first, "
        f"mean {summary['lovo']['mean_first']:.2f} first and {summary['lovo']['mean_in_3']:.2f} in the first "
        f"three (the SciFact order: worst {summary['scifact']['worst_first']:.2f}, mean "
        f"{summary['scifact']['mean_first']:.2f} and {summary['scifact']['mean_in_3']:.2f}). "
        f"SciFact nDCG@10 of its answerable claims, a diagnostic never fitted on: {plain(ndcg['shipped'])} "
        f"(the SciFact order: {plain(ndcg['scifact_order'])}).",
    ]
    return rows + _form_rows(mode.get("forms", {}))


def _form_rows(forms: dict[str, Any]) -> list[str]:
    """The held-out first hit by kind of query, over every question of each vault left out."""
    if not forms:
        return []
    kinds = ("natural", "keyword", "identifier")

    def cell(figure: dict[str, Any] | None) -> str:
        if figure is None:
            return "–"
        first, in_3 = figure["right_first"], figure["right_in_3"]
        return f"{first['rate']:.2f} / {in_3['rate']:.2f} ({first['of']})"

    rows = [
        "",
        "By kind of query, over every answerable question of the vault left out (train and test: "
        "none is in its own fit), a right page first / in the first three (questions): natural "
        "questions, short keyword queries as typed into a search box, and identifiers (a command, "
        "an API name, a constant). The five older vaults' first questions carry no kind and count "
        "as natural.",
        "",
        "| vault left out | natural | keyword | identifier |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, by_form in forms.items():
        rows.append(f"| {name} | " + " | ".join(cell(by_form.get(kind)) for kind in kinds) + " |")
    return rows


LOVO_METHOD = """### The answer decision, each vault left out

`python -m bench.lovo` over `python -m bench.fit dump --set VAULT` for each judged vault
(`bench/results/lovo.json`): at the default threshold 0.7, on each vault's sealed test split, the
share of answerable questions answered (a right page among the hits kept), of unanswerable ones
left silent, and of unanswerable ones answered with confidence; `shipped` with the constants mdrag
holds (the decision fitted on the train questions of powershell, eips and tldr, over the order
fitted on every vault), `refit` with the same decision fitted on the other vaults' train questions
only, over the order fitted without the vault, and the threshold where that refit would stand
best against the goal of 0.65 answered and 0.80 silent on this vault (chosen on the vault itself,
so an upper bound; every threshold's pair is in the JSON's `curve`). The decision never changes
which page is first."""


def _lovo_rows(result: dict[str, Any]) -> list[str]:
    """Per vault (test split): shipped and refitted decisions at 0.7, and the best curve point."""

    def rate(figure: dict[str, Any]) -> str:
        return "–" if figure.get("rate") is None else f"{figure['rate']:.2f}"

    rows = [
        "| vault left out | answerable / not | shipped answered / silent / confident-unanswerable "
        "| refit answered / silent / confident-unanswerable | refit, its best threshold: answered / silent |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, data in result["vaults"].items():
        shipped, refit = data["test"]["shipped"]["at_0.7"], data["test"]["lovo"]["at_0.7"]
        cells = [
            " / ".join(rate(at[key]) for key in ("answered", "silent", "confident_unanswerable"))
            for at in (shipped, refit)
        ]
        best = data["test"]["lovo"]["best_pair"]
        pair = f"{best['threshold']:.2f}: {best['answered']:.2f} / {best['silent']:.2f}"
        pair += "" if best["meets_goal"] else " (none reaches 0.65 / 0.80)"
        counts = f"{shipped['answered']['of']} / {shipped['silent']['of']}"
        rows.append(f"| {name} | {counts} | {cells[0]} | {cells[1]} | {pair} |")
    return rows


def section(load: Callable[[str], dict[str, Any] | None]) -> list[str]:
    """The retrieval quality section's parts, from the result files `load` finds."""
    parts = ["## Retrieval quality", "", EVAL_METHOD]
    evaluation = load("eval")
    if evaluation is None:
        parts.append("No `bench/results/eval.json` yet: run `make eval`.")
    else:
        from bench.eval import table

        parts += [_evaluated_on(evaluation), "", table(evaluation), "", ANSWERABILITY, ""]
        for name, data in evaluation["sets"].items():
            if "hybrid" in data["modes"]:
                parts += [_curve(name, data["modes"]["hybrid"]["curve"]), ""]
        vault_rows = _vault_rows(evaluation)
        if vault_rows:
            parts += [VAULTS_METHOD, "", *vault_rows, ""]
        vaultfit = load("vaults")
        if vaultfit is not None:
            parts += [VAULTFIT_METHOD, "", _vaultfit(vaultfit), ""]
        fit = load("fit")
        if fit is not None:
            parts += [HELD_OUT, "", _held_out(fit), ""]
    baseline = load("baseline")
    if baseline is not None:
        parts += [BASELINE_METHOD, "", *_baseline_rows(baseline), ""]
    order = load("order")
    if order is not None and "hybrid" in order["modes"]:
        parts += [ORDER_METHOD, "", *_order_rows(order), ""]
    lovo = load("lovo")
    if lovo is not None:
        parts += [LOVO_METHOD, "", *_lovo_rows(lovo), ""]
    return parts

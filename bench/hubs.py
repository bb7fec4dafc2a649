"""Does demoting hub pages, or lifting a note whose title the query names, lift the first hit on
every vault left out? (#57 §2 evidence, offline, over `bench.fit dump` rows.)

    python -m bench.hubs /tmp/lovo/dump-*.jsonl --notes /tmp/evalwt/.eval-work \
        [--out bench/results/hubs.json]

Each DUMP row is one judged question with every candidate section the hybrid search scored and
its features (relevance.FEATURES). Each candidate's note is read from `--notes`
(`NOTES/VAULT-*/notes/<dump path>`) and measured with mdrag's own reading: parse_document for
its frontmatter and body, notes.links.extract_links over the body's markdown-it tokens for the
links it makes (the catalog keeps exactly these per note, so a query-time feature needs no new
index field), its words (Document.word_count), its lines and list-item lines.

A candidate's new order logit is the shipped one (relevance.order_logit, hybrid) minus w * h(note)
for a hub measure h, plus v * t(note, query), the share of the note's title words the query holds
(title: frontmatter `title`, else the first `#` heading, else the file name; each alias too, the
best of them), a lift only among the candidates already found. Notes rank at their best section;
a right note first and in the first three are counted as bench.vaultfit.figures counts them (the
first DEPTH sections in score order, distinct notes). Only answerable questions are ranked.

Leave-one-vault-out: for each vault V, (h, w), (v) and (h, w, v) are chosen on every question of the
six other vaults (train and test), by the mean over those six vaults of a right note first (ties:
the mean in the first three, then the smaller weights), and measured on V's test split beside
shipped, with Wilson 95% intervals. The figure that counts is the worst vault, then the mean; a
way that lifts the mean but lowers any vault is a no.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from bench.answerability import DEPTH
from bench.fit import load
from bench.judged_data import vault_queries
from bench.metrics import wilson
from mdrag.notes.document import parse_document
from mdrag.notes.links import extract_links
from mdrag.retrieval import relevance
from mdrag.retrieval.words import words as mdrag_words

MODE = "hybrid"
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINKISH = re.compile(r"\[\[|\]\(")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# Hub measures of a note (each >= 0, rising with "hub-ness").
HUBS: dict[str, Callable[[dict[str, float]], float]] = {
    "log_links": lambda n: math.log1p(n["links"]),
    "links_per_100w": lambda n: min(n["links"] / max(n["words"], 1) * 100.0, 30.0) / 10.0,
    "list_link_share": lambda n: n["list_link_lines"] / max(n["lines"], 1),
    "log_list_links": lambda n: math.log1p(n["list_link_lines"]),
    "log_words": lambda n: math.log1p(n["words"]) / 5.0,
    "hub_and": lambda n: math.log1p(n["links"]) * (n["list_link_lines"] / max(n["lines"], 1)),
}
HUB_W = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
TITLE_V = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def title_words(text: str) -> frozenset[str]:
    """A title's words as the query's are read (stop words out, plural -s off), camelCase and
    hyphens split too: `addRibbonIcon` is add, ribbon, icon; the whole one is kept beside them."""
    found = set(mdrag_words(text)) | set(mdrag_words(_CAMEL.sub(" ", text).replace("_", " ")))
    return frozenset(_stem(w) for w in found)


def note_facts(path: Path, md: MarkdownIt) -> dict[str, Any]:
    data = path.read_bytes()
    doc = parse_document(path, data)
    tokens = md.parse(doc.body)
    first_line = doc.text.count("\n", 0, doc.body_offset) + 1
    links = extract_links(tokens, first_line)
    h1 = ""
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h1" and tok.level == 0 and i + 1 < len(tokens):
            h1 = " ".join(tokens[i + 1].content.split())
            break
    title = doc.fm_text("title") or h1 or path.stem
    lines = [line for line in doc.body.splitlines() if line.strip()]
    items = [line for line in lines if _LIST_ITEM.match(line)]
    return {
        "links": len(links),
        "words": doc.word_count,
        "lines": len(lines),
        "list_lines": len(items),
        "list_link_lines": sum(bool(_LINKISH.search(line)) for line in items),
        "title": title,
        "aliases": doc.fm_list("aliases")[:20],
    }


def notes_root(base: Path, vault: str) -> Path:
    found = sorted(base.glob(f"{vault}-*/notes"))
    if len(found) != 1:
        raise SystemExit(f"{vault}: {len(found)} notes folders under {base}")
    return found[0]


def title_share(facts: dict[str, Any], query_words: frozenset[str]) -> float:
    best = 0.0
    for name in [facts["title"], *facts["aliases"]]:
        tw = title_words(name)
        if tw:
            best = max(best, len(tw & query_words) / len(tw))
    return best


def prepare(rows: list[dict[str, Any]], base: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Answerable rows, each candidate with (note, label, shipped logit, hub facts, title share)."""
    md = MarkdownIt("commonmark").enable("table")
    facts: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    queries: dict[str, dict[str, dict[str, Any]]] = {}
    out = []
    for row in rows:
        if row["mode"] != MODE or row["version"] != "answerable" or not row["cands"]:
            continue
        vault = row["set"]
        if vault not in queries:
            queries[vault] = vault_queries(vault)
        root = notes_root(base, vault)
        text = queries[vault][row["q"]]["text"]
        qwords = title_words(text)
        cands = []
        for doc, label, values in row["cands"]:
            key = f"{vault}\t{doc}"
            if key not in facts:
                path = root / doc
                if path.is_file():
                    facts[key] = note_facts(path, md)
                else:
                    missing.append(key)
                    facts[key] = {
                        "links": 0,
                        "words": 0,
                        "lines": 0,
                        "list_lines": 0,
                        "list_link_lines": 0,
                        "title": Path(doc).stem,
                        "aliases": [],
                    }
            f = facts[key]
            cands.append(
                {
                    "doc": doc,
                    "label": label,
                    "z": relevance.order_logit(values, MODE),
                    "hub": {name: h(f) for name, h in HUBS.items()},
                    "title": title_share(f, qwords),
                }
            )
        out.append({"q": row["q"], "set": vault, "split": row["split"], "text": text, "cands": cands})
    return out, {
        "notes_read": len(facts) - len(missing),
        "missing": missing[:20],
        "missing_count": len(missing),
        "facts": facts,
    }


def ranked(row: dict[str, Any], hub: str | None, w: float, v: float) -> list[tuple[str, int]]:
    """Distinct notes, best first, among the first DEPTH sections by the new logit."""
    scored = sorted(
        row["cands"],
        key=lambda c: -(c["z"] - (w * c["hub"][hub] if hub else 0.0) + v * c["title"]),
    )[:DEPTH]
    notes: list[tuple[str, int]] = []
    for c in scored:
        if all(c["doc"] != d for d, _ in notes):
            notes.append((c["doc"], c["label"]))
    return notes


def rates(rows: Sequence[dict[str, Any]], way: tuple[str | None, float, float]) -> dict[str, Any]:
    first = top3 = 0
    for row in rows:
        notes = ranked(row, *way)
        first += bool(notes) and bool(notes[0][1])
        top3 += any(label for _, label in notes[:3])
    n = len(rows)
    return {
        "first": round(first / n, 4) if n else None,
        "first_ci95": wilson(first, n),
        "top3": round(top3 / n, 4) if n else None,
        "top3_ci95": wilson(top3, n),
        "n": n,
        "k_first": first,
        "k_top3": top3,
    }


def grids(hub_w: Sequence[float] = HUB_W) -> dict[str, list[tuple[str | None, float, float]]]:
    Way = tuple[str | None, float, float]
    hub: list[Way] = [(h, w, 0.0) for h in HUBS for w in hub_w if w > 0]
    title: list[Way] = [(None, 0.0, v) for v in TITLE_V if v > 0]
    both: list[Way] = [(h, w, v) for h in HUBS for w in hub_w if w > 0 for v in TITLE_V if v > 0]
    shipped: list[Way] = [(None, 0.0, 0.0)]
    return {"hub": shipped + hub, "title": shipped + title, "both": shipped + hub + title + both}


def choose(
    rows_by_vault: dict[str, list[dict[str, Any]]], grid: list[tuple[str | None, float, float]]
) -> tuple[Any, dict[str, Any]]:
    def key(way: tuple[str | None, float, float]) -> tuple[float, ...]:
        per = [_cached(v, rows, way) for v, rows in rows_by_vault.items()]
        mean_first = sum(p["first"] for p in per) / len(per)
        mean_top3 = sum(p["top3"] for p in per) / len(per)
        return (round(mean_first, 6), round(mean_top3, 6), -way[1], -way[2])

    scored = {way: key(way) for way in grid}
    best = max(grid, key=lambda way: scored[way])
    return best, {"train_mean_first": scored[best][0], "train_mean_top3": scored[best][1]}


_CACHE: dict[tuple[str, Any], dict[str, Any]] = {}


def _cached(
    vault: str, rows: Sequence[dict[str, Any]], way: tuple[str | None, float, float]
) -> dict[str, Any]:
    if (vault, way) not in _CACHE:
        _CACHE[vault, way] = rates(rows, way)
    return _CACHE[vault, way]


def way_name(way: tuple[str | None, float, float]) -> dict[str, Any]:
    return {"hub": way[0], "w": way[1], "v": way[2]}


def changes(
    rows: Sequence[dict[str, Any]], way: tuple[str | None, float, float], limit: int = 8
) -> dict[str, Any]:
    fixed: list[dict[str, Any]] = []
    broken: list[dict[str, Any]] = []
    for row in rows:
        a, b = ranked(row, None, 0.0, 0.0), ranked(row, *way)
        was, now = bool(a and a[0][1]), bool(b and b[0][1])
        if was == now:
            continue
        item = {
            "q": row["q"],
            "text": row["text"],
            "shipped_first": a[0][0] if a else None,
            "new_first": b[0][0] if b else None,
        }
        (fixed if now else broken).append(item)
    return {
        "fixed": len(fixed),
        "broken": len(broken),
        "fixed_examples": fixed[:limit],
        "broken_examples": broken[:limit],
    }


def run(rows: list[dict[str, Any]], base: Path, hub_w: Sequence[float] = HUB_W) -> dict[str, Any]:
    prepared, read = prepare(rows, base)
    vaults = sorted({r["set"] for r in prepared})
    by_vault = {v: [r for r in prepared if r["set"] == v] for v in vaults}
    result: dict[str, Any] = {
        "notes_read": read["notes_read"],
        "notes_missing": read["missing_count"],
        "missing_examples": read["missing"],
        "hubs": dict.fromkeys(HUBS, "see HUBS in bench/hubs.py"),
        "hub_w_grid": list(hub_w),
        "title_v_grid": TITLE_V,
        "vaults": {},
    }
    # In-vault (not held out) figures of each single-weight way on every vault's answerable questions,
    # all splits: what each way does where, never used to choose.
    result["grid_all_questions"] = {
        f"{h or 'title'}|{w}|{v}": {vault: rates(by_vault[vault], (h, w, v))["first"] for vault in vaults}
        for h, w, v in grids()["hub"] + grids()["title"][1:]
    }
    for vault in vaults:
        others = {v: by_vault[v] for v in vaults if v != vault}
        test = [r for r in by_vault[vault] if r["split"] == "test"]
        entry: dict[str, Any] = {"test_answerable": len(test), "shipped": rates(test, (None, 0.0, 0.0))}
        for kind, grid in grids(hub_w).items():
            way, fit = choose(others, grid)
            entry[kind] = {**way_name(way), **fit, **rates(test, way), "changes": changes(test, way)}
        result["vaults"][vault] = entry
    summary = {}
    for kind in ("shipped", "hub", "title", "both"):
        firsts = {v: e[kind]["first"] for v, e in result["vaults"].items()}
        top3s = {v: e[kind]["top3"] for v, e in result["vaults"].items()}
        worst = min(firsts, key=lambda v: firsts[v])
        summary[kind] = {
            "worst_vault": worst,
            "worst_first": firsts[worst],
            "mean_first": round(sum(firsts.values()) / len(firsts), 4),
            "worst_top3": min(top3s.values()),
            "mean_top3": round(sum(top3s.values()) / len(top3s), 4),
        }
        if kind != "shipped":
            deltas = {v: round(firsts[v] - result["vaults"][v]["shipped"]["first"], 4) for v in firsts}
            summary[kind]["first_delta"] = deltas
            summary[kind]["lowers_a_vault"] = any(d < 0 for d in deltas.values())
    result["summary"] = summary
    return result


def table(result: dict[str, Any]) -> str:
    def c(r: dict[str, Any]) -> str:
        return f"{r['first']:.2f} [{r['first_ci95'][0]:.2f}-{r['first_ci95'][1]:.2f}] / {r['top3']:.2f}"

    def w(r: dict[str, Any]) -> str:
        return f"{r['hub'] or '-'} w={r['w']} v={r['v']}"

    lines = [
        "vault left out (test, n) | shipped first [95%] / top3 | hub | title | both",
        "--- | --- | --- | --- | ---",
    ]
    for vault, e in result["vaults"].items():
        lines.append(
            f"{vault} ({e['test_answerable']}) | {c(e['shipped'])} | {c(e['hub'])} ({w(e['hub'])}) | "
            f"{c(e['title'])} ({w(e['title'])}) | {c(e['both'])} ({w(e['both'])})"
        )
    for kind, s in result["summary"].items():
        lines.append(f"{kind}: {s}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--notes", type=Path, required=True, help="the folder holding VAULT-*/notes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [row for path in args.dumps for row in load(path)]
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "mode": MODE,
        "dumps": [p.name for p in args.dumps],
        **run(rows, args.notes),
    }
    print(table(result))
    # The same with the hub weight's grid stopped at 2.0: does the choice hold when the grid is narrower?
    narrow = run(rows, args.notes, tuple(w for w in HUB_W if w <= 2.0))
    result["hub_w_up_to_2"] = {"summary": narrow["summary"], "vaults": narrow["vaults"]}
    print("\nhub weight grid up to 2.0:\n" + table(narrow))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

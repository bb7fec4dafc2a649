"""Keyword engines compared: the store's keyword search against SQLite FTS5 and tantivy, same rows.

    python -m bench.keyword_engines [--sets scifact natural ...] [--scale 5] [--lite-work DIR]

The question behind it (issue #35): keyword search from an index beside the Milvus files would
take the BM25 function, sparse vectors and inverted index out of the Lite servers (~1-1.7 KB a
row, two to three times a restart's load), but only if it finds the same notes, as fast. For each
judged set's cached eval index (`make eval` builds them; a set without one is skipped, never
built here), every vector row's `embedded_text` goes into each engine: FTS5 (tokenizer `porter
unicode61`) and tantivy (`en_stem`: lowercase, English stems). Each question's keyword query
(query.keyword_query, what the daemon asks) goes to every engine, 100 rows each. Per set and
engine: nDCG@10 and recall@30 of the judged notes over its note ranking (a note ranked by its
best row), over the questions with a judged note; how many of the store's first 30 notes it also
has in its first 30; its median query time in this process. The "milvus" engine is the store's
keyword search: Milvus Lite's BM25 in the results kept (schema 5, when the choice was made),
mdrag's own tantivy index since schema 6.

With --lite-work DIR (a `bench.scale` work dir, e.g. grown to 5x) every engine is timed on the
same rows: Milvus Lite's BM25 on that index, loaded, and FTS5 and tantivy over its rows' text,
asked bench.scale's realistic queries and the judged PowerShell questions at the daemon's 30-row
limit. With --scale N, FTS5 and tantivy are also timed over N copies of every set's rows (each
copy its own rows), asked every set's questions. Writes bench/results/keyword_engines.json.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import tantivy

from bench import corpora, harness, query
from bench import eval as evaluation
from bench.judged_data import doc_ids, judged_set
from bench.metrics import ndcg_at_k, recall_at_k
from mdrag.retrieval.query import keyword_query
from mdrag.retrieval.words import TERM

LIMIT = 100  # rows each engine is asked for when rankings are compared (deeper than the daemon)
DAEMON_LIMIT = 30  # what the daemon asks for a default search (top 10 × CANDIDATE_FACTOR + 10)
DEPTH = 30  # the candidate pool the score reranks: what must not change
SETS = ("scifact", "natural", "powershell", "eips", "otel", "tldr", "hugo")
Row = tuple[str, str]  # (file path, embedded text)


class Engine(Protocol):
    name: str

    def search(self, text: str, limit: int) -> list[str]: ...


class Fts5:
    """SQLite FTS5: each term of the keyword query a quoted string (a phrase of its tokens, so
    Get-ChildItem stays together), any of them, ranked by FTS5's bm25()."""

    name = "fts5"

    def __init__(self, rows: list[Row], copies: int, folder: Path) -> None:
        self.db = sqlite3.connect(folder / "fts.sqlite")
        self.db.execute(
            "CREATE VIRTUAL TABLE rows USING fts5(text, path UNINDEXED, tokenize='porter unicode61')"
        )
        for copy in range(copies):
            prefix = f"copy-{copy}/" if copy else ""
            self.db.executemany(
                "INSERT INTO rows(text, path) VALUES (?, ?)", ((t, prefix + p) for p, t in rows)
            )
        self.db.execute("INSERT INTO rows(rows) VALUES ('optimize')")
        self.db.commit()

    def search(self, text: str, limit: int) -> list[str]:
        terms = TERM.findall(keyword_query(text))
        query = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) or '""'
        sql = "SELECT path FROM rows WHERE rows MATCH ? ORDER BY rank LIMIT ?"
        return [p for (p,) in self.db.execute(sql, (query, limit))]


class Tantivy:
    """tantivy (Rust, BM25 with block-max WAND): a term of several tokens is a phrase, any term
    may match (the query parser's default)."""

    name = "tantivy"

    def __init__(self, rows: list[Row], copies: int, folder: Path) -> None:
        schema = tantivy.SchemaBuilder()
        schema.add_text_field("text", stored=False, tokenizer_name="en_stem")
        schema.add_text_field("path", stored=True, tokenizer_name="raw", index_option="basic")
        self.index = tantivy.Index(schema.build(), path=str(folder))
        writer = self.index.writer(heap_size=200_000_000, num_threads=1)
        for copy in range(copies):
            prefix = f"copy-{copy}/" if copy else ""
            for path, text in rows:
                writer.add_document(tantivy.Document(text=text, path=prefix + path))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, text: str, limit: int) -> list[str]:
        parts: list[str] = []
        for term in TERM.findall(keyword_query(text)):
            # Lowercase (the en_stem tokenizer lowercases anyway): AND, OR and NOT stay words, not
            # the query parser's operators (a question of filler only is asked as typed). Each
            # token after the split: lowering İ first would add a mark the split cuts at.
            tokens = [token.lower() for token in re.findall(r"[^\W_]+", term)]
            parts += tokens if len(tokens) == 1 else ['"' + " ".join(tokens) + '"'] if tokens else []
        query = self.index.parse_query(" ".join(parts) or '""', ["text"])
        hits = self.searcher.search(query, limit).hits
        return [self.searcher.doc(address)["path"][0] for _, address in hits]


ENGINES = (Fts5, Tantivy)


def built(
    engine: type[Fts5] | type[Tantivy], rows: list[Row], copies: int, folder: Path
) -> tuple[Engine, dict[str, Any]]:
    """The engine over the rows, with its build time and size on disk."""
    folder.mkdir()
    started = time.perf_counter()
    made = engine(rows, copies, folder)
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return made, {"build_s": round(seconds, 2), "mb": round(size / 2**20, 1)}


def notes_of(paths: list[str], ids: dict[str, str]) -> list[str]:
    """Distinct notes in rank order (a note's best row places it)."""
    seen: dict[str, None] = {}
    for path in paths:
        doc = ids.get(path)
        if doc is not None:
            seen.setdefault(doc)
    return list(seen)


def texts_of(store: Any) -> list[Row]:
    """Every vector row's note and text, as the keyword index keeps them (Milvus keeps no text)."""
    return [(row["display"]["file_path"], row["embedded_text"]) for row in store.keywords.every_row()]


def timed(search: Any, text: str, limit: int) -> tuple[list[str], float]:
    started = time.perf_counter()
    found = search(text, limit)
    return found, (time.perf_counter() - started) * 1000


def spread(ms: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 2),
        "max_ms": round(max(ms), 2),
    }


def compare(name: str) -> tuple[dict[str, Any], list[Row], list[str]] | None:
    judged = judged_set(name)
    config = evaluation.config_for(None)
    if not (corpora.work_dir(judged.corpus, config) / corpora.READY).exists():
        print(f"{name}: no cached eval index (make eval builds it); skipped", file=sys.stderr)
        return None
    service, root, _ = evaluation.open_set(judged, config)
    result: dict[str, Any] = {}
    try:
        store = service.store
        rows = texts_of(store)
        ids = doc_ids(root)
        questions = [q for q in judged.queries if judged.qrels.get(q)]

        def milvus(text: str, limit: int) -> list[str]:
            return [hit.file_path for hit in store.keyword_hits(keyword_query(text), limit)]

        with tempfile.TemporaryDirectory() as tmp:
            engines: dict[str, Any] = {"milvus": milvus}
            for kind in ENGINES:
                made, result[f"{kind.name}_index"] = built(kind, rows, 1, Path(tmp) / kind.name)
                engines[kind.name] = made.search
            per: dict[str, dict[str, list[float]]] = {
                e: {"ndcg": [], "recall": [], "shared": [], "ms": []} for e in engines
            }
            for qid in questions:
                text, relevant = judged.queries[qid], judged.qrels[qid]
                rankings = {}
                for engine, search in engines.items():
                    paths, ms = timed(search, text, LIMIT)
                    per[engine]["ms"].append(ms)
                    rankings[engine] = notes_of(paths, ids)
                top = set(rankings["milvus"][:DEPTH])
                for engine, ranked in rankings.items():
                    per[engine]["ndcg"].append(ndcg_at_k(ranked, relevant, 10))
                    per[engine]["recall"].append(recall_at_k(ranked, relevant, DEPTH))
                    per[engine]["shared"].append(len(top & set(ranked[:DEPTH])) / len(top) if top else 1.0)
    finally:
        service.close()
    result.update(rows=len(rows), questions=len(questions))
    for engine, figures in per.items():
        result[engine] = {
            "ndcg@10": round(statistics.fmean(figures["ndcg"]), 4),
            f"recall@{DEPTH}": round(statistics.fmean(figures["recall"]), 4),
            f"shared_of_milvus_top{DEPTH}": round(statistics.fmean(figures["shared"]), 4),
            "median_ms": round(statistics.median(figures["ms"]), 2),
        }
    print(f"{name}: {result}", file=sys.stderr, flush=True)
    return result, rows, [judged.queries[q] for q in questions]


def at_scale(rows: list[Row], questions: list[str], copies: int) -> dict[str, Any]:
    """Each engine's query time over `copies` copies of the rows, at the daemon's limit."""
    result: dict[str, Any] = {"copies": copies, "rows": len(rows) * copies, "questions": len(questions)}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ENGINES:
            made, facts = built(kind, rows, copies, Path(tmp) / kind.name)
            for text in questions[:10]:  # warm the page cache, as a daemon's would be
                made.search(text, DAEMON_LIMIT)
            ms = [timed(made.search, text, DAEMON_LIMIT)[1] for text in questions]
            result[kind.name] = {**facts, **spread(ms)}
            print(
                f"{kind.name} at {len(rows) * copies} rows: {result[kind.name]}",
                file=sys.stderr,
                flush=True,
            )
    return result


def on_work_index(work_dir: Path) -> dict[str, Any]:
    """Every engine on the same rows: a bench.scale work dir's index (Milvus Lite's BM25 on it,
    loaded; FTS5 and tantivy over its rows' text), asked bench.scale's realistic queries and the
    judged PowerShell questions (the work dir holds the PowerShell docs), at the daemon's limit."""
    from mdrag.config import Config
    from mdrag.service import Service

    work = harness.Work(work_dir.resolve())
    questions = query.realistic_queries(work.notes, 100)
    powershell = judged_set("powershell")
    questions += list(powershell.queries.values())
    config = Config().with_overrides(roots=(str(work.notes),), milvus_uri=str(work.db))
    service = Service.open(config)
    result: dict[str, Any] = {"work": str(work_dir), "questions": len(questions)}
    try:
        store = service.store
        store.load_vectors()
        rows = texts_of(store)
        result["rows"] = len(rows)

        def milvus(text: str, limit: int) -> list[str]:
            return [hit.file_path for hit in store.keyword_hits(keyword_query(text), limit)]

        searches: dict[str, Any] = {"milvus": milvus}
        with tempfile.TemporaryDirectory() as tmp:
            for kind in ENGINES:
                made, result[f"{kind.name}_index"] = built(kind, rows, 1, Path(tmp) / kind.name)
                searches[kind.name] = made.search
            for engine, search in searches.items():
                for text in questions[:10]:  # warm caches, as a daemon's would be
                    search(text, DAEMON_LIMIT)
                result[engine] = spread([timed(search, text, DAEMON_LIMIT)[1] for text in questions])
    finally:
        service.close()
    print(f"on {work_dir}: {result}", file=sys.stderr, flush=True)
    return result


def table(result: dict[str, Any]) -> str:
    """Per set, each engine's nDCG@10, recall@30 and share of Milvus's top 30; then the query
    times at scale (for docs/benchmarks.md)."""
    engines = ("milvus", "fts5", "tantivy")
    lines = [
        "| set | rows | "
        + " | ".join(f"{e} nDCG@10 / recall@30" for e in engines)
        + " | shared top 30 (fts5 / tantivy) |",
        "| --- | ---: | " + " | ".join("---:" for _ in engines) + " | ---: |",
    ]
    for name, found in result["sets"].items():
        cells = [f"{found[e]['ndcg@10']:.3f} / {found[e][f'recall@{DEPTH}']:.3f}" for e in engines]
        shared = " / ".join(f"{found[e][f'shared_of_milvus_top{DEPTH}']:.2f}" for e in engines[1:])
        lines.append(f"| {name} | {found['rows']:,} | " + " | ".join(cells) + f" | {shared} |")
    scale, work = result.get("scale"), result.get("on_work_index")
    timing = [
        "| engine | rows | p50 | p95 | max | index on disk | build |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    if work:
        lines += [
            "",
            f"Every engine on the same {work['rows']:,} rows, a `bench.scale` 5x index (the PowerShell "
            f"docs and four copies), asked {work['questions']} queries (bench.scale's realistic ones and "
            f"the judged PowerShell questions) at the daemon's {DAEMON_LIMIT}-row limit, ms in this process "
            "(Milvus returns each row's embedding and display fields too; it holds the rows in two shards):",
            "",
            *timing,
        ]
        for engine in engines:
            facts = work.get(f"{engine}_index", {})
            size = f"{facts['mb']} MB" if facts else "(the Lite index)"
            build = f"{facts['build_s']} s" if facts else ""
            lines.append(
                f"| {engine} | {work['rows']:,} | {work[engine]['p50_ms']} | {work[engine]['p95_ms']} | "
                f"{work[engine]['max_ms']} | {size} | {build} |"
            )
    if scale:
        lines += [
            "",
            f"FTS5 and tantivy over {scale['copies']} copies of all seven sets' rows ({scale['rows']:,}), "
            f"each of their {scale['questions']} questions at the {DAEMON_LIMIT}-row limit:",
            "",
            *timing,
        ]
        for engine in engines[1:]:
            e = scale[engine]
            lines.append(
                f"| {engine} | {scale['rows']:,} | {e['p50_ms']} | {e['p95_ms']} | {e['max_ms']} | "
                f"{e['mb']} MB | {e['build_s']} s |"
            )
    return "\n".join(lines)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    cli.add_argument(
        "--scale", type=int, default=0, help="also time each engine over N copies of every set's rows"
    )
    cli.add_argument(
        "--lite-work", type=Path, help="also time Milvus Lite's BM25 on this bench.scale work dir"
    )
    args = cli.parse_args()
    result: dict[str, Any] = {
        "sets": {},
        "sqlite": sqlite3.sqlite_version,
        "tantivy": metadata.version("tantivy"),
    }
    every_row: list[Row] = []
    every_question: list[str] = []
    for name in args.sets:
        found = compare(name)
        if found is not None:
            result["sets"][name], rows, questions = found
            every_row += rows
            every_question += questions
    if args.scale and every_row:
        result["scale"] = at_scale(every_row, every_question, args.scale)
    if args.lite_work:
        result["on_work_index"] = on_work_index(args.lite_work)
    print(f"written to {harness.save('keyword_engines', result)}")


if __name__ == "__main__":
    main()

"""Stored rows: what keeping what a hit shows in the keyword index, rather than in Milvus, costs.

    python -m bench.stored_rows --source DB [--rows 175000]

The one large step left towards #35's memory target is to take `display` and the embedded text
out of the Milvus Lite rows (bench.lite_fields: 1.44 of a row's 4.29 KB). The keyword index
would keep them instead, as stored fields of the document it holds for each row, and a search
would read its hits' rows from there by id. The pending index (mdrag.milvus.pending) already
keeps whole rows so; this builds one from the first --rows real rows of an mdrag index's `document_vectors`
(less the vector) and measures:

- the build: seconds, and MB on disk against the same index without the stored rows;
- the memory of this process once the index is open and read: anonymous (what the process
  holds) and file-backed (pages of the index the kernel keeps cached and may drop);
- reading the rows of N hits by id (one term-set query, then each stored document's JSON), for the
  N a search reads (30) and a large one (100), at p50 and p95 over ROUNDS random picks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import tantivy

from bench import harness
from bench.lite_fields import source_rows
from mdrag.milvus import lite
from mdrag.milvus.keywords import KeywordIndex
from mdrag.milvus.pending import _RowsIndex

ROUNDS = 200
BATCH = 5_000
SIZES = (30, 100)


def build(kind: type[KeywordIndex], rows: list[dict[str, Any]], path: Path) -> tuple[KeywordIndex, float]:
    started = time.perf_counter()
    index = kind(path)
    for start in range(0, len(rows), BATCH):
        index.write(rows[start : start + BATCH])
    return index, round(time.perf_counter() - started, 1)


def disk_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1)


def read_rows(index: Any, ids: list[str]) -> list[dict[str, Any]]:
    """The stored rows of these ids, as a search would read its hits'."""
    searcher = index._index.searcher()
    query = tantivy.Query.term_set_query(index._index.schema, "id", ids)
    hits = searcher.search(query, len(ids)).hits
    return [json.loads(bytes(searcher.doc(address)["row"][0])) for _, address in hits]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, required=True, help="a shard database of an mdrag index")
    parser.add_argument("--rows", type=int, default=175_000)
    args = parser.parse_args()
    lite.server_class()  # mdrag's servers (their homes, logs and allocator settings)
    rows = [{k: v for k, v in row.items() if k != "embedding"} for row in source_rows(args.source)]
    rows = rows[: args.rows]
    print(f"{len(rows)} rows from {args.source}", flush=True)
    result: dict[str, Any] = {"source": str(args.source), "rows": len(rows)}
    with tempfile.TemporaryDirectory(prefix="mdrag-stored-rows-") as folder:
        plain, plain_s = build(KeywordIndex, rows, Path(folder) / "plain")
        result["without_rows"] = {"build_s": plain_s, "disk_mb": disk_mb(plain.path)}
        del plain
        before = harness.rss_mb(os.getpid(), ("RssAnon", "RssFile"))
        stored, stored_s = build(_RowsIndex, rows, Path(folder) / "stored")
        result["with_rows"] = {"build_s": stored_s, "disk_mb": disk_mb(stored.path)}
        ids = [row["id"] for row in rows]
        picker = random.Random(7)
        for size in SIZES:
            times = []
            for _ in range(ROUNDS):
                wanted = picker.sample(ids, size)
                started = time.perf_counter()
                found = read_rows(stored, wanted)
                times.append((time.perf_counter() - started) * 1000)
                assert len(found) == size, (len(found), size)
            times.sort()
            result["with_rows"][f"read_{size}_ms"] = {
                "p50": round(statistics.median(times), 2),
                "p95": round(times[int(0.95 * len(times))], 2),
            }
        after = harness.rss_mb(os.getpid(), ("RssAnon", "RssFile"))
        result["with_rows"]["process_mb_added"] = {key: round(after[key] - before[key], 1) for key in after}
    print(result, flush=True)
    print(f"written to {harness.save('stored_rows', result)}")


if __name__ == "__main__":
    main()

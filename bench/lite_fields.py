"""Lite fields: what each part of a vectors row costs a Milvus Lite server, in memory and in load
time, measured on real rows.

    python -m bench.lite_fields --source DB [--rows 100000] [--layouts as_shipped,vectors_only]

Reads the rows of an existing mdrag index's `document_vectors`, repeats them under new ids up to
--rows, and writes them into fresh Milvus Lite databases, one per layout:

- `as_shipped`: the collection as mdrag creates it (mdrag.milvus.schema: every column, the
  `display` JSON, the embedded text, the INVERTED indexes on `doc_id` and `section_id`);
- `no_inverted`: the same columns without the two INVERTED indexes;
- `no_text_display`: without the `display` JSON and the embedded text (what moving what a hit
  shows out of the engine would leave);
- `vectors_only`: the id, the note's id and the vector (the least a vectors collection holds);
- `one_json`: the id, the note's id and the vector, every other column in one JSON field (what
  a row's columns cost apart from the bytes they hold).

The server that wrote the rows is measured once it has settled (what a daemon holds after a
large first index or a burst of edits, until it reopens the index), then stopped; the database
is then opened by a fresh server REPEAT times (each stopped before the next starts: a client's
close alone leaves its server running), the collection loaded and timed, searched, and the
server's resident memory read once it has settled: the memory a daemon pays for the rows after
a restart, and the load a restart (or a reopen) waits for. One layout at a time, so each server
has the machine to itself; run it on a quiet machine. The servers are mdrag's own, so they run
with its allocator settings (mdrag.milvus.lite.allocator_settings): to measure without them,
set MALLOC_CONF=background_thread:false (a MALLOC_CONF of the user's own is left as it is).
Figures: docs/design.md, "Large vaults" and "Engine". A run of every layout writes
bench/results/lite_fields.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from pymilvus import CollectionSchema, DataType, MilvusClient

from bench import harness
from bench.lite_memory import _server_mb
from mdrag.milvus import lite
from mdrag.milvus import schema as mdrag_schema

VECTORS = "document_vectors"
LAYOUTS = ("as_shipped", "no_inverted", "no_text_display", "vectors_only", "one_json")
SETTLE_S = 10.0  # the server frees what loading took only after a while
SEARCHES = 20
REPEAT = 3  # fresh servers per layout: their spread is the figure's noise
BATCH = 500
ONE_JSON_KEPT = ("id", "doc_id", "embedding")  # one_json's columns beside its JSON field
FIELDS = [
    "id",
    "section_id",
    "doc_id",
    "file_path",
    "file_hash",
    "window_index",
    "tags",
    "display",
    "embedded_text",
    "embedding",
]


def source_rows(db: Path) -> list[dict[str, Any]]:
    client = MilvusClient(str(db))
    try:
        rows: list[dict[str, Any]] = []
        iterator = client.query_iterator(VECTORS, batch_size=1000, filter="", output_fields=FIELDS)
        while batch := iterator.next():
            rows.extend(dict(r) for r in batch)
        iterator.close()
        return rows
    finally:
        client.close()
        _stop(db)  # its memory and cores are the measured servers' from here


def create(client: MilvusClient, layout: str, dimension: int) -> None:
    """The vectors collection of `layout` (see the module's docstring): mdrag's own, or its fields
    less those the layout leaves out, without the INVERTED indexes."""
    if layout == "as_shipped":
        mdrag_schema._create_vectors(client, "lite_fields", dimension)
        return
    full = mdrag_schema.vectors_schema("lite_fields", dimension)
    if layout == "one_json":
        s = CollectionSchema([field for field in full.fields if field.name in ONE_JSON_KEPT])
        s.add_field("rest", DataType.JSON)
    else:
        kept = fields_of(layout)
        s = CollectionSchema(
            [field for field in full.fields if field.name in kept], enable_dynamic_field=False
        )
    index = mdrag_schema._dense_index(client)
    client.create_collection(VECTORS, schema=s, index_params=index, consistency_level="Strong")


def fields_of(layout: str) -> set[str]:
    if layout == "vectors_only":
        return {"id", "doc_id", "embedding"}
    if layout == "no_text_display":
        return set(FIELDS) - {"display", "embedded_text"}
    return set(FIELDS)


def one(layout: str, rows: list[dict[str, Any]], count: int, folder: Path) -> dict[str, Any]:
    db = folder / f"{layout}.db"
    client = MilvusClient(str(db))
    create(client, layout, len(rows[0]["embedding"]))
    client.load_collection(VECTORS)  # mdrag's own schema leaves it released after its indexes
    empty_mb = _server_mb(db)
    batch: list[dict[str, Any]] = []
    fields = fields_of(layout)
    for i in range(count):
        row = as_layout(layout, rows[i % len(rows)], fields)
        row["id"] = f"{i:064x}"
        batch.append(row)
        if len(batch) == BATCH:
            client.insert(VECTORS, batch)
            batch = []
    if batch:
        client.insert(VECTORS, batch)
    time.sleep(SETTLE_S)
    written_mb = _server_mb(db)  # what a server holds idle after taking the rows in as writes
    client.close()
    _stop(db)
    loads = [_reopened(db, rows[0]["embedding"]) for _ in range(REPEAT)]
    disk = sum(p.stat().st_size for p in folder.glob(f"{layout}.db*") if p.is_file())
    return {
        "rows": count,
        "load_s": [load for load, _, _ in loads],
        "server_loaded_mb": [mb for _, mb, _ in loads],
        "server_pids": [pid for _, _, pid in loads],
        "server_empty_mb": empty_mb,
        "server_written_mb": written_mb,
        "kb_per_row": [round((mb - empty_mb) * 1024 / count, 2) for _, mb, _ in loads],
        "disk_mb": round(disk / 2**20, 1),
    }


def as_layout(layout: str, source: dict[str, Any], fields: set[str]) -> dict[str, Any]:
    """A source row as `layout` holds it: its `fields`, or for one_json the kept columns and the
    rest in one JSON value."""
    if layout == "one_json":
        row = {key: source[key] for key in ONE_JSON_KEPT}
        row["rest"] = {key: value for key, value in source.items() if key not in ONE_JSON_KEPT}
        return row
    return {key: value for key, value in source.items() if key in fields}


def _reopened(db: Path, vector: list[float]) -> tuple[float, float, int | None]:
    """A fresh server on `db`: seconds to load the collection, its resident MB once it has
    loaded, answered SEARCHES searches and settled, and its pid (each start's own)."""
    time.sleep(1)
    client = MilvusClient(str(db))
    try:
        client.release_collection(VECTORS)
        started = time.perf_counter()
        client.load_collection(VECTORS)
        load_s = round(time.perf_counter() - started, 1)
        for _ in range(SEARCHES):
            client.search(VECTORS, data=[vector], anns_field="embedding", limit=30)
        time.sleep(SETTLE_S)
        return load_s, _server_mb(db), _server_pid(db)
    finally:
        client.close()
        _stop(db)


def _stop(db: Path) -> None:
    """Stop the server of `db`, whose next open then starts a fresh one (a client's close leaves
    it running, and the next client of the same database is served by it again)."""
    pid = _server_pid(db)
    lite.release([db])
    if pid is not None and Path(f"/proc/{pid}").exists():
        raise RuntimeError(f"the Lite server of {db} (pid {pid}) still runs")


def _server_pid(db: Path) -> int | None:
    server = lite.running_server(db)
    return None if server is None or server._p is None else int(server._p.pid)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, required=True, help="a shard database of an mdrag index")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated: " + ", ".join(LAYOUTS))
    args = parser.parse_args()
    lite.server_class()  # mdrag's servers (its homes, logs and allocator settings), not milvus-lite's
    rows = source_rows(args.source)
    print(f"{len(rows)} source rows from {args.source}", flush=True)
    results = {}
    for layout in args.layouts.split(","):
        with tempfile.TemporaryDirectory(prefix="mdrag-lite-fields-") as folder:
            results[layout] = one(layout, rows, args.rows, Path(folder))
            print(layout, results[layout], flush=True)
    print(json.dumps(results, indent=2))
    if set(results) == set(LAYOUTS):  # a partial run leaves the saved table as it is
        print(f"written to {harness.save('lite_fields', {'source': str(args.source), 'layouts': results})}")


if __name__ == "__main__":
    main()

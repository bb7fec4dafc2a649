"""Lite memory and scan: what one collection adds to a Milvus Lite server, by vector type and row
count, and how long one search over it takes.

    python -m bench.lite_memory [--rows 30 3000 40000]

Each collection (a primary key and one vector column) is created in a fresh Milvus Lite database
of its own, filled with random vectors, and its server's resident set read before and after; then
SEARCHES searches (30 nearest, FLAT) are timed, median in ms. Milvus Lite
keeps a collection as one growing segment whose fixed-size columns are allocated 32,768 rows at
a time, so the cost moves in steps, not per row (docs/design/milvus.md, "Where Milvus Lite's memory
goes"). Takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.metrics import percentile

DIMENSION = 384
SETTLE_S = 2.0  # the server allocates as it takes the rows in
KINDS = ("float32", "float16", "binary")
SEARCHES = 30


def measure(rows: list[int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for kind in KINDS:
        for count in rows:
            added, search_ms = _one(kind, count)
            result = {"kind": kind, "rows": count, "added_mb": added, "search_ms": search_ms}
            results[f"{kind}_{count}"] = result
            print(f"{kind} x{DIMENSION}, {count} rows: +{added:.1f} MB, search {search_ms} ms", flush=True)
    return results


def _one(kind: str, count: int) -> tuple[float, float]:
    """MB one collection of `count` rows adds to a fresh server (each its own: no reused memory),
    and the median ms of a search over it."""
    from pymilvus import DataType, MilvusClient

    with tempfile.TemporaryDirectory(prefix="mdrag-lite-memory-") as folder:
        db = Path(folder) / "probe.db"
        client = MilvusClient(str(db))
        try:
            before = _server_mb(db)
            dtype, index, metric, vector = _column(kind, DataType)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", dtype, dim=DIMENSION)
            params = client.prepare_index_params()
            params.add_index("v", index_type=index, metric_type=metric)
            client.create_collection("probe", schema=schema, index_params=params)
            for start in range(0, count, 1000):
                batch = range(start, min(count, start + 1000))
                client.insert("probe", [{"id": i, "v": vector()} for i in batch])
            time.sleep(SETTLE_S)
            added = round(_server_mb(db) - before, 1)
            took = []
            for _ in range(SEARCHES):
                started = time.perf_counter()
                client.search("probe", data=[vector()], anns_field="v", limit=30)
                took.append((time.perf_counter() - started) * 1000)
            return added, round(percentile(took, 50), 2)
        finally:
            client.close()


def _column(kind: str, types: Any) -> tuple[Any, str, str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    if kind == "float16":
        return types.FLOAT16_VECTOR, "FLAT", "COSINE", lambda: rng.random(DIMENSION).astype(np.float16)
    if kind == "binary":
        return types.BINARY_VECTOR, "BIN_FLAT", "HAMMING", lambda: rng.bytes(DIMENSION // 8)
    return types.FLOAT_VECTOR, "FLAT", "COSINE", lambda: rng.random(DIMENSION).astype(np.float32).tolist()


def _server_mb(db: Path) -> float:
    """Resident memory of the Milvus Lite server process serving `db` (found by its command line)."""
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command and command[0].endswith(b"/milvus") and str(db).encode() in command:
            return harness.rss_mb(int(proc.name))["VmRSS"]
    raise RuntimeError(f"no Milvus Lite server serves {db}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[30, 3000, 40000])
    print(json.dumps(measure(parser.parse_args().rows), indent=2))


if __name__ == "__main__":
    main()

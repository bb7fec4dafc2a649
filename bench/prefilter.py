"""Binary first pass: would a Hamming scan over sign bits, re-scored on float32, find what the
exact scan finds, and sooner?

    python -m bench.prefilter --index STATE/milvus.db --notes NOTES [--queries 400]

Reads every vector row of an mdrag index (the named database and its shards beside it), embeds
realistic queries from NOTES (bench.query's: the notes' example headings and cmdlet titles) and
reports, for each candidate count N, how much of the exact cosine top 1 / 10 / 30 a Hamming
top N over the vectors' sign bits keeps. Then it loads the same vectors into a fresh Milvus Lite
database (one collection with a float32 and a binary column) and times, median of SEARCHES, the
exact FLAT top 30 against a BIN_FLAT top N, with and without the float vectors returned for the
re-scoring. The default search asks each shard for 30 rows (top_k 10 x 2 + 10).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.metrics import percentile
from bench.query import realistic_queries

CANDIDATES = (100, 200, 400, 1000)
EXACT = (1, 10, 30)
SEARCHES = 30
COLLECTION = "document_vectors"


def index_vectors(db: Path) -> np.ndarray:
    """Every vector row of the index at `db`, over all its shards."""
    from pymilvus import MilvusClient

    from mdrag.milvus import database_files

    rows: list[list[float]] = []
    for path in database_files(str(db)):
        client = MilvusClient(str(path))
        try:
            found = client.query_iterator(COLLECTION, batch_size=4000, output_fields=["embedding"])
            while batch := found.next():
                rows.extend(row["embedding"] for row in batch)
            found.close()
        finally:
            client.close()
    return np.asarray(rows, dtype=np.float32)


def kept(vectors: np.ndarray, queries: np.ndarray) -> dict[str, dict[str, float]]:
    """For each N: the share of the exact top k (k in EXACT) found in the Hamming top N."""
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, : max(EXACT)]
    bits = np.unpackbits(np.packbits(vectors > 0, axis=1), axis=1).astype(np.float32)
    query_bits = (queries > 0).astype(np.float32)  # exact small integers, through BLAS
    # Hamming distance = bits that differ = ones in either minus twice the ones in both.
    hamming = bits.sum(1)[None, :] + query_bits.sum(1)[:, None] - 2 * (query_bits @ bits.T)
    ranked = np.argsort(hamming, axis=1, kind="stable")
    result = {}
    for n in CANDIDATES:
        candidates = [set(row) for row in ranked[:, :n]]
        result[str(n)] = {
            f"top{k}": round(
                float(np.mean([len(set(e[:k]) & c) / k for e, c in zip(exact, candidates, strict=True)])), 4
            )
            for k in EXACT
        }
    return result


def timings(vectors: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    """Median ms of one Milvus Lite search over `vectors`: exact, and a Hamming top N with and
    without the floats."""
    from pymilvus import DataType, MilvusClient

    bits = np.packbits(vectors > 0, axis=1)
    with tempfile.TemporaryDirectory(prefix="mdrag-prefilter-") as folder:
        client = MilvusClient(str(Path(folder) / "probe.db"))
        try:
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=vectors.shape[1])
            schema.add_field("b", DataType.BINARY_VECTOR, dim=vectors.shape[1])
            params = client.prepare_index_params()
            params.add_index("v", index_type="FLAT", metric_type="COSINE")
            params.add_index("b", index_type="BIN_FLAT", metric_type="HAMMING")
            client.create_collection("probe", schema=schema, index_params=params)
            for start in range(0, len(vectors), 2000):
                rows = range(start, min(len(vectors), start + 2000))
                client.insert(
                    "probe", [{"id": i, "v": vectors[i].tolist(), "b": bits[i].tobytes()} for i in rows]
                )

            def median_ms(search: Any) -> float:
                took = []
                for query in queries[:SEARCHES]:
                    started = time.perf_counter()
                    search(query)
                    took.append((time.perf_counter() - started) * 1000)
                return round(percentile(took, 50), 2)

            result = {
                "exact_top30": median_ms(
                    lambda q: client.search(
                        "probe", [q.tolist()], anns_field="v", limit=30, output_fields=["id"]
                    )
                )
            }
            for n in CANDIDATES:
                for returned in ("id", "v"):
                    result[f"hamming_top{n}_{'with_floats' if returned == 'v' else 'ids'}"] = median_ms(
                        lambda q, n=n, returned=returned: client.search(
                            "probe",
                            [np.packbits(q > 0).tobytes()],
                            anns_field="b",
                            limit=n,
                            output_fields=[returned],
                        )
                    )
            return result
        finally:
            client.close()


def table(result: dict[str, Any]) -> str:
    """The measured trade-off as a markdown table, one row per candidate count."""
    ms = result["ms"]
    lines = [
        f"{result['rows']:,} vector rows in one Lite collection, {result['queries']} queries; the exact FLAT "
        f"top 30 takes {ms['exact_top30']} ms.",
        "",
        "| Hamming top N | exact top 1 kept | top 10 kept | top 30 kept | Lite ms, ids only "
        "| Lite ms, with the floats |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n, share in result["kept"].items():
        lines.append(
            f"| {n} | {share['top1']:.3f} | {share['top10']:.3f} | {share['top30']:.3f} | "
            f"{ms[f'hamming_top{n}_ids']} | {ms[f'hamming_top{n}_with_floats']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", type=Path, required=True, help="an mdrag index's milvus.db")
    parser.add_argument("--notes", type=Path, required=True, help="the notes it indexes (for the queries)")
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    from mdrag.config import Config
    from mdrag.embedding.embedder import Embedder

    vectors = index_vectors(args.index)
    config = Config()
    embedder = Embedder(
        config.embedding_model, config.embedding_device, config.embedding_batch_size, config.embedding_backend
    )
    queries = np.asarray([embedder.embed_query(q) for q in realistic_queries(args.notes, args.queries)])
    result = {"rows": len(vectors), "queries": len(queries), "kept": kept(vectors, queries)}
    result["ms"] = timings(vectors, queries)
    print(json.dumps(result, indent=2))
    print(f"wrote {harness.save('prefilter', result)}")


if __name__ == "__main__":
    main()

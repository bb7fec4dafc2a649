"""Schema: the fields and indexes of document_vectors and document_metadata, created or checked."""

from __future__ import annotations

import json
from typing import Any

from loguru import logger
from pymilvus import DataType, MilvusClient, MilvusException

from mdrag.errors import LayoutOutdatedError, SchemaMismatchError
from mdrag.milvus.packed import packed_chars

VECTORS = "document_vectors"
METADATA = "document_metadata"
# 2: heading anchors on sections, links on notes; 3: a hit's fields in `display`; 4: `display`
# holds the matched window's place, heading paths led by the note's title, headings without
# their `{#id}` attribute lists or HTML entities (an upgrade re-embeds only those headings);
# 5: no `section_text` (a hit's text is read from its note, see retrieval/hittext.py); 6: no
# BM25 function, sparse field or analyzer (keyword search is the keyword index's, keywords.py);
# 7: no `display` or `embedded_text` (the keyword index keeps what a hit shows, keywords.py);
# 8: vector rows hold their INT64 key, `doc_id` and the vector alone (the keyword index keeps
# the section, path, version and tags of each row); 9: a note's `aliases` follow its title in
# the text each section embeds, and a shown row holds them (an upgrade re-embeds those notes);
# 10: HTML comment blocks are blanked from what a section embeds (an upgrade re-embeds those
# sections); 11: a long section's last two parts share its text evenly (an upgrade re-embeds
# those parts); 12: a note's frontmatter description has a vector, packed in its metadata row
# (an upgrade embeds the descriptions alone); 13: a note's text is read composed (NFC), a lone
# carriage return as a line break, frontmatter in TOML, JSON or closed by `...` as frontmatter, and
# a block it cannot read, an Obsidian comment of several lines and a highlight shortcode as lines
# of text, not markup, and [[Node.js]] as a link to a note (an upgrade embeds again only the notes
# read otherwise).
SCHEMA_VERSION = 13
MAX_TAGS = 64
# Every stored vector is unit length (the embedder normalizes), so the inner product is the
# cosine; a FLAT scan with IP skips the per-row norms COSINE computes, and is faster for it.
DENSE_METRIC = "IP"


def identity(model_id: str, dimension: int, shards: int = 1) -> str:
    """What the collections were built for, kept as their description and checked on open
    (a Milvus Lite index spread over shards names their count: another count is another layout)."""
    built_for: dict[str, object] = {"mdrag_schema": SCHEMA_VERSION, "model": model_id, "dim": dimension}
    if shards > 1:
        built_for["shards"] = shards
    return json.dumps(built_for, sort_keys=True)


def ensure_collections(
    client: MilvusClient,
    built_for: str,
    dimension: int,
    uri: str,
    names: tuple[str, ...] = (VECTORS, METADATA),
) -> None:
    """Create the collections or check the existing ones."""
    for name in names:
        if client.has_collection(name):
            _check(client, name, built_for, uri)
        elif name == METADATA:
            _create_metadata(client, built_for, dimension)
        else:
            _create_vectors(client, built_for, dimension)
    # Only the small metadata collection loads now: Milvus Lite reads a whole collection into
    # memory on load (many seconds at scale), and a no-op rescan never touches the vectors.
    if METADATA in names:
        client.load_collection(METADATA)


def _check(client: MilvusClient, name: str, built_for: str, uri: str) -> None:
    info = client.describe_collection(name)
    found = info.get("description", "")
    if found != built_for and _same_model(found, built_for):
        raise LayoutOutdatedError(f"collection {name} in {uri} has an older layout: {found}")
    if found != built_for and _same_model(found, built_for, weights_only=True):
        raise LayoutOutdatedError(
            f"collection {name} in {uri} was built by another back-end of the same model: {found}",
            vectors_reusable=False,  # its vectors are close to this back-end's, not the same
        )
    if found != built_for:
        raise SchemaMismatchError(
            f"collection {name} in {uri} was built for {found or 'an unknown layout'}, "
            f"but mdrag now uses {built_for}; run `mdrag reindex --rebuild` to rebuild it"
        )
    if name == VECTORS:
        _use_dense_metric(client, uri)


def _use_dense_metric(client: MilvusClient, uri: str) -> None:
    """Indexes made before DENSE_METRIC searched with COSINE: swap the index in place.

    The vectors stay as they are (unit length either way), so nothing is embedded again; the
    swap happens once and costs about what loading the collection does.
    """
    found = client.describe_index(VECTORS, "embedding").get("metric_type")
    if found == DENSE_METRIC:
        return
    logger.info(
        "switching the dense index of {} from {} to {} (same vectors, faster search)",
        uri,
        found,
        DENSE_METRIC,
    )
    client.release_collection(VECTORS)
    client.drop_index(VECTORS, "embedding")
    client.create_index(VECTORS, _dense_index(client))


def _dense_index(client: MilvusClient) -> Any:
    index = client.prepare_index_params()
    # FLAT: exact search, so a note that plainly answers a query is never skipped.
    index.add_index("embedding", index_type="FLAT", metric_type=DENSE_METRIC)
    return index


def _same_model(found: str, built_for: str, weights_only: bool = False) -> bool:
    """Whether both were built for one model; with `weights_only`, for one model's weights on any
    back-end (a model id's `+onnx-int8` names how the weights run, not which they are)."""
    try:
        old, new = json.loads(found), json.loads(built_for)
    except ValueError:
        return False
    if not isinstance(old, dict) or not isinstance(old.get("model"), str):
        return False
    models = old["model"], new["model"]
    if weights_only:
        models = old["model"].split("+")[0], new["model"].split("+")[0]
    return bool(models[0] == models[1] and old.get("dim") == new["dim"])


def _tags(schema: Any, name: str) -> None:
    schema.add_field(
        name, DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=MAX_TAGS, max_length=512
    )


def vectors_schema(built_for: str, dimension: int) -> Any:
    """The fields of document_vectors (a pymilvus CollectionSchema)."""
    s = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description=built_for)
    s.add_field("id", DataType.INT64, is_primary=True)  # keys.row_number of the row's id
    s.add_field("doc_id", DataType.VARCHAR, max_length=64)  # its note, for deletes and filters
    # Nothing else: Milvus Lite holds every row's fields in memory, and the keyword index keeps
    # on disk what a hit shows and which section, note version and tags a row is (keywords.py).
    s.add_field("embedding", DataType.FLOAT_VECTOR, dim=dimension)
    return s


def _create_vectors(client: MilvusClient, built_for: str, dimension: int) -> None:
    s = vectors_schema(built_for, dimension)
    # Strong consistency: a search issued after a write sees that write (read-your-writes).
    client.create_collection(VECTORS, schema=s, index_params=_dense_index(client), consistency_level="Strong")
    _add_scalar_indexes(client, VECTORS, ["doc_id"])


def _add_scalar_indexes(client: MilvusClient, name: str, fields: list[str]) -> None:
    """INVERTED indexes speed up the id filters; servers before Milvus 2.4 lack them and scan."""
    client.release_collection(name)
    for field_name in fields:
        params = client.prepare_index_params()
        params.add_index(field_name, index_type="INVERTED")
        try:
            client.create_index(name, params)
        except MilvusException as exc:
            logger.info("no INVERTED index on {}.{} ({}); filters on it scan", name, field_name, exc.message)


def _create_metadata(client: MilvusClient, built_for: str, dimension: int) -> None:
    s = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description=built_for)
    s.add_field("doc_id", DataType.VARCHAR, is_primary=True, max_length=64)
    s.add_field("file_path", DataType.VARCHAR, max_length=4096)
    s.add_field("file_hash", DataType.VARCHAR, max_length=64)
    s.add_field("size", DataType.INT64)
    s.add_field("status", DataType.VARCHAR, max_length=16)
    s.add_field("error_message", DataType.VARCHAR, max_length=8192)
    s.add_field("warning", DataType.VARCHAR, max_length=8192)
    s.add_field("frontmatter", DataType.JSON)
    s.add_field("title", DataType.VARCHAR, max_length=4096)
    for name in ("tags", "topics", "keywords"):
        _tags(s, name)
    s.add_field("summary", DataType.VARCHAR, max_length=65535)
    s.add_field("llm_hints", DataType.JSON)
    s.add_field("links", DataType.JSON)  # {"items": [{kind, target, anchor, alias, line}, ...]}
    s.add_field("language", DataType.VARCHAR, max_length=32)
    s.add_field("word_count", DataType.INT64)
    s.add_field("section_count", DataType.INT32)
    s.add_field("has_frontmatter", DataType.BOOL)
    s.add_field("created_at", DataType.DOUBLE)
    s.add_field("modified_at", DataType.DOUBLE)
    s.add_field("indexed_at", DataType.DOUBLE)
    s.add_field("doc_vector", DataType.FLOAT_VECTOR, dim=dimension)
    s.add_field("description_vector", DataType.VARCHAR, max_length=packed_chars(dimension))  # packed.py
    index = client.prepare_index_params()
    index.add_index("doc_vector", index_type="FLAT", metric_type="COSINE")
    client.create_collection(METADATA, schema=s, index_params=index, consistency_level="Strong")

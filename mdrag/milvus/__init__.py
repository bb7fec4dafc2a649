"""Milvus: every conversation with Milvus (Lite or a server), behind a small public face.

Outside this package, import only the names below, from `mdrag.milvus`. Each loads its module
on first use, so a light command that needs `start_early` never imports pymilvus.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "CarriedVectors": "carried",
    "PendingKeywords": "pending",
    "Store": "store",
    "clip_bytes": "rows",
    "pack_vector": "packed",
    "MAX_TAGS": "schema",
    "quote": "filters",
    "note_scope": "filters",
    "NoteScope": "filters",
    "start_early": "lite",
    "index_exists": "lite",
    "index_held": "lite",
    "database_files": "lite",
    "KeywordRow": "rows",
    "MetadataRow": "rows",
    "Shown": "rows",
    "ShownRow": "rows",
    "VectorKey": "rows",
    "VectorRow": "rows",
    "WindowRow": "rows",
}
__all__ = [
    "MAX_TAGS",
    "CarriedVectors",
    "KeywordRow",
    "MetadataRow",
    "NoteScope",
    "PendingKeywords",
    "Shown",
    "ShownRow",
    "Store",
    "VectorKey",
    "VectorRow",
    "WindowRow",
    "clip_bytes",
    "database_files",
    "index_exists",
    "index_held",
    "note_scope",
    "pack_vector",
    "quote",
    "start_early",
]

if TYPE_CHECKING:
    from mdrag.milvus.carried import CarriedVectors
    from mdrag.milvus.filters import NoteScope, note_scope, quote
    from mdrag.milvus.lite import database_files, index_exists, index_held, start_early
    from mdrag.milvus.packed import pack_vector
    from mdrag.milvus.pending import PendingKeywords
    from mdrag.milvus.rows import (
        KeywordRow,
        MetadataRow,
        Shown,
        ShownRow,
        VectorKey,
        VectorRow,
        WindowRow,
        clip_bytes,
    )
    from mdrag.milvus.schema import MAX_TAGS
    from mdrag.milvus.store import Store


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)

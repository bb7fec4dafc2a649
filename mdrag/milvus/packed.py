"""Packed vectors: a unit vector as a short string (int8, base64), for a row's second vector."""

from __future__ import annotations

import base64
import binascii

import numpy as np

# Why a string and not a second FLOAT_VECTOR field: a Milvus server before 2.4 holds one vector
# field per collection (the metadata's is the document vector), and Milvus Lite allocates a vector
# column 50 MB per 32,768 rows (docs/design/milvus.md), where 512 characters a described note cost
# 1.5 MB over the PowerShell docs' 3,088. A cosine read from 8 bits a component is within 0.01 of
# the float's (tests/test_packed.py), far inside what ranks notes.


def packed_chars(dimension: int) -> int:
    """The length of a packed vector of this many components: the field's width (512 for 384)."""
    return 4 * ((dimension + 2) // 3)


def pack_vector(vector: np.ndarray | None) -> str:
    """The vector's components scaled to int8 by its largest, in base64 ("" for none)."""
    if vector is None:
        return ""
    v = np.asarray(vector, dtype=np.float32)
    peak = float(np.abs(v).max()) if v.size else 0.0
    if peak == 0.0 or not np.isfinite(peak):
        return ""
    return base64.b64encode(np.round(v * (127.0 / peak)).astype(np.int8).tobytes()).decode("ascii")


def unpack_vector(packed: str) -> np.ndarray | None:
    """The packed vector as a unit float32 vector (its direction is all a cosine reads), or None
    (for nothing, or for a string that is not a packed vector: no row breaks a search)."""
    try:
        v = np.frombuffer(base64.b64decode(packed, validate=True), dtype=np.int8).astype(np.float32)
    except (binascii.Error, ValueError):
        return None
    norm = float(np.linalg.norm(v))
    return v / norm if norm else None

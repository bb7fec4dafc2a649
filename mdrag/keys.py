"""Keys: the content hashes an index is keyed by (file, note, section, row), each computed here alone.

Every key is stored in the index, so each value must stay byte for byte what it was: an index
built by an earlier mdrag keeps its ids (tests/test_keys.py pins each on a fixed input). Paths
and texts are encoded UTF-8 with `surrogateescape`, so a file name's undecodable bytes hash as
the bytes they were.
"""

from __future__ import annotations

import hashlib

KEY_HEX = 32  # a key's length in hex digits (128 bits): the id columns hold 64 at most
# A vector row's key is 64 bits, so Milvus keeps it as an INT64 primary key: a VARCHAR one cost
# Milvus Lite ~0.3 KB of memory a row more (docs/design/notes-to-vectors.md, "Data model"). Two
# rows of a vault of a million share one with a chance of about 3 in 100 million.
ROW_KEY_HEX = 16


def _key(data: bytes, digits: int = KEY_HEX) -> str:
    return hashlib.sha256(data).hexdigest()[:digits]


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def file_hash(data: bytes) -> str:
    """A version of a note: the SHA-256 of its bytes, whole (64 hex). Unchanged bytes are never
    read into the pipeline again, and rows are trusted only under the hash the catalog holds."""
    return hashlib.sha256(data).hexdigest()


def doc_id(path: str) -> str:
    """A note's key in both collections (the `doc_id` column, and its shard): its path, hashed.
    Hex, because a filter on the raw path cannot match every path (Milvus Lite's parser has no
    escape for a newline, which a file name may hold)."""
    return _key(_encoded(path))


def section_id(model_id: str, sectioning_version: int, prefix: str, body: str) -> str:
    """A section's vector key: the text the model embeds (title and heading path `prefix`, and
    `body`), the model and the sectioning version, and nothing of where the section is, so an
    inserted line or a renamed file re-embeds nothing; another model or sectioning never reuses it."""
    return _key(_encoded("\0".join([model_id, str(sectioning_version), prefix, body])))


def description_id(model_id: str, description: str) -> str:
    """A note's description's vector key: the model and the text it embeds. Led by a NUL, which
    no section_id's input is (a model id is never empty), so no heading or title can make a
    section's key equal to a description's."""
    return _key(_encoded("\0".join(["", "description", model_id, description])))


def row_id(path: str, file_hash: str, section_id: str, ordinal: int, window: int) -> str:
    """A vector row's primary key: one window of one section (its text's key, and its ordinal in
    the note) of one version of one note, so a new version's rows never overwrite the rows
    searches still read, and a row found by its key holds the vector of exactly that text."""
    return _key(_encoded(f"{path}\0{file_hash}\0{section_id}\0{ordinal}\0{window}"), ROW_KEY_HEX)


def row_number(row_id: str) -> int:
    """A row id as the signed 64-bit integer Milvus keys the row by (the same bits)."""
    number = int(row_id, 16)
    return number - (1 << 64) if number >= 1 << 63 else number


def row_hex(number: int) -> str:
    """The row id of a Milvus primary key (row_number's inverse)."""
    return format(number & ((1 << 64) - 1), f"0{ROW_KEY_HEX}x")

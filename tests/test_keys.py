"""The index's keys never change: each pinned on a fixed input to the value mdrag computed before
they moved into mdrag/keys.py (an index built then must keep its ids)."""

from __future__ import annotations

from mdrag import keys
from mdrag.notes.sections import SECTIONING_VERSION

PATH = "notes/caf\u00e9 \udcff.md"  # a non-ASCII name with an undecodable byte (surrogateescape)
DATA = b"# Title\n\nbody\n"
MODEL = "sentence-transformers/all-MiniLM-L6-v2+onnx-int8"


def test_a_file_hash_is_the_sha256_of_its_bytes():
    assert keys.file_hash(DATA) == "d58d548bdb9b18792c6f5a4b1538f79fffd01f37466065452c137eabc7f3ee37"


def test_a_doc_id_is_its_note_path_hashed():
    assert keys.doc_id(PATH) == "62d04fcfb3ca0e861443b089e7bf6dc2"
    assert keys.doc_id("a.md") == "fecccc97532467adbf93017b357c8b17"


def test_a_section_id_is_its_model_sectioning_and_embedded_text_hashed():
    assert SECTIONING_VERSION == 1  # a new version is meant to change every section id
    key = keys.section_id(MODEL, SECTIONING_VERSION, "Title > Part", "body \udcff text")
    assert key == "61a0f1446f75c18975016e9a4ed04d96"


def test_a_description_id_is_its_model_and_text_hashed_and_never_a_sections():
    key = keys.description_id(MODEL, "Deploy a site \udcff")
    assert key == "dee60c1e9d221be9bb3702a790563d7e"
    # A title or heading with a NUL in it (a YAML escape) cannot make a section's key the same.
    assert keys.section_id(MODEL, SECTIONING_VERSION, "\0description", "Deploy a site \udcff") != key
    assert keys.section_id("", SECTIONING_VERSION, "description", "Deploy a site \udcff") != key


def test_a_row_id_is_its_note_version_section_and_window_hashed():
    # Since schema 8: 64 bits (Milvus keys the row by an INT64), and the section's key is in it
    assert keys.row_id(PATH, keys.file_hash(DATA), "e" * 32, 3, 1) == "7cf0c683d2d170ab"
    assert keys.row_id(PATH, keys.file_hash(DATA), "f" * 32, 3, 1) != "7cf0c683d2d170ab"


def test_a_row_id_and_its_engine_number_are_the_same_bits():
    for row_id in ("0000000000000000", "7fffffffffffffff", "8000000000000000", "ffffffffffffffff"):
        number = keys.row_number(row_id)
        assert -(1 << 63) <= number < 1 << 63
        assert keys.row_hex(number) == row_id
    assert keys.row_number("ffffffffffffffff") == -1

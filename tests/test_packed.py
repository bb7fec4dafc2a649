"""Packed vectors: a unit vector kept as a short string reads back with the same cosines."""

from __future__ import annotations

import numpy as np
import pytest

from mdrag.milvus.packed import pack_vector, packed_chars, unpack_vector


def unit(rng: np.random.Generator, dim: int = 384) -> np.ndarray:
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_a_packed_vector_keeps_its_cosines_to_a_few_thousandths():
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(500):
        a, b = unit(rng), unit(rng)
        near = a + 0.3 * b  # pairs near each other too, where the order of notes is decided
        near /= np.linalg.norm(near)
        for other in (b, near):
            packed = pack_vector(other)
            assert len(packed) == packed_chars(384) == 512
            back = unpack_vector(packed)
            assert back is not None and abs(float(np.linalg.norm(back)) - 1.0) < 1e-5
            worst = max(worst, abs(float(a @ back) - float(a @ other)))
    assert worst < 0.01


@pytest.mark.parametrize(
    "vector", [None, np.zeros(384, dtype=np.float32), np.full(384, np.nan, dtype=np.float32), np.zeros(0)]
)
def test_no_vector_packs_as_nothing_and_reads_back_as_none(vector):
    assert pack_vector(vector) == ""
    assert unpack_vector("") is None


@pytest.mark.parametrize("dimension", [1, 2, 3, 384, 768, 1024, 1536, 4096])
def test_the_field_holds_a_packed_vector_of_any_models_dimension(dimension):
    """A user may name a hub model of another size: its description's vector must fit the field
    the schema makes for that dimension, or every described note's write would be refused."""
    packed = pack_vector(unit(np.random.default_rng(dimension), dimension))
    assert len(packed) == packed_chars(dimension)
    back = unpack_vector(packed)
    assert back is not None and back.shape == (dimension,)


@pytest.mark.parametrize("text", ["not base64!", "YWJj=garbage", "\u00e9t\u00e9"])
def test_a_string_that_is_no_packed_vector_reads_as_none(text):
    assert unpack_vector(text) is None

"""Carried vectors: saved whole or not at all, looked up by section, removed when done."""

import numpy as np
import pytest

from mdrag.milvus import CarriedVectors


def test_saved_vectors_come_back_by_section_and_window(tmp_path):
    carried = CarriedVectors(tmp_path / "index.carried.sqlite")
    rows = [("a", 0, [1.0, 0.0]), ("a", 1, [0.0, 1.0]), ("b", 0, [0.5, 0.5]), ("a", 0, [9.0, 9.0])]
    assert carried.save(rows) == 3  # a section repeated across notes is kept once
    found = carried.lookup(["a", "missing"])
    assert set(found) == {("a", 0), ("a", 1)}
    assert np.array_equal(found[("a", 1)], np.array([0.0, 1.0], dtype=np.float32))
    carried.discard()
    assert not carried.exists() and carried.lookup(["a"]) == {}


def test_a_save_that_fails_midway_leaves_no_file(tmp_path):
    carried = CarriedVectors(tmp_path / "index.carried.sqlite")

    def rows():
        yield ("a", 0, [1.0, 0.0])
        raise OSError("the store went away")

    with pytest.raises(OSError, match="the store went away"):
        carried.save(rows())
    assert not carried.exists()  # a rebuild never reads half of the old vectors
    assert list(tmp_path.iterdir()) == []

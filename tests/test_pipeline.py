"""The indexing pipeline's shape: the reader thread ahead of the model, stops between model batches."""

from __future__ import annotations

import threading
import time

import pytest

from mdrag.embedding.embedder import EmbedCancelled, Embedder
from mdrag.index.readahead import read_ahead


def test_read_ahead_yields_every_item_in_order():
    assert list(read_ahead(iter(range(1000)), depth=8)) == list(range(1000))


def test_an_error_while_reading_ahead_surfaces_in_the_indexer():
    def items():
        yield 1
        raise ValueError("a parser bug")

    with pytest.raises(ValueError, match="a parser bug"):
        list(read_ahead(items(), depth=4))


def test_closing_the_read_ahead_stops_the_reader_thread():
    produced = []

    def items():
        for i in range(10_000):
            produced.append(i)
            yield i

    reader = read_ahead(items(), depth=4)
    assert next(reader) == 0
    reader.close()
    assert not any(t.name == "mdrag-reader" for t in threading.enumerate())
    assert len(produced) < 20  # it stopped, rather than reading the whole corpus


def test_read_ahead_holds_no_more_than_its_budget_of_weight_beside_the_item_in_hand():
    produced = []

    def items():
        for i in range(50):
            produced.append(i)
            yield i

    reader = read_ahead(items(), depth=100, weigh=lambda i: 10 if i else 100, budget=30)
    assert next(reader) == 0  # heavier than the whole budget: it goes alone
    time.sleep(0.3)
    assert len(produced) <= 5  # 0 in hand, 1-3 waiting (30), 4 read and held back
    assert list(reader) == list(range(1, 50))


def test_a_stop_request_ends_embedding_before_the_model_loads():
    embedder = Embedder()  # the model loads on first encode; the tokenizer is already there
    stop = threading.Event()
    stop.set()
    with pytest.raises(EmbedCancelled):
        embedder.embed(["a section", "another"], cancel=stop)
    assert embedder.dimension == 384 and embedder.count_tokens(["two words"]) == [2]

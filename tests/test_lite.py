"""The Milvus Lite head start: a command's early server is the one its store opens, and a held
database is left to the store's own open (and its clear error)."""

from __future__ import annotations

import time

import pytest

from mdrag.milvus import lite
from tests.conftest import stand_in_lite_server


def test_the_store_opens_to_the_server_started_early(tmp_path):
    from mdrag.milvus.store import Store

    uri = str(tmp_path / "index" / "milvus.db")
    threads = lite.start_early(uri)
    dbs = lite.database_files(uri)
    assert len(threads) == len(dbs) >= 2  # one server per shard, all started at once
    for thread in threads:
        thread.join(30)
    assert all(lite.started_here(db) and lite.lock_held(db) for db in dbs)
    store = Store(uri, dimension=384, model_id="m")
    try:
        assert store.count_vectors() == 0
    finally:
        store.close()
    for db in dbs:
        assert not lite.started_here(db) and not lite.lock_held(db)  # stopped by close, lock gone


def test_no_head_start_for_a_server_uri_or_a_database_another_process_holds(tmp_path):
    assert lite.start_early("http://localhost:19530") == []
    db = tmp_path / "milvus.db"
    (tmp_path / ".milvus.db.lock").write_text("")
    assert lite.start_early(str(db)) == []


def test_a_lite_server_slow_to_listen_is_waited_for(tmp_path, monkeypatch):
    # On a loaded machine a server may take longer than milvus-lite's fixed 0.5 s to listen:
    # CI once met "No such file or directory" on the first connect. Here one takes 1.5 s.
    from mdrag.milvus.store import Store

    monkeypatch.setenv("BIN_PATH", str(stand_in_lite_server(tmp_path / "bin", "sleep 1.5")))
    started = time.monotonic()
    store = Store(str(tmp_path / "index" / "milvus.db"), dimension=384, model_id="m")
    try:
        assert store.count_vectors() == 0
        assert time.monotonic() - started >= 1.5
    finally:
        store.close()


def test_a_lite_server_that_exits_at_once_is_reported_not_waited_for(tmp_path, monkeypatch):
    from mdrag.errors import StoreError
    from mdrag.milvus.store import Store

    monkeypatch.setenv("BIN_PATH", str(stand_in_lite_server(tmp_path / "bin", "exit 3")))
    started = time.monotonic()
    with pytest.raises(StoreError, match="cannot open the Milvus store"):
        Store(str(tmp_path / "index" / "milvus.db"), dimension=384, model_id="m")
    assert time.monotonic() - started < lite.SERVER_UP_S

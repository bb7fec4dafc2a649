"""mdrag on a real Milvus server process: capability detection, and a server that goes away."""

from __future__ import annotations

import signal
import time

import pytest
from loguru import logger

from mdrag.errors import RemoteError
from mdrag.milvus.store import Store
from tests.conftest import MODEL_ID, write
from tests.daemon_process import DaemonProcess, mdrag_cli, rebuilt_vector_ids, stored_vector_ids, wait_until


def test_a_server_without_full_text_search_warns_once_and_serves_dense_search(milvus_server):
    milvus_server.wipe(keep_model="none")  # start from no collections at all
    warnings: list[str] = []
    sink = logger.add(lambda message: warnings.append(str(message)), level="WARNING")
    try:
        store = Store(milvus_server.uri, model_id=MODEL_ID)
        store.close()
        reopened = Store(milvus_server.uri, model_id=MODEL_ID)
        reopened.close()
    finally:
        logger.remove(sink)
    assert store.full_text is False and reopened.full_text is False
    assert sum("full-text" in w for w in warnings) == 2  # once per open, never per search


def test_the_daemon_outlives_a_server_outage_and_lands_every_queued_change_once(milvus_server, tmp_path):
    milvus_server.wipe(keep_model=MODEL_ID)
    notes = tmp_path / "notes"
    write(notes / "seed.md", "# Seed\n\nThe lighthouse keeper trims the wick every evening.\n")
    daemon = DaemonProcess(notes, tmp_path / "state", {"MDRAG_MILVUS_URI": milvus_server.uri}).start()
    try:
        daemon.wait_fresh()
        milvus_server.stop(signal.SIGKILL)  # the server is killed mid-run
        killed_at = time.monotonic()
        for i in range(20):
            write(
                notes / "outage" / f"o{i:02d}.md",
                f"# Outage {i}\n\nWritten while the server was down, note {i}.\n",
            )
        wait_until(lambda: not daemon.status()["daemon"]["store_available"], 120, interval=0.5)
        assert daemon.client.alive()  # the daemon stays up
        status = mdrag_cli(daemon.env, "status", timeout=60)
        assert "UNAVAILABLE" in status.stdout
        with pytest.raises(RemoteError) as failed:  # a search against a dead store must fail
            daemon.search("lighthouse")
        assert "unavailable" in str(failed.value) and "queued" in str(failed.value)

        # Milvus 2.3.5 standalone rejoins its own data only once the killed node's etcd session
        # (ttl 30 s) has expired ("node not match" before that), hence the wait.
        time.sleep(max(0.0, killed_at + 65 - time.monotonic()))
        milvus_server.start()  # same data, same port: the daemon reconnects by itself

        def caught_up() -> bool:
            state = daemon.status()
            return state["daemon"]["store_available"] and state["daemon"]["queue_depth"] == 0

        wait_until(caught_up, 240, interval=1.0)
        assert daemon.status()["documents"] == {"indexed": 21}
        assert any(
            "Outage 7" in h["section_text"] for h in daemon.search("written while the server was down")
        )
        assert daemon.stop() == 0
    finally:
        daemon.close()

    on_server = stored_vector_ids(milvus_server.uri)
    assert len(on_server) == len(set(on_server)), "a change landed twice"
    assert on_server == rebuilt_vector_ids(daemon.env, tmp_path / "rebuilt" / "milvus.db")

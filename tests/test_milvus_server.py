"""mdrag on a real Milvus server process: capability detection, and a server that goes away."""

from __future__ import annotations

import signal
import time

import pytest

from mdrag.config import Config
from mdrag.errors import RemoteError
from mdrag.milvus.store import Store
from mdrag.service import Service
from tests.conftest import MODEL_ID, write
from tests.daemon_process import DaemonProcess, mdrag_cli, rebuilt_vector_ids, stored_vector_ids, wait_until


def test_a_server_without_bm25_serves_keyword_search_from_the_keyword_index(
    milvus_server, embedder, notes, tmp_path
):
    """Milvus 2.3.5 has no BM25: keyword and hybrid search come from the keyword index kept in
    mdrag's data dir, and a store opened without one (no data dir named) searches by meaning."""
    milvus_server.wipe(keep_model="none")  # start from no collections at all
    write(
        notes / "tech/postgres.md", "# Postgres\n\nRestore a dump with pg_restore into an empty database.\n"
    )
    write(notes / "garden.md", "# Garden\n\nWater the tomatoes at dawn.\n")
    config = Config().with_overrides(
        roots=(str(notes),), milvus_uri=milvus_server.uri, server_socket_path=str(tmp_path / "s.sock")
    )
    service = Service.open(config, embedder=embedder)
    try:
        service.reindex()
        assert service.files.keyword_index.is_dir()
        for mode in ("keyword", "hybrid"):
            response = service.search({"query": "pg_restore", "threshold": 0, "mode": mode})
            assert response["search_parameters"]["mode"] == mode
            assert response["results"][0]["file_path"] == str(notes / "tech/postgres.md")
    finally:
        service.close()
    # The keyword index also keeps what each hit shows: a server's store cannot go without one.
    with pytest.raises(ValueError, match="keyword index"):
        Store(milvus_server.uri, model_id=MODEL_ID)


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

"""The daemon feeds systemd's watchdog only while it can still help itself: a Lite index down for good stops it."""

from __future__ import annotations

import time

from mdrag.config import Config
from mdrag.serve import daemon as daemon_module
from mdrag.serve.daemon import Daemon


def build(tmp_path, uri: str) -> Daemon:
    config = Config().with_overrides(
        roots=(str(tmp_path),), milvus_uri=uri, server_socket_path=str(tmp_path / "s.sock")
    )
    return Daemon(config)


def test_a_lite_index_down_past_the_limit_stops_the_watchdog_heartbeats(tmp_path):
    daemon = build(tmp_path, str(tmp_path / "milvus.db"))
    assert daemon.feeds_watchdog()
    daemon.writer.store_down_since = time.monotonic() - 5  # restarting: keep feeding meanwhile
    assert daemon.feeds_watchdog()
    daemon.writer.store_down_since = time.monotonic() - daemon_module.LITE_GIVE_UP_S - 1
    assert not daemon.feeds_watchdog()
    assert daemon.daemon_status()["state"] == "unhealthy"


def test_a_remote_milvus_server_down_never_stops_the_heartbeats(tmp_path):
    daemon = build(tmp_path, "http://localhost:1")
    daemon.writer.store_down_since = time.monotonic() - daemon_module.LITE_GIVE_UP_S - 1
    assert daemon.feeds_watchdog()  # restarting the daemon cannot bring a remote server back

"""The daemon feeds systemd's watchdog only while it can still help itself: a Lite index down for good stops it."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from mdrag.config import Config
from mdrag.index.workqueue import WorkQueue
from mdrag.serve.gate import Gate
from mdrag.serve.writer import LITE_GIVE_UP_S, Writer, WriterState


def writer_of(is_lite: bool) -> Writer:
    service = SimpleNamespace(is_lite=is_lite)  # all the give-up rule asks of the service
    return Writer(Config(), service, WorkQueue(0.1, 1.0), Gate(), threading.Event(), time.monotonic)  # type: ignore[arg-type]


def test_a_lite_index_down_past_the_limit_makes_the_writer_unhealthy():
    writer = writer_of(is_lite=True)
    writer.store_down_since = time.monotonic() - 5  # restarting: keep feeding meanwhile
    writer.give_up_if_due()
    assert writer.state is not WriterState.UNHEALTHY
    writer.store_down_since = time.monotonic() - LITE_GIVE_UP_S - 1
    writer.give_up_if_due()
    assert writer.state is WriterState.UNHEALTHY
    assert f"{writer.state}" == "unhealthy"  # as status and the page read it


def test_a_remote_milvus_server_down_never_stops_the_heartbeats():
    writer = writer_of(is_lite=False)
    writer.store_down_since = time.monotonic() - LITE_GIVE_UP_S - 1
    writer.give_up_if_due()
    assert (
        writer.state is not WriterState.UNHEALTHY
    )  # restarting the daemon cannot bring a remote server back

"""Indexing progress: counts, estimated totals, rate and ETA, its wording, and its stream over the socket."""

from __future__ import annotations

import json
import socket

import pytest

from mdrag import protocol
from mdrag.client.connection import DaemonClient
from mdrag.errors import RemoteError
from mdrag.progress import ProgressMeter, early_message, eta_text, progress_line, search_banner
from mdrag.serve.server import SocketServer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_counts_texts_of_notes_read_and_estimates_the_notes_not_read_yet():
    meter = ProgressMeter(clock=Clock())
    assert meter.snapshot().state == "scanning"
    meter.begin(10)
    for _ in range(4):
        meter.read(5)  # four notes of five texts each read so far
    p = meter.snapshot()
    assert (p.state, p.notes_done, p.notes_total, p.done) == ("indexing", 0, 10, 0)
    assert p.total == 50  # 20 known + 6 unread notes like the 4 read
    assert p.rate is None and p.eta_s is None  # nothing embedded yet: no rate to promise from


def test_unchanged_notes_count_as_done_and_add_no_texts_to_the_estimate():
    meter = ProgressMeter(clock=Clock())
    meter.begin(4)
    meter.unchanged()
    meter.unchanged()
    meter.read(3)
    p = meter.snapshot()
    assert p.notes_done == 2
    assert p.total == 6  # one changed note of 3 texts read; one unread note estimated alike


def test_eta_comes_from_the_measured_rate_of_texts_embedded():
    clock = Clock()
    meter = ProgressMeter(clock=clock)
    meter.begin(2)
    meter.read(100)
    meter.read(100)
    clock.now += 60
    meter.texts_done(25)  # the first batch, a minute of it the model's start-up: no pace yet
    assert meter.snapshot().rate is None and meter.snapshot().eta_s is None
    clock.now += 10
    meter.texts_done(50)  # 50 texts in 10 s
    meter.written(0)
    p = meter.snapshot()
    assert p.rate == pytest.approx(5.0)
    assert p.eta_s == pytest.approx(25.0)  # 125 texts left at 5 per second
    clock.now += 10
    meter.texts_done(125)
    meter.written(2)
    meter.finish()
    p = meter.snapshot()
    assert (p.state, p.notes_done, p.done, p.total, p.eta_s) == ("done", 2, 200, 200, 0.0)
    assert not p.pending


def test_the_rate_follows_the_last_minute_not_the_whole_run():
    clock = Clock()
    meter = ProgressMeter(clock=clock)
    meter.begin(1)
    meter.read(10_000)
    for _ in range(20):  # 10 texts/s for 200 s
        clock.now += 10
        meter.texts_done(100)
    for _ in range(10):  # then 2 texts/s (the machine got busy)
        clock.now += 10
        meter.texts_done(20)
    assert meter.snapshot().rate == pytest.approx(2.0, rel=0.25)


def test_a_listener_hears_of_progress_at_most_five_times_a_second_but_always_of_the_end():
    clock = Clock()
    heard = []
    meter = ProgressMeter(heard.append, clock=clock)
    meter.begin(3)
    for _ in range(10):
        meter.texts_done(1)  # all in the same instant
    meter.finish()
    assert [h["state"] for h in heard] == ["indexing", "done"]
    assert heard[-1]["done"] == 10
    assert json.loads(json.dumps(heard[0]))["unit"] == "texts"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "estimating the time left"),
        (0.2, "about 5 s left"),
        (41, "about 45 s left"),
        (61, "about 2 min left"),
        (180, "about 3 min left"),
        (3 * 3600 + 5 * 60, "about 3 h 05 min left"),
    ],
)
def test_time_left_reads_as_a_person_would_say_it(seconds, text):
    assert eta_text(seconds) == text


def test_the_line_says_how_many_passages_were_kept_and_how_many_embedded():
    """An upgrade finds most vectors under the old layout: counted as embedded, 453 of 3211 read
    as the model's work while it had embedded 42 of them."""
    meter = ProgressMeter(clock=Clock())
    meter.begin(1)
    meter.read(3211)
    meter.texts_done(411, kept=True)
    meter.texts_done(42)
    snap = meter.snapshot()
    assert (snap.done, snap.kept) == (453, 411)
    line = progress_line(snap)
    assert "453 of about 3211 passages ready (411 kept, 42 embedded)" in line
    # a first index keeps nothing: its line is as before
    fresh = ProgressMeter(clock=Clock())
    fresh.begin(3)
    fresh.read(30)
    fresh.texts_done(12)
    assert "12 of about 90 passages embedded" in progress_line(fresh.snapshot())


def test_status_and_search_lines_say_how_far_the_index_is():
    meter = ProgressMeter(clock=Clock())
    assert progress_line(meter.snapshot()) == "indexing: listing the notes"
    p = {"state": "indexing", "notes_done": 412, "notes_total": 994, "done": 5210, "total": 12400}
    p |= {"unit": "texts", "eta_s": 170.0}
    assert progress_line(p) == "indexing 412/994 notes, 5210 of about 12400 passages embedded, ~3 min left"
    assert search_banner(p) == "indexing: 412 of 994 notes done, about 3 min left; results so far:"
    assert "412 of 994 notes indexed so far" in early_message(p)
    p["keyword_notes"] = 994  # every note read ahead for keyword search
    assert early_message(p).startswith(
        "nothing found in the 412 of 994 notes indexed so far (all 994 searchable by their words); "
    )
    assert "by their words" not in early_message(p, by_words=False)  # a search by meaning alone
    # One that still shows its closest notes found something, just nothing confident.
    assert early_message(p, closest=True).startswith("no confident answer in the 412 of 994 notes indexed")
    # A run over notes the index held already (a restart's check of what changed while mdrag was
    # stopped): every note answers meanwhile, in its last version, so nothing is "so far".
    p |= {"notes_held": 994, "keyword_notes": 412}
    assert search_banner(p) == (
        "updating the index: 412 of 994 notes done, about 3 min left; every note answers meanwhile, as last indexed:"
    )
    assert (
        early_message(p)
        == "nothing found in the 994 notes indexed; the index is being updated (412 done, about 3 min left)"
    )
    p["notes_held"] = 990  # four new notes: those are not searchable yet
    assert search_banner(p).endswith("results so far:") and "so far" in early_message(p)


def test_a_check_that_finds_nothing_to_embed_estimates_its_time_from_the_readers_pace():
    """A restart's check of 1,000 unchanged notes embeds nothing: the time left is the reader's."""
    clock = Clock()
    meter = ProgressMeter(clock=clock)
    meter.begin(1000, held=1000)
    assert meter.snapshot().eta_s is None  # nothing read yet
    for _ in range(200):  # 200 notes checked in 2 s
        clock.now += 0.01
        meter.unchanged()
    p = meter.snapshot()
    assert (p.rate, p.total) == (None, 0)
    assert p.eta_s == pytest.approx(8.0, rel=0.05)  # 800 notes left at ~100 a second
    assert "about 10 s left" in search_banner(p.to_dict())


def test_the_time_left_is_the_longer_of_the_models_and_the_readers():
    clock = Clock()
    meter = ProgressMeter(clock=clock)
    meter.begin(1000, held=1000)
    meter.read(10)  # one changed note: 10 texts, then 99 unchanged ones in 4 s
    meter.texts_done(5)  # the model's first batch of them: its start-up, no pace yet
    for _ in range(99):
        clock.now += 0.0404
        meter.unchanged()
    assert meter.snapshot().eta_s is None  # text to embed and no rate of embedding yet
    meter.texts_done(5)  # its second batch, 4 s on: the estimate of the rest is 9,000 texts
    p = meter.snapshot()
    assert p.eta_s == pytest.approx((p.total - 10) / p.rate)
    meter.texts_done(p.total - 20)  # the model all but done, in no time: the reader's 900 notes remain
    assert meter.snapshot().eta_s == pytest.approx(900 / (99 / 4.0), rel=0.05)


def test_a_small_run_all_read_at_once_ends_at_no_time_left_and_a_stuck_reader_grows_its_own():
    clock = Clock()
    meter = ProgressMeter(clock=clock)
    meter.begin(3)
    for _ in range(3):  # every note read within the reader's first sample
        clock.now += 0.01
        meter.read(2)
    clock.now += 2
    meter.texts_done(3)
    clock.now += 2
    meter.texts_done(3)
    assert meter.snapshot().eta_s == 0.0  # nothing left to embed or read, before finish()
    stuck = ProgressMeter(clock=clock)
    stuck.begin(200, held=200)
    for _ in range(100):  # 100 unchanged notes checked in 1 s, then the reader waits on one note
        clock.now += 0.01
        stuck.unchanged()
    first = stuck.snapshot().eta_s
    clock.now += 9
    assert first == pytest.approx(1.0, rel=0.1) and stuck.snapshot().eta_s == pytest.approx(10.0, rel=0.1)


def test_a_run_knows_how_many_of_its_notes_the_index_held_when_it_began():
    meter = ProgressMeter(clock=Clock())
    meter.begin(10, held=7)
    assert meter.snapshot().to_dict()["notes_held"] == 7
    meter.begin(3, held=7)  # never more than the run's notes
    assert meter.snapshot().notes_held == 3


# ---- the stream of progress lines over the socket ------------------------------------------


def streaming_handler(op, params):
    if op == "reindex" and params.get("stream"):
        return stream(params.get("force"))  # a field reindex takes, standing in for a failing run
    if op == "reindex":
        return {"added": 3}
    return {"pong": True}


def stream(fail):
    for done in (1, 2):
        yield {"state": "indexing", "done": done, "total": 3}
    if fail:
        raise ValueError("the run broke")
    return {"added": 3}


@pytest.fixture()
def socket_path(short_tmp):
    server = SocketServer(str(short_tmp / "s.sock"), streaming_handler)
    server.start()
    yield str(server.path)
    server.stop()


def test_a_client_that_asks_for_progress_hears_each_step_before_the_answer(socket_path):
    heard = []
    result = DaemonClient(socket_path).call("reindex", on_progress=heard.append)
    assert [h["done"] for h in heard] == [1, 2]
    assert result == {"added": 3}


def test_a_client_that_does_not_ask_for_progress_gets_one_answer_line_as_before(socket_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    sock.sendall(protocol.encode(protocol.request("reindex")))
    sock.shutdown(socket.SHUT_WR)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    lines = data.decode().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {"v": 1, "ok": True, "result": {"added": 3}}


def test_a_run_that_fails_midway_ends_its_stream_with_the_error(socket_path):
    heard = []
    with pytest.raises(RemoteError, match="the run broke"):
        DaemonClient(socket_path).call("reindex", on_progress=heard.append, force=True)
    assert len(heard) == 2

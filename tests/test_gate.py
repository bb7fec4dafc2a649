"""The daemon's gate: requests share the store, a reopen has it alone, and a waiting reopen goes first."""

from __future__ import annotations

import threading
import time

from mdrag.serve.gate import Gate


def in_thread(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_requests_share_the_store_at_once_and_the_gate_says_it_is_busy():
    gate = Gate()
    both_in = threading.Event()

    def two_requests() -> None:
        with gate.shared(), gate.shared():  # a second request does not wait for the first
            assert gate.busy
            both_in.set()

    in_thread(two_requests).join(5)
    assert both_in.is_set()
    assert not gate.busy


def test_a_reopen_waits_for_the_requests_in_hand_and_new_requests_wait_for_it():
    gate = Gate()
    events: list[str] = []
    first = threading.Event()
    release_first = threading.Event()

    def request_in_hand() -> None:
        with gate.shared():
            first.set()
            release_first.wait(5)
            events.append("request done")

    def reopen() -> None:
        with gate.exclusive():
            events.append("reopen")
            time.sleep(0.1)
            events.append("reopen done")

    def late_request() -> None:
        with gate.shared():
            events.append("late request")

    threads = [in_thread(request_in_hand)]
    first.wait(5)
    threads.append(in_thread(reopen))
    time.sleep(0.1)  # the reopen is now waiting for the request in hand
    threads.append(in_thread(late_request))
    time.sleep(0.1)
    assert events == []  # neither the reopen nor the late request got past the gate
    release_first.set()
    for thread in threads:
        thread.join(5)
    assert events == ["request done", "reopen", "reopen done", "late request"]


def test_a_stopping_daemon_waits_for_a_request_that_never_ends_only_as_long_as_it_said():
    gate = Gate()
    inside = threading.Event()
    never = threading.Event()

    def stuck_request() -> None:
        with gate.shared():
            inside.set()
            never.wait(30)

    in_thread(stuck_request)
    assert inside.wait(5)
    started = time.monotonic()
    with gate.exclusive(timeout=0.3) as alone:
        waited = time.monotonic() - started
        assert not alone  # it goes on beside the request still in
    assert 0.3 <= waited < 2
    never.set()
    with gate.exclusive(timeout=5) as alone:
        assert alone

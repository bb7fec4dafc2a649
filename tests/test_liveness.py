"""The writer's liveness: a stop-event check by the writer thread is a beat, silence past the limit is a stall."""

from __future__ import annotations

import threading
import time

from mdrag.serve.liveness import Liveness, PulsingEvent


def test_a_worker_is_alive_until_it_is_silent_past_its_limit():
    liveness = Liveness(stall_s=0.2)
    assert liveness.stalled_for() is None
    time.sleep(0.3)
    stalled = liveness.stalled_for()
    assert stalled is not None and stalled >= 0.3
    liveness.beat()
    assert liveness.stalled_for() is None


def test_only_the_named_threads_checks_of_the_stop_event_count_as_its_beats():
    liveness = Liveness(stall_s=0.1)
    stop = PulsingEvent(liveness, "mdrag-writer")
    time.sleep(0.2)
    assert not stop.is_set()  # the main thread's check proves nothing about the writer
    assert liveness.stalled_for() is not None
    writer = threading.Thread(target=stop.is_set, name="mdrag-writer")
    writer.start()
    writer.join()
    assert liveness.stalled_for() is None


def test_the_pulsing_stop_event_still_stops_and_wakes_waiters():
    stop = PulsingEvent(Liveness(), "mdrag-writer")
    woke = []
    waiter = threading.Thread(target=lambda: woke.append(stop.wait(5)))
    waiter.start()
    stop.set()
    waiter.join(5)
    assert woke == [True] and stop.is_set()

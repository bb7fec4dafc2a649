"""The writer's queue: per-path debounce, coalescing, commands, and waiting until idle."""

from __future__ import annotations

import threading
import time

from mdrag.index.workqueue import Command, FileChanges, WorkQueue


def test_a_burst_of_events_on_one_path_becomes_one_job_after_the_quiet_time():
    queue = WorkQueue(debounce_s=0.2)
    for _ in range(50):
        queue.add_file("/n/a.md")
    assert queue.take(timeout=0.05) is None  # still inside the quiet time
    work = queue.take(timeout=1)
    assert isinstance(work, FileChanges) and work.files == ["/n/a.md"]
    queue.finish()
    assert queue.take(timeout=0.3) is None


def test_a_thousand_paths_are_all_delivered_each_once():
    queue = WorkQueue(debounce_s=0.01)
    for i in range(1000):
        queue.add_file(f"/n/{i}.md")
        queue.add_file(f"/n/{i}.md")
    delivered: list[str] = []
    while (work := queue.take(timeout=0.2)) is not None:
        delivered.extend(work.files)
        queue.finish()
    assert sorted(delivered) == sorted(f"/n/{i}.md" for i in range(1000))


def test_an_event_during_the_quiet_time_pushes_the_job_back():
    queue = WorkQueue(debounce_s=0.3)
    queue.add_file("/n/a.md")
    time.sleep(0.2)
    queue.add_file("/n/a.md")
    started = time.monotonic()
    work = queue.take(timeout=2)
    assert work.files == ["/n/a.md"] and time.monotonic() - started >= 0.25


def test_commands_are_answered_to_whoever_waits_for_them():
    queue = WorkQueue()
    command = queue.submit(Command("reindex", ["/n"]))

    def writer():
        work = queue.take(timeout=1)
        work.result = {"added": 1}
        work.done.set()
        queue.finish()

    threading.Thread(target=writer).start()
    assert command.wait(5) == {"added": 1}


def test_only_one_sweep_is_queued_at_a_time():
    queue = WorkQueue()
    first = queue.submit(Command("reconcile"))
    assert queue.submit(Command("reconcile")) is first
    assert queue.depth() == 1


def test_wait_idle_returns_once_everything_taken_is_finished():
    queue = WorkQueue(debounce_s=0.05)
    queue.add_file("/n/a.md")
    assert queue.wait_idle(0.01) is False

    def writer():
        queue.take(timeout=1)
        time.sleep(0.1)
        queue.finish()

    threading.Thread(target=writer).start()
    assert queue.wait_idle(5) is True
    assert queue.last_applied_at is not None


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_path_saved_more_often_than_the_debounce_is_due_at_the_latest_max_wait_after_its_first_save():
    clock = FakeClock()
    queue = WorkQueue(debounce_s=0.5, max_wait_s=5.0, clock=clock)
    taken_at = None
    while clock.now < 1010.0:  # a save every 300 ms for 10 s: never 500 ms of quiet
        queue.add_file("/n/log.md")
        work = queue.take(timeout=0)
        if work is not None:
            assert isinstance(work, FileChanges) and work.files == ["/n/log.md"]
            queue.finish()
            taken_at = taken_at or clock.now
        clock.now += 0.3
    assert taken_at is not None and 5.0 <= taken_at - 1000.0 < 5.3  # the first save after its 5 s
    # Once taken, the next save starts a new wait: a quiet time after a save is still honoured.
    clock.now += 10
    assert isinstance(queue.take(timeout=0), FileChanges)  # the last save, after its quiet time
    queue.finish()
    queue.add_file("/n/log.md")
    assert queue.take(timeout=0) is None
    clock.now += 0.5
    assert isinstance(queue.take(timeout=0), FileChanges)


def test_without_a_maximum_wait_a_path_saved_faster_than_the_debounce_is_never_due():
    clock = FakeClock()
    queue = WorkQueue(debounce_s=0.5, clock=clock)
    for _ in range(30):
        queue.add_file("/n/log.md")
        assert queue.take(timeout=0) is None
        clock.now += 0.3

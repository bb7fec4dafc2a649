"""The leak guard itself: it names a thread and a process a test left behind, and ends the process."""

from __future__ import annotations

import subprocess
import threading

from tests import leaks


def test_a_forgotten_thread_and_child_process_are_named_and_the_process_is_killed(monkeypatch):
    monkeypatch.setattr(leaks, "GRACE_S", 0.2)
    threads, pids = leaks.live_threads(), leaks.descendant_processes()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="forgotten-writer")
    thread.start()
    process = subprocess.Popen(["sleep", "60"])
    try:
        found = leaks.left_behind(threads, pids)
    finally:
        stop.set()
        thread.join()
    assert "thread 'forgotten-writer' (Thread)" in found
    assert f"process {process.pid}: sleep 60" in found
    assert process.wait(5) == -9


def test_threads_and_processes_that_end_within_the_grace_time_are_not_leaks():
    threads, pids = leaks.live_threads(), leaks.descendant_processes()
    thread = threading.Thread(target=lambda: None, name="quick")
    thread.start()
    process = subprocess.Popen(["sleep", "0.1"])
    assert leaks.left_behind(threads, pids) == []
    assert process.wait(5) == 0


def test_a_session_process_that_is_allowed_is_not_a_leak(monkeypatch):
    monkeypatch.setattr(leaks, "_allowed_pids", set())
    pids = leaks.descendant_processes()
    process = subprocess.Popen(["sleep", "60"])
    try:
        leaks.allow_process(process.pid)
        assert process.pid not in leaks.descendant_processes() - pids
    finally:
        process.kill()
        process.wait()


def test_a_grandchild_orphaned_by_a_killed_child_is_still_found(monkeypatch):
    monkeypatch.setattr(leaks, "GRACE_S", 0.2)
    threads, pids = leaks.live_threads(), leaks.descendant_processes()
    # The child starts a grandchild and is killed, as a killed daemon leaves its Lite servers.
    child = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    grandchild = int(child.stdout.readline())
    child.kill()
    child.wait()
    child.stdout.close()
    found = leaks.left_behind(threads, pids)
    assert f"process {grandchild}: sleep 60" in found

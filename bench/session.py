"""A real `mdrag serve` daemon over a bench work dir, for the freshness, query and memory figures."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import harness
from mdrag.client.connection import DaemonClient
from mdrag.errors import RemoteError, ServerNotRunningError


class Daemon:
    """`mdrag serve` on the work dir's notes and index; a context manager that always stops it."""

    def __init__(self, work: harness.Work) -> None:
        self.work = work
        self.client = DaemonClient(work.socket, timeout=600)
        self.log_path = work.root / "daemon.log"
        self.process: subprocess.Popen[str] | None = None
        self.started_in_s = 0.0

    def spawn(self) -> subprocess.Popen[str]:
        """Start `mdrag serve` and return at once (`with Daemon(...)` also waits until it serves)."""
        Path(self.work.socket).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.log_path, "a") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                harness.mdrag("serve"), env=self.work.env(), stdout=log, stderr=log, text=True
            )
        return self.process

    def __enter__(self) -> Daemon:
        started = time.perf_counter()
        self.spawn()
        assert self.process is not None
        deadline = started + 600
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mdrag serve exited with {self.process.returncode}:\n{self.log()}")
            if self.client.alive():
                # A search with wait_fresh returns once the start-up reconcile has been applied.
                self.search("warm-up", wait_fresh=300)
                self.started_in_s = time.perf_counter() - started
                return self
            time.sleep(0.1)
        raise RuntimeError(f"mdrag serve did not come up in 600 s:\n{self.log()}")

    def __exit__(self, *exc: Any) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def restart(self) -> None:
        """Stop the daemon and start it again on the same index, as after a reboot or an upgrade."""
        self.__exit__(None, None, None)
        self.__enter__()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def search(self, query: str, **params: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self.client.call("search", query=query, **params)
        return answer

    def status(self) -> dict[str, Any]:
        return dict(self.client.status())

    def rss(self) -> dict[str, float]:
        tree = harness.tree_memory_mb(self.pid)
        return {
            **harness.rss_mb(self.pid),
            "with_milvus": tree["rss"],
            "with_milvus_anon": tree["anon"],
            "with_milvus_pss": tree["pss"],
        }

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


def poll(predicate: Any, timeout: float, interval: float = 0.02) -> float:
    """Seconds until `predicate()` held (raises TimeoutError past `timeout`)."""
    started = time.perf_counter()
    while True:
        try:
            if predicate():
                return time.perf_counter() - started
        except (RemoteError, ServerNotRunningError):
            pass
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"not met within {timeout}s")
        time.sleep(interval)

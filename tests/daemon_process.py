"""A real `mdrag serve` subprocess for end-to-end tests, and the helpers to talk to it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mdrag.client import DaemonClient
from mdrag.errors import RemoteError, ServerNotRunningError


class DaemonProcess:
    """Starts `mdrag serve` on a notes folder with its own index and a short socket path."""

    def __init__(self, notes: Path, state: Path, extra_env: dict[str, str] | None = None) -> None:
        self.notes = notes
        self.state = state
        # AF_UNIX paths are limited to ~107 bytes; pytest's tmp dirs can be longer.
        self.socket_dir = Path(tempfile.mkdtemp(prefix="md", dir="/tmp"))
        self.socket_path = str(self.socket_dir / "run" / "mdrag.sock")
        self.env = {
            **os.environ,
            "MDRAG_MILVUS_URI": str(state / "milvus.db"),
            "MDRAG_SERVER_SOCKET_PATH": self.socket_path,
            "MDRAG_CONFIG": str(self._empty_config()),
            "MDRAG_ROOTS": str(notes),
            "HF_HUB_OFFLINE": "1",
            **(extra_env or {}),
        }
        self.client = DaemonClient(self.socket_path, timeout=120)
        self.process: subprocess.Popen[str] | None = None
        self.log_path = state / "daemon.log"

    def _empty_config(self) -> Path:
        self.state.mkdir(parents=True, exist_ok=True)
        path = self.state / "config.yaml"
        path.write_text("{}\n")
        return path

    def start(self, timeout: float = 90.0) -> DaemonProcess:
        log = open(self.log_path, "a")  # noqa: SIM115 - handed to the child process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mdrag.cli", "serve"], env=self.env, stdout=log, stderr=log, text=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.process.returncode}:\n{self.log()}")
            if self.client.alive():
                self.client.call("status")  # answers once the model is loaded and the index open
                return self
            time.sleep(0.2)
        raise RuntimeError(f"daemon did not come up in {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def wait_fresh(self, timeout: float = 120.0) -> dict[str, Any]:
        return self.client.call("search", query="freshness probe", threshold=1.0, wait_fresh=timeout)

    def search(self, query: str, **params: Any) -> list[dict[str, Any]]:
        params.setdefault("threshold", 0.0)
        params.setdefault("top_k", 20)
        return self.client.call("search", query=query, **params)["results"]

    def status(self) -> dict[str, Any]:
        return self.client.call("status")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def wait_until(predicate, timeout: float, interval: float = 0.05) -> float:
    """Seconds until `predicate()` held; AssertionError if it never did within `timeout`."""
    started = time.monotonic()
    while True:
        try:
            if predicate():
                return time.monotonic() - started
        except (RemoteError, ServerNotRunningError):
            pass
        if time.monotonic() - started > timeout:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)

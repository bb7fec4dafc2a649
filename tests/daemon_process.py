"""A real `mdrag serve` subprocess for end-to-end tests, and the helpers to talk to it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

from mdrag.client.connection import DaemonClient
from mdrag.errors import RemoteError, ServerNotRunningError


class DaemonProcess:
    """Starts `mdrag serve` on a notes folder with its own index and a short socket path."""

    def __init__(self, notes: Path, state: Path, extra_env: dict[str, str] | None = None) -> None:
        self.notes = notes
        self.state = state
        # AF_UNIX paths are limited to ~107 bytes; pytest's tmp dirs can be longer.
        self.socket_dir = Path(tempfile.mkdtemp(prefix="md", dir="/tmp"))
        # Removed with this object too: one made only for its env, or never closed, left it in /tmp.
        weakref.finalize(self, shutil.rmtree, self.socket_dir, ignore_errors=True)
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

    def launch(self, nohup: bool = False) -> None:
        """Start `mdrag serve` without waiting for it, with SIGHUP as a service manager leaves it
        (its default), or ignored as `nohup` leaves it: never as whatever ran the tests left it.
        A child inherits the disposition at the fork (an ignored signal stays ignored across
        exec), so it is set here for the moment of the start, not in the child."""
        before = signal.signal(signal.SIGHUP, signal.SIG_IGN if nohup else signal.SIG_DFL)
        try:
            with open(self.log_path, "a") as log:  # the child keeps its own copy of the descriptor
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "mdrag.cli.main", "serve"],
                    env=self.env,
                    stdout=log,
                    stderr=log,
                    text=True,
                )
        finally:
            signal.signal(signal.SIGHUP, before)

    def start(self, timeout: float = 90.0, nohup: bool = False) -> DaemonProcess:
        if nohup:
            self.launch(nohup=True)
        else:
            self.launch()  # a subclass may launch its own way (tests/test_watch_limit.py)
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.process.returncode}:\n{self.log()}")
            # `status` answers at once while the daemon starts ("starting"), fully once it is up.
            if self.client.alive() and not self.client.call("status").get("starting"):
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

    def lite_servers(self) -> list[int]:
        """The pids of the daemon's Milvus Lite server processes (one per shard)."""
        assert self.process is not None
        found = subprocess.run(
            ["pgrep", "-P", str(self.process.pid), "-x", "milvus"], capture_output=True, text=True
        )
        return [int(pid) for pid in found.stdout.split()]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)

    def stop_cleanly(self) -> None:
        """SIGTERM must end the daemon with exit 0 within a few seconds and remove its socket."""
        started = time.monotonic()
        assert self.stop(signal.SIGTERM) == 0
        assert time.monotonic() - started < 10
        assert not os.path.exists(self.socket_path)

    def close(self) -> None:
        # A graceful stop, so the daemon stops its Lite servers itself: after a SIGKILL they
        # linger until they notice their lock is gone, past the leak guard's grace.
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.socket_dir, ignore_errors=True)


SEED = {"seed.md": "# Seed\n\nThe lighthouse keeper trims the wick every evening.\n"}


def started_over(base: Path, notes: dict[str, str] | None = None, **env: str) -> DaemonProcess:
    """A daemon over `base`/notes, holding `notes` (name -> text; the seed note by default), its
    index under `base`/state, started and fresh; `env`: MDRAG_* settings of its own."""
    for name, text in (notes or SEED).items():
        path = base / "notes" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    process = DaemonProcess(base / "notes", base / "state", extra_env=env).start()
    process.wait_fresh()
    return process


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


def mdrag_cli(
    env: dict[str, str], *args: str, timeout: float = 600, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mdrag.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )


def stored_vector_ids(uri: str) -> list[str]:
    """Every vector row id in an index (ids derive from path, file hash, section and window),
    checked to be the keyword index's rows too (a server's lies in the daemon's data dir, which
    the daemons here share with this process: the same environment)."""
    from mdrag.config import default_data_dir
    from mdrag.files.indexfiles import IndexFiles
    from mdrag.milvus.store import Store

    keywords = IndexFiles.at(uri, default_data_dir()).keyword_index
    store = Store(uri, model_id="sentence-transformers/all-MiniLM-L6-v2", keywords=keywords)
    try:
        ids = sorted(row["id"] for row in store.iter_vector_keys())
        assert store.keywords is not None and store.keywords.ids() == ids, "keyword index out of step"
        return ids
    finally:
        store.close()


def rebuilt_vector_ids(env: dict[str, str], db_path: Path) -> list[str]:
    """The rows a fresh `mdrag reindex --rebuild` of the same notes produces, in a new Lite index."""
    result = mdrag_cli({**env, "MDRAG_MILVUS_URI": str(db_path)}, "reindex", "--rebuild", "--json")
    assert result.returncode == 0, result.stderr
    return stored_vector_ids(str(db_path))

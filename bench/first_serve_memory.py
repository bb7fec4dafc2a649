"""First-serve memory: a daemon's RSS after its first index on a fresh model cache, vs a restarted one's.

Run from the repository root: `python bench/first_serve_memory.py [NOTES_DIR]` (default examples/notes).
Everything lives in a temporary directory (model cache, index, socket); each daemon is stopped.
"""

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


def kilobytes(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def serve_once(label: str, base: Path, env: dict[str, str]) -> dict[str, Any]:
    """Start `mdrag serve`, wait until its index is complete, measure it, stop it."""
    started = time.monotonic()
    with open(base / f"{label}.log", "w") as log:
        command = [sys.executable, "-m", "mdrag.cli", "serve"]
        daemon = subprocess.Popen(command, env=env, stdout=log, stderr=log)
    client = DaemonClient(str(base / "s.sock"), timeout=600)
    try:
        while True:
            if daemon.poll() is not None:
                raise SystemExit((base / f"{label}.log").read_text())
            try:
                status = client.call("status")
                if status["daemon"]["state"] == "watching" and status["daemon"]["queue_depth"] == 0:
                    break
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.5)
        time.sleep(3)  # settled
        return {
            "run": label,
            "seconds_to_indexed": round(time.monotonic() - started, 1),
            "documents": status["documents"],
            "rss_mb": round(kilobytes(daemon.pid, "VmRSS") / 1024),
            "peak_rss_mb": round(kilobytes(daemon.pid, "VmHWM") / 1024),
            "torch_mapped": "libtorch" in Path(f"/proc/{daemon.pid}/maps").read_text(),
        }
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()


def main() -> None:
    notes = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "examples/notes")
    base = Path(tempfile.mkdtemp(prefix="mdm", dir="/tmp"))  # short: the socket lives here
    (base / "config.yaml").write_text("{}\n")
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(base / "cache"),
        "MDRAG_CONFIG": str(base / "config.yaml"),
        "MDRAG_MILVUS_URI": str(base / "milvus.db"),
        "MDRAG_SERVER_SOCKET_PATH": str(base / "s.sock"),
        "MDRAG_ROOTS": notes,
        "HF_HUB_OFFLINE": "1",
    }
    try:
        for label in ("first serve, fresh cache", "restarted"):
            print(serve_once(label, base, env), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

"""A real standalone Milvus server process (the PyPI `milvus` package) for the server-backed tests."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pymilvus import MilvusClient

from mdrag.embedding.embedder import INT8_SUFFIX
from tests.leaks import allow_process


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class MilvusServer:
    """`milvus-server --data DIR --proxy-port PORT`, started, stopped and restarted by its PID."""

    def __init__(self) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="mdrag-milvus-"))
        self.port = free_port()
        self.etcd_port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        executable = Path(sys.executable).parent / "milvus-server"
        self.command = [
            str(executable),
            "--data",
            str(self.data),
            "--proxy-port",
            str(self.port),
            "--etcd-port",
            str(self.etcd_port),
        ]

    def start(self, timeout: float = 120.0) -> MilvusServer:
        # Its own session, so that stopping it stops the etcd and minio children with it; the
        # child keeps its own copy of the log's descriptor.
        with open(self.data / "server.log", "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log, start_new_session=True)
        allow_process(self.process.pid)  # the session's server (a restart within a test too)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"milvus-server exited with {self.process.returncode}: {self.log()[-3000:]}"
                )
            try:
                client = MilvusClient(self.uri, timeout=3)
                client.list_collections()
                client.close()
                return self
            except Exception:
                time.sleep(1)
        self.stop(signal.SIGKILL)
        raise RuntimeError(
            f"milvus-server did not answer on {self.uri} within {timeout}s: {self.log()[-3000:]}"
        )

    def log(self) -> str:
        path = self.data / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> None:
        """Signal the server's whole process group and wait until every process in it is gone
        (the milvus binary outlives its Python wrapper, and holds etcd's fixed port 2380)."""
        if self.process is None:
            return
        group = self.process.pid
        deadline = time.monotonic() + timeout
        try:
            os.killpg(group, sig)
            while time.monotonic() < deadline:
                self.process.poll()
                os.killpg(group, 0)  # raises once no process of the group is left
                time.sleep(0.2)
            os.killpg(group, signal.SIGKILL)
            time.sleep(1)
        except ProcessLookupError:
            pass
        self.process.poll()

    def wipe(self, keep_model: str) -> None:
        """Empty the server for the next test: rows deleted (creating collections on a server
        takes seconds), collections built for another model dropped. `keep_model` names the
        model's weights: the collections of each back-end's id for them are kept (the default,
        ONNX int8, adds a suffix to the id)."""
        client = MilvusClient(self.uri, timeout=60)
        for name in client.list_collections():
            built_for = _built_for(client.describe_collection(name).get("description", ""))
            if built_for.get("model") not in (keep_model, keep_model + INT8_SUFFIX):
                client.drop_collection(name)
                continue
            client.load_collection(name)  # a Store loads the vectors only when it needs them
            client.delete(name, filter='doc_id != ""')  # every row of either collection
        client.close()

    def close(self) -> None:
        # Its data goes next, so nothing needs a clean stop: SIGTERM took the server a minute.
        self.stop(signal.SIGKILL)
        shutil.rmtree(self.data, ignore_errors=True)


def _built_for(description: str) -> dict[str, object]:
    """What a collection's description says it was built for (mdrag writes JSON there)."""
    try:
        found = json.loads(description)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}

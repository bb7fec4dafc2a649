"""The model back-ends: ONNX Runtime (the default) gives torch's vectors; what it cannot run uses torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mdrag.embedding import priority, runners
from mdrag.embedding.embedder import Embedder, resolve_model
from mdrag.embedding.onnx_cache import onnx_cache_dir
from mdrag.embedding.runners import query_lane
from tests.fakes import HashingRunner, fake_embedder

TEXTS = [
    "How do I restore a backup of the notes database?",
    "Get-Process lists the processes running on the local computer.",
    "# Groceries\n\n- eggs\n- flour\n- a very long list " + "of things " * 200,  # past one window
]


def test_the_default_back_end_is_onnx_int8_with_a_model_id_of_its_own(embedder):
    assert embedder.backend == "onnx-int8"
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2+onnx-int8"


def test_a_process_that_embeds_leaves_onnx_runtimes_telemetry_off(embedder, tmp_path: Path):
    """ONNX Runtime (1.29+) starts telemetry as it loads, on Linux too: a device id and events kept
    under the home for upload to Microsoft, unless told not to before it loads. A process that
    embeds through mdrag, from a home of its own, leaves nothing there."""
    embedder.load()  # the suite's ONNX export, which the child finds through its own cache folder
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    (home / ".cache" / "mdrag").symlink_to(onnx_cache_dir().parent, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    code = "from mdrag.embedding.embedder import Embedder\nprint(Embedder().embed_query('stay here').shape)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(384,)"
    assert sorted(p.name for p in home.rglob("*")) == [".cache", "mdrag"]  # nothing of the runtime's


def test_onnx_gives_the_vectors_torch_gives():
    torch_embedder = Embedder(backend="torch")
    onnx = Embedder(backend="onnx").embed(TEXTS)
    reference = torch_embedder.embed(TEXTS)
    assert onnx.shape == reference.shape == (3, 384)
    cosines = np.sum(onnx * reference, axis=1)
    assert cosines.min() > 0.9999, cosines
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


def test_int8_vectors_are_close_to_torchs_but_carry_their_own_model_id(embedder):
    # int8 vectors are close to fp32 ones but not the same: an index must never mix the two.
    int8, reference = embedder.embed(TEXTS), Embedder(backend="torch").embed(TEXTS)
    cosines = np.sum(int8 * reference, axis=1)
    assert cosines.min() > 0.97 and cosines.max() < 0.99999, cosines
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert embedder.model_id.endswith("+onnx-int8")


def test_a_device_other_than_the_cpu_uses_torch():
    assert Embedder(device="cuda").backend == "torch"  # the model loads lazily: nothing runs here


def test_a_model_onnx_cannot_run_is_embedded_by_torch(tmp_path: Path):
    # A local sentence-transformers folder with CLS pooling: not the mean pooling ONNX reproduces.
    source = Path(resolve_model("all-MiniLM-L6-v2")[0])
    model = tmp_path / "cls-model"
    shutil.copytree(source, model)
    modules = json.loads((model / "modules.json").read_text())
    pooling_config = model / modules[1]["path"] / "config.json"
    pooling = json.loads(pooling_config.read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling_config.write_text(json.dumps(pooling))

    embedder = Embedder(model=str(model))
    assert embedder.backend == "torch"
    assert embedder.embed(["a note"]).shape == (1, 384)


class BlockingRunner:
    """A fake model whose indexing encodes wait for `release`; it records the order of encodes.

    With `lane`, it offers a query runner of its own (as ONNX Runtime's does): queries never wait.
    """

    def __init__(self, lane: bool) -> None:
        self.inner = HashingRunner()
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls: list[str] = []
        if lane:
            self.for_queries = lambda: QueryRunner(self)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        self.calls.append("query" if texts[0].startswith("query:") else "index")
        if self.calls[-1] == "index":
            self.started.set()
            assert self.release.wait(10), "never released"
        return self.inner.encode(texts, batch_size)


class QueryRunner:
    def __init__(self, runner: BlockingRunner) -> None:
        self.runner = runner

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        self.runner.calls.append("lane")
        return self.runner.inner.encode(texts, batch_size)


def _indexing(runner: BlockingRunner, batches: int) -> tuple[object, threading.Thread, list[np.ndarray]]:
    embedder = fake_embedder(batch_size=2, runner=runner)
    out: list[np.ndarray] = []
    texts = [f"note {i} about lighthouses and wicks" for i in range(2 * batches)]
    thread = threading.Thread(target=lambda: out.append(embedder.embed(texts)), daemon=True)
    thread.start()
    assert runner.started.wait(10)  # an indexing batch is in the model now
    return embedder, thread, out


@pytest.mark.parametrize("query", ["query: lighthouse keeper", "query: " + "a long question " * 300])
def test_a_query_runs_beside_an_indexing_batch_in_flight(query):
    runner = BlockingRunner(lane=True)
    embedder, indexing, out = _indexing(runner, batches=3)
    try:
        vector = embedder.embed_query(query)  # would hang (the batch never ends) if it queued
        assert indexing.is_alive() and not out  # the batch is still in flight
        assert np.allclose(vector, HashingRunner().encode([query], 1)[0])
    finally:
        runner.release.set()
        indexing.join(10)
    assert out[0].shape == (6, 384)
    assert runner.calls == ["index", "lane", "index", "index"]


def test_without_a_lane_a_query_waits_for_the_batch_in_flight_and_goes_before_the_next():
    # torch's runner offers no lane: encodes take turns, a query ahead of the next indexing batch.
    runner = BlockingRunner(lane=False)
    embedder, indexing, out = _indexing(runner, batches=3)
    vectors: list[np.ndarray] = []
    asking = threading.Thread(target=lambda: vectors.append(embedder.embed_query("query: wick")), daemon=True)
    asking.start()
    asking.join(0.3)
    assert asking.is_alive() and runner.calls == ["index"]  # queued behind the batch in flight
    runner.release.set()
    asking.join(10)
    indexing.join(10)
    assert vectors and out[0].shape == (6, 384)
    assert runner.calls == ["index", "query", "index", "index"]


def test_onnx_queries_beside_indexing_give_the_vectors_they_give_alone(embedder):
    # The real session run from two threads at once: each run's vectors are its own.
    assert query_lane(embedder._load()) is not None
    queries = [f"how do I restore backup number {i} of the notes" for i in range(20)]
    texts = [t * 3 for t in TEXTS] * 8
    alone = [embedder.embed_query(q) for q in queries]
    indexed_alone = embedder.embed(texts)
    stop = threading.Event()
    indexed: list[np.ndarray] = []

    def index() -> None:
        while not stop.is_set():
            indexed.append(embedder.embed(texts))

    thread = threading.Thread(target=index, daemon=True)
    thread.start()
    try:
        beside = [embedder.embed_query(q) for q in queries]
    finally:
        stop.set()
        thread.join(60)
    assert np.allclose(np.array(beside), np.array(alone), atol=1e-5)
    assert indexed and all(np.allclose(v, indexed_alone, atol=1e-5) for v in indexed)


@pytest.mark.parametrize(
    ("cores", "expected"), [(1, (1, 1)), (2, (2, 1)), (3, (3, 1)), (12, (8, 1)), (32, (8, 4))]
)
def test_a_lane_per_core_up_to_the_limit_and_the_cores_beyond_shared(cores, expected):
    assert runners.lanes_and_threads(cores) == expected


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_a_texts_vector_is_its_own_whatever_it_is_embedded_beside(monkeypatch, backend):
    """The int8 model quantizes a run's activations together: a short text run beside others got
    another vector than alone or as a query (cosine down to 0.985 on real sections). Every text,
    short or past one window, in any company and order, through lanes at once, gets one vector."""
    monkeypatch.setattr(runners, "available_cores", lambda: 2)
    embedder = Embedder(backend=backend)
    texts = [f"note {i}: " + "the lighthouse keeper logs the weather " * (i % 7 + 1) for i in range(40)]
    texts += [text * (n + 1) for n, text in enumerate(TEXTS)]
    together = embedder.embed(texts)
    assert embedder._load().lanes == 2
    alone = np.array([embedder.embed([t])[0] for t in texts])
    reversed_ = embedder.embed(texts[::-1])[::-1]
    among_others = embedder.embed([*texts[::3], "x " * 300, "y"])[: len(texts[::3])]
    queries = np.array([embedder.embed_query(t) for t in texts[:10]])
    assert np.allclose(together, alone, atol=1e-6)
    assert np.allclose(together, reversed_, atol=1e-6)
    assert np.allclose(together[::3], among_others, atol=1e-6)
    assert np.allclose(together[:10], queries, atol=1e-6)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="nice is per thread only on Linux")
def test_indexing_runs_at_a_lowered_priority_and_a_request_at_its_callers(embedder, monkeypatch):
    runner = embedder._load()
    real_run = type(runner)._run
    nices: dict[str, list[int]] = {"index": [], "request": []}
    phase = ["index"]

    def recording_run(self, group):
        nices[phase[0]].append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return real_run(self, group)

    monkeypatch.setattr(type(runner), "_run", recording_run)
    caller = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    embedder.embed(["one short note"])  # a single run is indexing's too
    embedder.embed(TEXTS * 10)
    phase[0] = "request"
    embedder.embed_query("how do I restore a backup?")
    embedder.embed_for_request(TEXTS * 10)  # a draft to compare: several runs, in lanes at once
    assert nices["index"] and set(nices["index"]) == {min(caller + priority.BACKGROUND_NICE, 19)}
    assert len(nices["request"]) > 2 and set(nices["request"]) == {caller}
    # the lowered priority stayed in the lanes: the caller's own thread is as it was
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == caller

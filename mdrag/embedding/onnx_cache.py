"""ONNX model cache: the model exported (and quantized) once, in a child process, kept on disk."""

from __future__ import annotations

import os
from pathlib import Path

from loguru import logger

from mdrag.config import default_cache_dir
from mdrag.embedding.export_model import PARTIAL, TEMPORARY, is_bert
from mdrag.errors import ConfigError


def onnx_cache_dir() -> Path:
    return default_cache_dir() / "onnx"


EXPORT_TIMEOUT_S = 600


def onnx_model(source: str, quantized: bool) -> Path:
    """The model exported to ONNX (and quantized) once, offline, from its local weights; cached on disk.

    The export needs torch: it runs in a child process (`python -m mdrag.embedding.export_model`), so the
    process that embeds, a daemon above all, never maps torch's ~1 GB.
    """
    import hashlib
    import subprocess
    import sys

    weights = sorted(Path(source).glob("*.safetensors")) or sorted(Path(source).glob("*.bin"))
    stamp = "|".join(f"{w.resolve()}:{w.stat().st_size}:{w.stat().st_mtime_ns}" for w in weights)
    folder = onnx_cache_dir() / hashlib.sha256(f"{source}|{stamp}".encode()).hexdigest()[:16]
    fused = is_bert(source)
    # int8 from the plain export; fp32 fused where ONNX Runtime knows the architecture (BERT)
    wanted = folder / ("model-int8.onnx" if quantized else "model-fused.onnx" if fused else "model.onnx")
    if wanted.exists():
        if fused:  # an older mdrag kept the plain export, which no back-end loads: 90 MB for MiniLM
            (folder / "model.onnx").unlink(missing_ok=True)
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
    _remove_left_over(folder)
    logger.info("exporting {} to ONNX in {} (once, in a child process)", source, folder)
    command = [sys.executable, "-m", "mdrag.embedding.export_model", source, str(folder)]
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


def _remove_left_over(folder: Path) -> None:
    """The files of an export killed midway (its timeout, the kernel out of memory), 90 MB each:
    those older than any export may run, so none of a run still going."""
    import time

    for path in [*folder.glob(f"{TEMPORARY}*"), *folder.glob(f"*{PARTIAL}")]:
        try:
            if time.time() - path.stat().st_mtime > EXPORT_TIMEOUT_S:
                path.unlink()
        except OSError:
            pass  # gone meanwhile, or not ours to remove: it costs space, not correctness

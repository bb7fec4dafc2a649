"""The ONNX export: done once in a child process, so the embedding process never loads torch."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mdrag.embedding.embedder import resolve_model
from mdrag.embedding.onnx_cache import onnx_model
from mdrag.errors import ConfigError


def test_an_unwritable_model_cache_is_an_error_that_names_the_directory(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_folder))
    source, _ = resolve_model("all-MiniLM-L6-v2")
    with pytest.raises(ConfigError, match=rf"cannot write the ONNX model cache {not_a_folder}/mdrag/onnx/"):
        onnx_model(source, quantized=False)


@pytest.mark.slow
def test_a_fresh_cache_exports_the_model_in_a_child_and_this_process_never_loads_torch(tmp_path):
    probe = (
        "import sys\n"
        "from mdrag.embedding.embedder import Embedder\n"
        "vectors = Embedder().embed(['a note about sourdough', 'kernel modules'])\n"
        "print(vectors.shape, 'torch' in sys.modules)\n"
    )
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(2,", "384)", "False"]
    # The default back-end's model (onnx-int8), and nothing else: the plain export it was
    # quantized from is no back-end's model (90 MB), nor is any half-written file left.
    [folder] = (tmp_path / "cache" / "mdrag" / "onnx").iterdir()
    assert [p.name for p in folder.iterdir()] == ["model-int8.onnx"]
    # An older mdrag's cache kept it: the next load removes it.
    (folder / "model.onnx").write_bytes(b"an older cache's plain export")
    source, _ = resolve_model("all-MiniLM-L6-v2")
    with pytest.MonkeyPatch.context() as patched:
        patched.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        assert onnx_model(source, quantized=True) == folder / "model-int8.onnx"
    assert [p.name for p in folder.iterdir()] == ["model-int8.onnx"]


def test_an_export_killed_midway_leaves_files_the_next_export_removes(tmp_path):
    """A run killed by its timeout or the kernel leaves its own plain export (90 MB) and half
    files: older than any export may run, they go; a run's still going, and the models, stay."""
    from mdrag.embedding.onnx_cache import EXPORT_TIMEOUT_S, _remove_left_over

    left = [
        ".model-41-1a2b3c4d.onnx",
        "model-int8.41-1a2b3c4d.partial",
        ".model-41-1a2b3c4d.41-1a2b3c4d.partial",
    ]
    going = [".model-42-5e6f7a8b.onnx", "model-fused.42-5e6f7a8b.partial"]
    models = ["model-int8.onnx", "model-fused.onnx"]
    long_ago = time.time() - EXPORT_TIMEOUT_S - 60
    for name in [*left, *going, *models]:
        (tmp_path / name).write_bytes(b"x")
    for name in [*left, *models]:
        os.utime(tmp_path / name, (long_ago, long_ago))
    _remove_left_over(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*going, *models])

"""The model back-ends: ONNX Runtime (the default) gives torch's vectors; what it cannot run uses torch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from mdrag.embedder import Embedder, resolve_model

TEXTS = [
    "How do I restore a backup of the notes database?",
    "Get-Process lists the processes running on the local computer.",
    "# Groceries\n\n- eggs\n- flour\n- a very long list " + "of things " * 200,  # past one window
]


def test_the_default_back_end_is_onnx_and_keeps_torchs_model_id(embedder):
    assert embedder.backend == "onnx"
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"  # an index needs no rebuild


def test_onnx_gives_the_vectors_torch_gives(embedder):
    torch_embedder = Embedder(backend="torch")
    onnx = embedder.embed(TEXTS)
    reference = torch_embedder.embed(TEXTS)
    assert onnx.shape == reference.shape == (3, 384)
    cosines = np.sum(onnx * reference, axis=1)
    assert cosines.min() > 0.9999, cosines
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


def test_int8_vectors_carry_their_own_model_id():
    # int8 vectors are close to fp32 ones but not the same: an index must never mix the two.
    assert Embedder(backend="onnx-int8").model_id.endswith("+onnx-int8")


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

"""Export model: `python -m mdrag.embedding.export_model SOURCE FOLDER [--int8]`, run once, in a child.

The export needs torch (~1 GB mapped, never given back); the embedder runs this in a child
process so that the process that embeds, a daemon above all, only ever loads ONNX Runtime.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import warnings
from pathlib import Path
from typing import Any

TEMPORARY = ".model-"  # the plain export, when it is only an input: TEMPORARY + a run's own name
PARTIAL = ".partial"  # a file still being written
_RUN = secrets.token_hex(4)  # with the process id, a name no other run's files have


def export(source: str, folder: Path, quantized: bool) -> Path:
    """The model of `source` in `folder`: model-int8.onnx, or model-fused.onnx (BERT), else model.onnx.

    The plain export is only the input of the other two: made under a name of this run's own
    (another process may be exporting too) and removed after, it does not stay as 90 MB of the
    cache that no back-end loads. A run killed midway leaves its files: the next removes them.
    """
    folder.mkdir(parents=True, exist_ok=True)
    kept = not quantized and not is_bert(source)
    fp32 = folder / ("model.onnx" if kept else f"{TEMPORARY}{_own()}.onnx")
    try:
        if not fp32.exists():
            _export(source, fp32)
        if not quantized:
            return _fuse(source, fp32, folder / "model-fused.onnx")
        from onnxruntime.quantization import QuantType, quantize_dynamic

        int8 = folder / "model-int8.onnx"
        partial = int8.with_suffix(f".{_own()}{PARTIAL}")
        # Per-channel int8 weights on the matrix products only: the embedding table and
        # per-tensor scales cost accuracy (cosine to fp32 0.95 instead of 0.99) for little speed.
        quantize_dynamic(
            fp32, partial, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], per_channel=True
        )
        partial.replace(int8)
        return int8
    finally:
        if not kept:
            fp32.unlink(missing_ok=True)


def _own() -> str:
    """This run's part of its files' names: process ids repeat across containers sharing a cache."""
    return f"{os.getpid()}-{_RUN}"


def is_bert(source: str) -> bool:
    """Whether ONNX Runtime can fuse the model's kernels (a BERT, as MiniLM is)."""
    return _config(source).get("model_type") == "bert"


def _config(source: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((Path(source) / "config.json").read_text())
    return config


def _fuse(source: str, fp32: Path, fused: Path) -> Path:
    """BERT's attention, layer norms and GELU fused into single ONNX Runtime kernels (same
    vectors, cosine 1.0000; ~1.3x faster on 2 cores); the plain export for other architectures."""
    config = _config(source)
    if config.get("model_type") != "bert":
        return fp32
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(
        str(fp32),
        model_type="bert",
        num_heads=config["num_attention_heads"],
        hidden_size=config["hidden_size"],
    )
    partial = fused.with_suffix(f".{_own()}{PARTIAL}")
    optimized.save_model_to_file(str(partial))  # under this process's name (see export)
    partial.replace(fused)
    return fused


def _export(source: str, target: Path) -> None:
    import torch
    from transformers import AutoModel

    class Hidden(torch.nn.Module):
        """The transformer's last hidden state, the one output mean pooling needs."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    model = Hidden(AutoModel.from_pretrained(source).eval())
    ids = torch.ones(2, 16, dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    partial = target.with_suffix(f".{_own()}{PARTIAL}")
    # The tracer warns about Python branches in the model's code that the export keeps as
    # traced (correct for these inputs); a daemon's first start need not print them.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(partial),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )
    partial.replace(target)  # a crash mid-export never leaves a half file under the real name


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--int8"):
        print("usage: python -m mdrag.embedding.export_model SOURCE FOLDER [--int8]", file=sys.stderr)
        return 2
    print(export(argv[0], Path(argv[1]), quantized=len(argv) == 3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

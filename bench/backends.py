"""Encode speed of the model back-ends (torch, onnx, onnx-int8) on the same texts, in one run.

    python -m bench.backends [--files N] [--work DIR] [--texts 1500] [--rounds 3]

The texts are what the pipeline embeds for the corpus (read back from an index of the work dir,
built first if needed), a seeded sample. Rounds interleave the back-ends so that the machine's
noise falls on all of them alike; reported are median seconds, texts/s, the speed-up over torch,
and the cosine between each back-end's vectors and torch's (the quality cost, before `make eval`).
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np

from bench import harness
from bench.cold import embedded_texts

BACKENDS = ("torch", "onnx", "onnx-int8")


def measure(texts: list[str], rounds: int = 3) -> dict[str, Any]:
    from mdrag.embedding.embedder import Embedder

    embedders = {name: Embedder(backend=name) for name in BACKENDS}
    for embedder in embedders.values():
        embedder.embed(texts[:32])  # load, export on first use, warm up
    seconds: dict[str, list[float]] = {name: [] for name in BACKENDS}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, embedder in embedders.items():
            started = time.perf_counter()
            vectors[name] = embedder.embed(texts)
            seconds[name].append(time.perf_counter() - started)
    torch_s = harness.spread(seconds["torch"], 2)["median"]
    result: dict[str, Any] = {"texts": len(texts), "rounds": rounds, "backends": {}}
    for name in BACKENDS:
        median = harness.spread(seconds[name], 2)
        cosine = (vectors[name] * vectors["torch"]).sum(axis=1)
        result["backends"][name] = {
            "seconds": median,
            "texts_per_s": round(len(texts) / median["median"], 1),
            "speedup_vs_torch": round(torch_s / median["median"], 2),
            "cosine_to_torch": {"mean": round(float(cosine.mean()), 4), "min": round(float(cosine.min()), 4)},
        }
    return result


def summary(result: dict[str, Any]) -> str:
    parts = [
        f"{name} {b['texts_per_s']} texts/s (x{b['speedup_vs_torch']}, "
        f"cosine to torch {b['cosine_to_torch']['mean']}, min {b['cosine_to_torch']['min']})"
        for name, b in result["backends"].items()
    ]
    return f"back-ends on {result['texts']} texts, median of {result['rounds']}: " + "; ".join(parts)


def sample(work: harness.Work, count: int) -> list[str]:
    texts = embedded_texts(work.db)
    return random.Random(11).sample(texts, min(count, len(texts)))


def main() -> None:
    cli = harness.parser(__doc__, files_default=200)
    cli.add_argument("--texts", type=int, default=1500)
    cli.add_argument("--rounds", type=int, default=3)
    harness.figure_main(
        "backends", cli, lambda work, args: measure(sample(work, args.texts), args.rounds), summary
    )


if __name__ == "__main__":
    main()

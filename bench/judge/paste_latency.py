"""Paste test and latency of the judge.

Paste test: for each sealed/hugo question, a WRONG section (its best-ranked hit on a page that is
not relevant; for unanswerable questions, its top hit) is scored as is and with the question's
text pasted into it (after the title, so truncation keeps it). A judge that spots pasted words
jumps; one that reads meaning should barely move. The bi-encoder's cosine is measured alike.

Latency: single (question, top-1 passage) pairs at max_length 128 and batches of the top 3,
torch 2 threads, under `nice -n 10` on the shared 2-core machine.

usage: python -m bench.judge.paste_latency [MODEL_DIR]  -> .eval-work/judge/paste_latency_<MODEL>.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.judge import common as C
from bench.judge.evaluate import judge, load_rows, logits


def main() -> None:
    import numpy as np

    def sig(x: Any) -> Any:
        return 1 / (1 + np.exp(-np.array(x)))

    model_dir = sys.argv[1] if len(sys.argv) > 1 else str(C.DATA / "model")
    ce = judge(model_dir)
    rows = [r for r in load_rows() if r["group"] != "train"]
    base: list[tuple[str, str]] = []
    pasted: list[tuple[str, str]] = []
    for r in rows:
        wrong = next((h for h in r["hits"] if not h["rel"]), None)
        if wrong is None:
            continue
        title_and_text = C.passage(wrong["doc"], wrong["text"])
        title, _, rest = title_and_text.partition(" | ")
        base.append((r["text"], title_and_text))
        pasted.append(
            (r["text"], f"{title} | {r['text']} {rest}" if rest else f"{r['text']} {title_and_text}")
        )
    b, p = logits(ce, base), logits(ce, pasted)
    d = np.array(p) - np.array(b)
    bi = C.bi_encoder()
    qe = bi.encode([q for q, _ in base], normalize_embeddings=True, batch_size=32)
    be = bi.encode([x for _, x in base], normalize_embeddings=True, batch_size=32)
    pe = bi.encode([x for _, x in pasted], normalize_embeddings=True, batch_size=32)
    cos_b, cos_p = (qe * be).sum(1), (qe * pe).sum(1)
    out: dict[str, Any] = {
        "pairs": len(b),
        "judge_logit_mean_change": round(float(d.mean()), 3),
        "judge_logit_median_change": round(float(np.median(d)), 3),
        "judge_prob_mean_before": round(float(sig(b).mean()), 3),
        "judge_prob_mean_after": round(float(sig(p).mean()), 3),
        "judge_prob_mean_change": round(float((sig(p) - sig(b)).mean()), 3),
        "share_crossing_0.5": round(float(((sig(b) < 0.5) & (sig(p) >= 0.5)).mean()), 3),
        "judge_logit_sd_before": round(float(np.std(b)), 3),
        "cosine_mean_before": round(float(cos_b.mean()), 3),
        "cosine_mean_after": round(float(cos_p.mean()), 3),
    }
    # latency
    pairs = base[:120]
    single = []
    for q, x in pairs[:100]:
        t = time.perf_counter()
        logits(ce, [(q, x)])
        single.append((time.perf_counter() - t) * 1000)
    triple = []
    for i in range(0, 90, 3):
        t = time.perf_counter()
        logits(ce, pairs[i : i + 3])
        triple.append((time.perf_counter() - t) * 1000)
    tok = ce.tokenizer
    lens = [len(tok(q, x, truncation="only_second", max_length=128)["input_ids"]) for q, x in pairs]
    out |= {
        "latency_ms_p50_single": round(statistics.median(single), 1),
        "latency_ms_p90_single": round(sorted(single)[int(0.9 * len(single))], 1),
        "latency_ms_p50_top3_batch": round(statistics.median(triple), 1),
        "tokens_per_pair_median": statistics.median(lens),
        "load_avg": Path("/proc/loadavg").read_text().split()[:3],
    }
    print(json.dumps(out, indent=1))
    name = Path(model_dir).name
    (C.work_dir() / f"paste_latency_{name}.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

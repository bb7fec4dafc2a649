"""Train the cross-encoder judge (issue #32 section 3) from the bundled all-MiniLM-L6-v2 weights.

Training data (never otel, never hugo, never a split == "test" question):
  (a) train-split questions of powershell/eips/tldr (.eval-work/judge/cands_*.jsonl, from prep):
      positives = the mdrag hit(s) on a grade-2 page; negatives = the top hits on non-relevant pages;
      unanswerable questions: their top hits, all negatives;
  (b) hand-written paraphrase questions (.eval-work/judge/synthetic.jsonl, from neighbours) for
      sampled sections of powershell/eips/tldr pages judged relevant to no test question: the
      section as positive, mdrag's dense neighbours on other pages as negatives; hand-written near
      misses (bench/data/judge/near_misses.tsv) with their section as a negative.

Cross-fitting: `--fold K --folds 2` trains on (b) and the train questions NOT in fold K, so the
questions of fold K get out-of-fold judge scores for fitting the combination; `--fold -1` (the
default) trains on everything (the judge used on the sealed split and hugo).

usage: python -m bench.judge.train [--fold -1] [--out .eval-work/judge/model] [--epochs 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from pathlib import Path

from bench.judge import common as C

MAX_LENGTH = 128
# freshly initialised: the classifier, and the pooler (absent from a bi-encoder checkpoint)
HEAD = ("classifier", "bert.pooler")


def fold_of(qid: str, folds: int) -> int:
    return hashlib.sha256(qid.encode()).digest()[0] % folds


def passage(doc: str, text: str) -> str:
    return C.passage(doc, text)


def build_pairs(fold: int, folds: int) -> list[tuple[str, str, float]]:
    pairs: list[tuple[str, str, float]] = []
    for vault in C.TRAIN_VAULTS:
        with (C.DATA / f"cands_{vault}.jsonl").open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        for r in rows:
            if r["split"] != "train":
                continue
            if fold >= 0 and fold_of(r["q"], folds) == fold:
                continue
            q = r["text"]
            relevant_any = {h["doc"] for h in r["hits"] if h["rel"]}
            relevant_any |= {p["doc"] for p in r["positives"]}
            # a page of the same name as a relevant one (tldr's per-platform copies) is no negative
            relevant_names = {d.rsplit("/", 1)[-1] for d in relevant_any}
            if r["answerable"]:
                for p in r["positives"][:2]:
                    pairs.append((q, passage(p["doc"], p["text"]), 1.0))
            seen: set[str] = set()
            for h in r["hits"]:
                if h["rel"] or h["doc"] in relevant_any or h["doc"] in seen:
                    continue
                if h["doc"].rsplit("/", 1)[-1] in relevant_names:
                    continue
                seen.add(h["doc"])
                pairs.append((q, passage(h["doc"], h["text"]), 0.0))
                if len(seen) >= 3:
                    break
    with (C.DATA / "synthetic.jsonl").open(encoding="utf-8") as fh:
        synthetic = [json.loads(line) for line in fh]
    for r in synthetic:
        q = r["question"]
        pairs.append((q, r["passage"], float(r["label"])))
        for n in r["negatives"][: 3 if r["label"] else 1]:
            pairs.append((q, passage(n["doc"], n["text"]), 0.0))
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fold", type=int, default=-1)
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--head-lr", type=float, default=2e-3)
    ap.add_argument("--out", default=str(C.DATA / "model"))
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument(
        "--pool",
        choices=("cls", "mean"),
        default="cls",
        help="cls: the stock BERT pooler (random in a bi-encoder checkpoint); mean: the "
        "classifier reads the mean of the joint sequence's token states",
    )
    args = ap.parse_args()

    import torch
    from sentence_transformers import CrossEncoder

    torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    pairs = build_pairs(args.fold, args.folds)
    pos = sum(1 for *_, y in pairs if y > 0.5)
    print(f"pairs {len(pairs)} (positives {pos})", flush=True)
    (C.work_dir() / f"pairs_fold{args.fold}.jsonl").write_text(
        "".join(json.dumps({"q": q, "p": p, "y": y}) + "\n" for q, p, y in pairs)
    )

    ce = CrossEncoder(C.minilm_dir(), num_labels=1, max_length=MAX_LENGTH, device="cpu")
    model, tok = ce.model, ce.tokenizer
    model.train()
    steps_per_epoch = (len(pairs) + args.batch - 1) // args.batch
    total = int(steps_per_epoch * args.epochs)
    # the classifier (and the pooler, absent from a bi-encoder checkpoint) start from random
    # weights: they need a far larger step than the encoder to move in a few dozen steps
    head = [p for n, p in model.named_parameters() if n.startswith(HEAD)]
    body = [p for n, p in model.named_parameters() if not n.startswith(HEAD)]
    opt = torch.optim.AdamW(
        [{"params": body, "lr": args.lr}, {"params": head, "lr": args.head_lr}], weight_decay=0.01
    )
    warm = max(1, total // 10)

    def schedule(s: int) -> float:
        return min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    # positives are about 1 in 4: weight them so the classes count alike
    pos_weight = torch.tensor((len(pairs) - pos) / max(pos, 1))
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    started, step = time.time(), 0
    order: list[int] = []
    while step < total:
        if not order:
            order = list(range(len(pairs)))
            rng.shuffle(order)
        batch = [pairs[i] for i in order[: args.batch]]
        order = order[args.batch :]
        enc = tok(
            [q for q, _, _ in batch],
            [p for _, p, _ in batch],
            padding=True,
            truncation="only_second",
            max_length=MAX_LENGTH,
            return_tensors="pt",
        )
        logits = C.forward(model, enc, args.pool)
        loss = loss_fn(logits, torch.tensor([y for *_, y in batch]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        step += 1
        if step % 10 == 0 or step == total:
            print(f"step {step}/{total} loss {loss.item():.4f} {time.time() - started:.0f}s", flush=True)
    model.eval()
    ce.save(args.out)
    (Path(args.out) / "judge_pool.txt").write_text(args.pool)
    print("saved", args.out, f"{time.time() - started:.0f}s", flush=True)


if __name__ == "__main__":
    main()

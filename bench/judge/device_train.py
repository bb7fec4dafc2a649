"""Train a cross-encoder judge per vault left out and score that vault's sections, on a GPU.

Runs where only torch and transformers are (the device machine): reads `.judge/data.json.gz`
(bench.judge.lovo_pairs) and `.judge/model` (the bundled all-MiniLM-L6-v2 weights, as fp16 to
travel), writes `$OUT/scores.json` after each vault and, for a config named in SAVE, the judge
trained on every vault (its word embeddings left out: they stay the bundled model's, frozen).

    PASTE=1 SAVE=L3 python3 bench/judge/device_train.py NAME:LAYERS:PIECES:EPOCHS[:SHARE][,...] [VAULT,...]

Each judge starts from the bi-encoder's first LAYERS layers with a fresh one-logit head
(BertForSequenceClassification), reads "question [SEP] title, heading path, section text" cut
at PIECES word pieces, and is fitted with binary cross-entropy (right sections weighted to
balance the wrong ones), AdamW (3e-5, the head 3e-4), warm-up then linear decay, bf16. PASTE=1
adds, per question, one wrong section with the question pasted into it as another wrong pair.
SHARE (default 1) trains on that share of each fold's questions (drawn the same way for every
vault and config), all the pairs of each kept: a learning curve, to tell whether more questions
would lift the judge.
The paste check scores each vault's unanswerable questions against their first section plain,
with the question pasted a third of the way in, and with its words shuffled and pasted.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import sys
import time
from typing import Any

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

DEVICE = os.environ.get("JUDGE_DEV", "cuda")
OUT = os.environ.get("OUT", "/tmp/judge-out")
DATA = os.environ.get("JUDGE_DATA", ".judge/data.json.gz")
MODEL = ".judge/model"


def pasted(question: str, text: str) -> str:
    """The section with the question pasted a third of the way into its text."""
    title, path, body = [*text.split("\n", 2), "", ""][:3]
    cut = len(body) // 3
    return f"{title}\n{path}\n{body[:cut]} {question} {body[cut:]}"


def shuffled(question: str) -> str:
    words = question.split()
    random.Random(question).shuffle(words)
    return " ".join(words)


class Judge:
    def __init__(self, texts: list[str], layers: int, pieces: int) -> None:
        self.texts, self.pieces = texts, pieces
        self.tok = AutoTokenizer.from_pretrained(MODEL)
        model = AutoModelForSequenceClassification.from_pretrained(
            MODEL, num_labels=1, num_hidden_layers=layers
        )
        self.model = model.float().to(DEVICE)
        # Shared with the bundled bi-encoder, so a shipped judge would carry only its other weights.
        self.model.bert.embeddings.word_embeddings.weight.requires_grad_(False)

    def encode(self, questions: list[str], texts: list[str]) -> Any:
        return self.tok(
            questions,
            texts,
            truncation="only_second",
            max_length=self.pieces,
            padding=True,
            return_tensors="pt",
        ).to(DEVICE)

    def fit(self, pairs: list[list[Any]], epochs: int, batch: int = 32) -> None:
        m = self.model
        is_head = {n: n.startswith("classifier") or "pooler" in n for n, _ in m.named_parameters()}
        params = [(n, p) for n, p in m.named_parameters() if p.requires_grad]
        opt = torch.optim.AdamW(
            [
                {"params": [p for n, p in params if not is_head[n]], "lr": 3e-5},
                {"params": [p for n, p in params if is_head[n]], "lr": 3e-4},
            ],
            weight_decay=0.01,
        )
        right = sum(y for _, _, y in pairs)
        weight = torch.tensor((len(pairs) - right) / max(right, 1), device=DEVICE)
        lossf = torch.nn.BCEWithLogitsLoss(pos_weight=weight)
        steps = epochs * math.ceil(len(pairs) / batch)
        warm = max(steps // 10, 1)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps)
        )
        m.train()
        gen = torch.Generator().manual_seed(57)
        for epoch in range(epochs):
            order, total = torch.randperm(len(pairs), generator=gen).tolist(), 0.0
            for start in range(0, len(order), batch):
                chunk = [pairs[i] for i in order[start : start + batch]]
                x = self.encode([q for q, _, _ in chunk], [self.texts[s] for _, s, _ in chunk])
                y = torch.tensor([float(label) for _, _, label in chunk], device=DEVICE)
                with torch.autocast(DEVICE, dtype=torch.bfloat16):
                    z = m(**x).logits.squeeze(-1)
                loss = lossf(z.float(), y)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
                opt.step()
                sched.step()
                total += loss.item() * len(chunk)
            print(f"  epoch {epoch} loss {total / len(pairs):.4f}", flush=True)
        m.eval()

    @torch.no_grad()
    def score(self, questions: list[str], texts: list[str], batch: int = 256) -> list[float]:
        out: list[float] = []
        for start in range(0, len(questions), batch):
            x = self.encode(questions[start : start + batch], texts[start : start + batch])
            with torch.autocast(DEVICE, dtype=torch.bfloat16):
                out += self.model(**x).logits.squeeze(-1).float().tolist()
        return [round(v, 4) for v in out]


def with_pastes(pairs: list[list[Any]], texts: list[str]) -> list[list[Any]]:
    """One more wrong pair per question: one of its wrong sections with the question pasted in."""
    rnd, wrong = random.Random(57), dict[str, list[int]]()
    for q, sid, y in pairs:
        if not y:
            wrong.setdefault(q, []).append(sid)
    extra = []
    for q, sids in wrong.items():
        texts.append(pasted(q, texts[rnd.choice(sids)]))
        extra.append([q, len(texts) - 1, 0])
    return pairs + extra


def some_questions(pairs: list[list[Any]], share: float) -> list[list[Any]]:
    """The pairs of `share` of the questions, each question kept or not by a seeded draw."""
    if share >= 1:
        return pairs
    asked = sorted({q for q, _, _ in pairs})
    kept = set(random.Random(57).sample(asked, round(len(asked) * share)))
    return [pair for pair in pairs if pair[0] in kept]


def main() -> None:
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    texts, folds = data["texts"], data["folds"]
    configs = [c.split(":") for c in sys.argv[1].split(",")]
    vaults = sys.argv[2].split(",") if len(sys.argv) > 2 else list(folds)
    save = os.environ.get("SAVE", "").split(",")
    torch.manual_seed(57)
    everything: dict[str, Any] = {}
    for name, layers, pieces, epochs, *share in configs:
        result = everything[name] = {}
        for vault in [v for v in vaults if v != "all" or name in save]:
            began, fold = time.time(), folds[vault]
            judge = Judge(texts, int(layers), int(pieces))
            pairs = some_questions(fold["train"], float(share[0]) if share else 1.0)
            pairs = with_pastes(pairs, texts) if os.environ.get("PASTE") else pairs
            judge.fit(pairs, int(epochs))
            qs = [q for q, _ in fold["paste"]]
            firsts = [texts[i] for _, i in fold["paste"]]
            result[vault] = {
                "score": judge.score([q for q, _ in fold["score"]], [texts[i] for _, i in fold["score"]]),
                "paste_plain": judge.score(qs, firsts),
                "paste_pasted": judge.score(qs, [pasted(q, t) for q, t in zip(qs, firsts, strict=True)]),
                "paste_shuffled": judge.score(
                    qs, [pasted(shuffled(q), t) for q, t in zip(qs, firsts, strict=True)]
                ),
            }
            print(f"{name} {vault}: {len(pairs)} pairs, {time.time() - began:.1f}s", flush=True)
            with open(f"{OUT}/scores.json", "w") as fh:
                json.dump(everything, fh)
            if vault == "all":
                from safetensors.torch import save_file

                state = {k: t.half().contiguous() for k, t in judge.model.state_dict().items()}
                state.pop("bert.embeddings.word_embeddings.weight")
                save_file(state, f"{OUT}/judge-{name}.safetensors")


if __name__ == "__main__":
    main()

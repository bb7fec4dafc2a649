"""Counting: a note's texts measured by the model's tokenizer in bounded batches, for sections."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

TokenCounter = Callable[[Sequence[str]], list[int]]

# One tokenizer call for a whole note's words took 1 GB; these keep a call's memory small.
COUNT_BATCH = 512  # texts per call
COUNT_CHARS = 65_536  # and characters: a longer text is counted in pieces cut at white space


def counted(
    count_tokens: TokenCounter, text: str, ranges: Iterable[tuple[int, int]]
) -> Iterator[tuple[int, int, int]]:
    """(start, end, tokens) of each range of the text, in order, counted in batches of COUNT_BATCH
    texts or COUNT_CHARS characters. A longer text is counted in pieces cut at white space, where
    the model's word pieces never cross, and their counts summed."""
    batch: list[tuple[int, int]] = []
    size = 0
    for start, end in ranges:
        batch.append((start, end))
        size += end - start
        if len(batch) >= COUNT_BATCH or size >= COUNT_CHARS:
            yield from _count_batch(count_tokens, text, batch)
            batch, size = [], 0
    yield from _count_batch(count_tokens, text, batch)


def _count_batch(
    count_tokens: TokenCounter, text: str, batch: list[tuple[int, int]]
) -> Iterator[tuple[int, int, int]]:
    short = [(s, e) for s, e in batch if e - s <= COUNT_CHARS]
    counts = dict(zip(short, count_tokens([text[s:e] for s, e in short]) if short else [], strict=True))
    for start, end in batch:
        if (start, end) in counts:
            yield start, end, counts[(start, end)]
        else:
            parts = pieces(text, COUNT_CHARS, start, end)
            yield start, end, sum(tokens for _, _, tokens in counted(count_tokens, text, parts))


def pieces(text: str, limit: int, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """text[start:end] as (start, end) pieces of at most `limit` characters, each cut after the
    last line break it holds, else after its last space, else at the limit."""
    end = len(text) if end is None else end
    while end - start > limit:
        cut = text.rfind("\n", start, start + limit) + 1
        if cut <= start:
            cut = max(text.rfind(" ", start, start + limit), text.rfind("\t", start, start + limit)) + 1
        if cut <= start:
            cut = start + limit
        yield start, cut
        start = cut
    yield start, end

"""Read-ahead: a generator run by a reader thread a bounded number of items ahead of its consumer."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class ReadCancelled(Exception):
    """`cancel` was set while the consumer waited for the reader."""


def read_ahead(
    items: Iterator[T],
    depth: int,
    cancel: threading.Event | None = None,
    weigh: Callable[[T], int] | None = None,
    budget: int = 0,
) -> Generator[T, None, None]:
    """`items`, produced by a reader thread up to `depth` ahead (parsing overlaps embedding), and,
    with `weigh`, never more than `budget` of weight ahead but the one item in hand (256 notes of
    megabytes each, read and sectioned, held gigabytes).

    Closing the generator stops the reader after the file it is on; its errors surface here.
    A set `cancel` ends a wait for the reader with ReadCancelled, and the reader is then left
    to stop by itself (sectioning one huge file takes seconds the consumer need not wait).
    """
    ahead: queue.Queue[tuple[str, Any, int]] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    held = [0]  # the weight of the items put and not yet taken
    room = threading.Condition()

    def put(kind: str, value: Any) -> bool:
        weight = weigh(value) if weigh is not None and kind == "item" else 0
        with room:
            while held[0] and held[0] + weight > budget and not stop.is_set():
                room.wait(0.1)
            held[0] += weight
        while not stop.is_set():
            try:
                ahead.put((kind, value, weight), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in items:
                if not put("item", item):
                    return
            put("end", None)
        except BaseException as exc:  # handed to the consumer, which raises it in its own thread
            put("error", exc)

    reader = threading.Thread(target=read, name="mdrag-reader", daemon=True)
    reader.start()
    abandoned = False
    try:
        while True:
            try:
                kind, value, weight = ahead.get(timeout=None if cancel is None else 0.1)
            except queue.Empty:
                assert cancel is not None
                if cancel.is_set():
                    abandoned = True
                    raise ReadCancelled from None
                continue
            with room:
                held[0] -= weight
                room.notify()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        if not abandoned:
            reader.join()

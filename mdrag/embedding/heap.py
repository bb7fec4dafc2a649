"""The process's C heap: glibc malloc set up so memory freed after indexing goes back to the system.

Indexing allocates and frees tens of MB at a time (a model batch's tensors, its tokenizer
output, a write batch's messages) on several threads: the writer, the reader and a fresh lane
thread per model call. glibc gives each thread an arena of its own (up to 8 per core) and
keeps each arena's free top, up to 64 MB once large blocks have come and gone, while
`malloc_trim` hands back only the main arena's top; so a daemon kept most of its first index's
peak for its whole life. With every thread on the main arena it gives it back (figures:
docs/design/daemon.md, "Memory after indexing"; `python -m bench.first_serve`). Elsewhere than glibc
both calls do nothing.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

M_ARENA_MAX = -8  # glibc's mallopt parameter number
ARENAS = 1


def available() -> bool:
    """Whether this process's C library has glibc's malloc controls (else the calls do nothing)."""
    return _glibc() is not None


def share_one_arena() -> None:
    """Let every thread allocate from the main arena. Call it before the threads start: a thread
    that has allocated keeps the arena it had."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(M_ARENA_MAX, ARENAS)


def give_back() -> None:
    """Return the heap's free pages to the system (after a model batch, say)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.cache
def _glibc() -> Any:
    """The C library's malloc controls, when they are glibc's; else None (musl, macOS)."""
    try:
        process = ctypes.CDLL(None)  # the symbols already loaded: no library search
    except OSError:
        return None
    return process if hasattr(process, "malloc_trim") and hasattr(process, "mallopt") else None

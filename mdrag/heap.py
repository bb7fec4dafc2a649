"""The process's C heap: glibc malloc set up so memory freed after indexing goes back to the system.

Indexing allocates and frees tens of MB at a time (a model batch's tensors, its tokenizer
output, a write batch's messages) on several threads: the writer, the reader and a fresh lane
thread per model call. glibc gives each thread an arena of its own (up to 8 per core) and
keeps each arena's free top, up to 64 MB once large blocks have come and gone; `malloc_trim`
hands back only the main arena's top. So a daemon that had just indexed 993 notes held 420-443 MB
idle where a restarted one holds 264 MB. With the threads sharing one arena, which `malloc_trim`
trims, it held 284 MB, its peak fell from ~730 to ~510 MB, and indexing ran as fast
(bench/first_serve_memory.py). Elsewhere than glibc both calls do nothing.
"""

from __future__ import annotations

import ctypes
from typing import Any

M_ARENA_MAX = -8  # glibc's mallopt parameter number
ARENAS = 1

_libc: Any = None


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


def _glibc() -> Any:
    """The C library's malloc controls, when they are glibc's; else None (musl, macOS)."""
    global _libc
    if _libc is None:
        try:
            process = ctypes.CDLL(None)  # the symbols already loaded: no library search
            _libc = process if hasattr(process, "malloc_trim") and hasattr(process, "mallopt") else False
        except (OSError, AttributeError):
            _libc = False
    return _libc or None

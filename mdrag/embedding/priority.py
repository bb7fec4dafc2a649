"""CPU priority of a thread: indexing's model runs yield the cores to searches and to other programs."""

from __future__ import annotations

import os
import sys
import threading

# How much nicer (lower in CPU priority) than its process a background thread runs. Linux's
# scheduler weighs nice +10 at about a tenth of nice 0, so a search's model run, at the process's
# own priority, gets ~90% of a core that an indexing run also wants; on idle cores nice costs nothing.
BACKGROUND_NICE = 10


def lower_this_thread() -> None:
    """Make the calling thread nicer by BACKGROUND_NICE (Linux, where nice is per thread); elsewhere,
    or where the call is refused (a sandbox), nothing: the thread runs at the process's priority."""
    if not sys.platform.startswith("linux"):
        return  # nice is per process there: the daemon's searches would be lowered too
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + BACKGROUND_NICE)
    except OSError:
        pass

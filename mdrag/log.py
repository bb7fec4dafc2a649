"""Logging set-up: loguru to stderr, one line per event, friendly to journald."""

from __future__ import annotations

import sys

from loguru import logger

_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} {level: <7} {name}: {message}"
_JOURNAL_FORMAT = "{level: <7} {name}: {message}"


def configure_logging(level: str = "INFO") -> None:
    """Send mdrag's log to stderr at `level`; under systemd, journald adds the timestamps."""
    import os

    logger.remove()
    under_journald = bool(os.environ.get("JOURNAL_STREAM"))
    logger.add(
        sys.stderr,
        level=level.upper(),
        format=_JOURNAL_FORMAT if under_journald else _FORMAT,
        backtrace=False,
        diagnose=False,
    )

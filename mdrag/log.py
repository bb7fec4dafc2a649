"""Logging set-up: loguru to stderr, one line per event, friendly to journald."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from loguru import logger

from mdrag.termtext import visible

if TYPE_CHECKING:
    from loguru import Record

_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} {level: <7} {name}: {message}"
_JOURNAL_FORMAT = "{level: <7} {name}: {message}"


def configure_logging(level: str = "INFO") -> None:
    """Send mdrag's log to stderr at `level`; under systemd, journald adds the timestamps."""
    import os

    logger.remove()
    # A line may name a note or quote what it holds: its controls reach no terminal, shown as ?.
    logger.configure(patcher=_clean_message)
    under_journald = bool(os.environ.get("JOURNAL_STREAM"))
    logger.add(
        sys.stderr,
        level=level.upper(),
        format=_JOURNAL_FORMAT if under_journald else _FORMAT,
        backtrace=False,
        diagnose=False,
    )


def _clean_message(record: Record) -> None:
    record["message"] = visible(record["message"])

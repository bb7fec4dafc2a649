"""Config files kept parsed: a search process reads the user's YAML as JSON while the file is unchanged.

Importing a YAML parser and reading the example config costs a process ~15-20 ms, as much as
all of mdrag's own imports, and every `mdrag search` of a user with a config file paid it. So a
config file's text and data are kept as JSON under `$XDG_CACHE_HOME/mdrag/config/`, and used
while the file's text is the same (read each time: microseconds, and no file-system clock or
attribute cache can make a changed file look unchanged). Best effort: a cache that cannot be
read or written is passed by, never an error. Only an entry that is a plain file of this user's,
writable by no one else, is believed. A file that holds credentials (a token, a password, a
URL with a user in it) is never copied there.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mdrag.errors import UnsafePathError
from mdrag.files import private


def parsed(path: Path, parse: Callable[[str], Any], folder: Path) -> Any:
    """`parse` of the file's text, or what it gave when that same text was last parsed (kept in
    `folder`).

    `parse` raises for a text it cannot read: nothing is kept then, so the error comes every time.
    """
    real = path.resolve()
    text = real.read_text(encoding="utf-8")  # the caller reports the file's own error
    # A checksum of the path names the entry (hashlib's OpenSSL would cost a process ~2.5 ms);
    # two paths that share one only take turns in it, since the entry names its path.
    entry = folder / f"{zlib.crc32(os.fsencode(real)):08x}.json"
    kept = _own_record(entry)
    if kept is not None and kept.get("path") == str(real) and kept.get("text") == text and "data" in kept:
        return kept["data"]
    data = parse(text)
    if not _holds_credentials(data):
        _keep(entry, {"path": str(real), "text": text, "data": data})
    return data


def _own_record(entry: Path) -> dict[str, Any] | None:
    """The entry's record when it is a plain file of this user's that no one else may write (a
    cache folder shared by mistake must not hand a command someone else's settings)."""
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        try:
            record = json.loads(handle.read())
        except (OSError, ValueError):
            return None
    return record if isinstance(record, dict) else None


def _holds_credentials(data: Any) -> bool:
    if isinstance(data, dict):
        return any(
            (str(k).endswith(("token", "password")) and v) or _holds_credentials(v) for k, v in data.items()
        )
    if isinstance(data, list):
        return any(_holds_credentials(v) for v in data)
    return isinstance(data, str) and "@" in data.partition("://")[2].partition("/")[0]


def _keep(entry: Path, record: dict[str, Any]) -> None:
    try:
        text = json.dumps(record)
    except (TypeError, ValueError):
        return  # a value JSON cannot hold (a YAML date): parsed each time, as before
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        scratch = entry.with_name(f".{entry.name}.{os.getpid()}")
        private.write_text(scratch, text, "the config cache")
        os.replace(scratch, entry)  # whole or not at all, for a process reading it meanwhile
    except (OSError, UnsafePathError):
        pass

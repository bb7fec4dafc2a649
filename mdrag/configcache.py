"""Config files kept parsed: a search process reads the user's YAML as JSON while the file is unchanged.

Importing a YAML parser and reading the example config costs a process ~15-20 ms, as much as
all of mdrag's own imports, and every `mdrag search` of a user with a config file paid it. So the
data of a config file is kept as JSON under `$XDG_CACHE_HOME/mdrag/config/`, stamped with the
file's device, inode, size, mtime and ctime: any write to the file (ctime no program can set back)
or a new file in its place parses it again. Best effort: a cache that cannot be read or written
is passed by, never an error. A file that holds a token (a Milvus server's credentials) is never
copied there.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mdrag import private
from mdrag.errors import UnsafePathError


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "mdrag" / "config"


def parsed(path: Path, parse: Callable[[str], Any]) -> Any:
    """`parse` of the file's text, or what it gave when the file was last parsed, unchanged since.

    `parse` raises for a file it cannot read: nothing is kept then, so the error comes every time.
    """
    real = path.resolve()
    try:
        info = real.stat()
    except OSError:
        return parse(real.read_text(encoding="utf-8"))  # the caller reports the file's own error
    stamp = [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
    # A checksum of the path names the entry (hashlib's OpenSSL would cost a process ~2.5 ms);
    # two paths that share one only take turns in it, since the entry names its path.
    entry = cache_dir() / f"{zlib.crc32(os.fsencode(real)):08x}.json"
    try:
        kept = json.loads(entry.read_text(encoding="utf-8"))
        if kept["path"] == str(real) and kept["stamp"] == stamp:
            return kept["data"]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or unreadable: parse the file
    data = parse(real.read_text(encoding="utf-8"))
    if not _holds_token(data):
        _keep(entry, {"path": str(real), "stamp": stamp, "data": data})
    return data


def _holds_token(data: Any) -> bool:
    if isinstance(data, dict):
        return any((str(k).endswith("token") and v) or _holds_token(v) for k, v in data.items())
    return isinstance(data, list) and any(_holds_token(v) for v in data)


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

"""Regular files: a note's bytes, for the indexer or a request, only from a regular file, never waiting.

Opening a FIFO for reading waits for a writer, for ever, and a device may stream without end: a
path that became one of these (a note deleted and a FIFO made in its place after the scan, a
request naming `/dev/zero`) once held the indexer, or a request thread with the store's gate and
the daemon's stop. So a path is looked at before it is opened, opened without waiting
(O_NONBLOCK) and without following a link that was not one a moment before (O_NOFOLLOW), and
checked again on the open descriptor.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from mdrag.errors import DocumentError
from mdrag.notes.pathtext import to_fs

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path` (its stored form, see pathtext), or a DocumentError
    saying why not. At most `limit` + 1 bytes are read, so a caller can tell a file over it."""
    try:
        with open_regular(to_fs(path)) as handle:
            return handle.read() if limit is None else handle.read(limit + 1)
    except FileNotFoundError:
        raise DocumentError("file disappeared before it could be read") from None
    except OSError as exc:
        raise DocumentError(f"cannot read file: {exc.strerror or exc}") from None


def open_regular(fs: str) -> BinaryIO:
    """The regular file at the file-system path `fs`, open for reading; OSError as the system
    says it, or a DocumentError for a path that is no regular file (or became a link)."""
    _check(os.stat(fs).st_mode)  # a note may be a link to one: followed, and checked
    # A link now was a link when indexed: only then may the open follow one.
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(fs, flags if os.path.islink(fs) else flags | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DocumentError("file was replaced by a symbolic link; not read") from None
        raise
    try:
        _check(os.fstat(fd).st_mode)  # the path may have been swapped since it was looked at
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check(mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise DocumentError(f"not a note: the path is {kind}, not a regular file; not read")

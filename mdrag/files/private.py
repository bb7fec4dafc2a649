"""Private files: what mdrag keeps beside an index is its user's alone, and never written through a link.

The index holds the notes' text, so it and everything beside it (Milvus Lite's databases and
logs, the locks, the crash marker, the gap log: mdrag.files.indexfiles names them all) must be no more
readable than the notes' owner alone, whatever umask the shell had: the long-running commands
set umask 077 before they create anything (the Lite servers they start inherit it), and files
an older mdrag left open to others are closed at the next open. A file of mdrag's own is opened
with O_NOFOLLOW: a symbolic link in its place (to a note, say) is refused, never truncated or
appended to.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from mdrag.errors import UnsafePathError

PRIVATE_UMASK = 0o077


_user_umask: int | None = None  # the umask this process started with, before restrict_umask


def restrict_umask() -> None:
    """Files and folders made from now on, by this process and its children: 0600 and 0700."""
    global _user_umask
    previous = os.umask(PRIVATE_UMASK)
    if _user_umask is None:
        _user_umask = previous


def user_umask() -> int:
    """The user's own umask, for a program mdrag starts for them (an editor): not mdrag's."""
    if _user_umask is not None:
        return _user_umask
    current = os.umask(0)
    os.umask(current)
    return current


def open_file(path: Path, flags: int, what: str) -> int:
    """os.open with O_NOFOLLOW and mode 0600; a symbolic link at `path` is an UnsafePathError."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise linked(path, what) from None
        raise


def refuse_link(path: Path, what: str) -> None:
    """For a file another library opens (SQLite): refuse a symbolic link in its place."""
    if path.is_symlink():
        raise linked(path, what)


def linked(path: Path, what: str) -> UnsafePathError:
    return UnsafePathError(
        f"{what} {path} is a symbolic link (to {os.readlink(path)}); mdrag writes only files of its "
        "own there and will not write through a link: remove the link, then start again"
    )


def write_text(path: Path, text: str, what: str) -> None:
    """Replace a small file's text, refusing a symbolic link in its place (never its target)."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, what)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def tighten(paths: list[Path]) -> None:
    """Take group and other access off these files and folders of ours (left by an older mdrag
    or a shell's umask 022); a link, another user's file or a missing one is left alone."""
    closed = []
    for path in paths:
        try:
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid() or not info.st_mode & 0o077:
                continue
            path.chmod(stat.S_IMODE(info.st_mode) & ~0o077)
            closed.append(path.name)
        except OSError:
            continue
    if closed:
        from loguru import logger  # here: a command that only talks to the daemon never loads it

        logger.info("closed {} to other users: {}", paths[0].parent, ", ".join(sorted(closed)))

"""Trust: the socket's folder and the daemon at its end are the user's own, checked by both ends.

A daemon's socket is only as private as its folder: anyone who can write the folder can put a
socket of their own in its place, and every client would then show their answers as the notes'.
The fallback folder /tmp/mdrag-UID is the exposed case (another local user may make it first,
or make it a symbolic link into a folder of theirs). So the daemon makes the folder 0700 and
refuses one that is not the user's own; a client checks the same before it connects, and after
connecting it checks that the process serving the socket runs as the same user (SO_PEERCRED).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import struct
from pathlib import Path

from mdrag.errors import UnsafePathError

_FIX = "remove it, or set XDG_RUNTIME_DIR (or server.socket_path) to a folder of your own"


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process on the other end of a unix socket (SO_PEERCRED: pid, uid, gid)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def check_folder(folder: Path, create: bool = False) -> bool:
    """Whether the socket's folder exists, having checked that it is this user's alone: a real
    folder (not a symbolic link), owned by this user, with no access for group or others.

    With `create` (the daemon), a missing folder is made 0700 first. A folder that fails the
    check raises UnsafePathError saying what is wrong and how to fix it.
    """
    if create:
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(folder, 0o700)  # the umask can only take bits away: never more than 0700
        except FileExistsError:
            pass
    try:
        # O_NOFOLLOW: a symbolic link is refused, never followed into someone else's folder.
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and folder.is_symlink():
            raise UnsafePathError(
                f"the socket folder {folder} is a symbolic link (to {os.readlink(folder)}), which another "
                f"user could point anywhere; mdrag will not use it: {_FIX}"
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise UnsafePathError(f"the socket folder {folder} is not a folder: {_FIX}") from None
        raise UnsafePathError(f"cannot check the socket folder {folder}: {exc}") from None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if info.st_uid != os.getuid():
        raise UnsafePathError(
            f"the socket folder {folder} is owned by uid {info.st_uid}, not by you (uid {os.getuid()}), "
            f"so its socket could be another user's: {_FIX}"
        )
    if info.st_mode & 0o077:
        raise UnsafePathError(
            f"the socket folder {folder} is open to other users (mode {stat.S_IMODE(info.st_mode):04o}), "
            f"who could replace its socket: run `chmod 700 {folder}`, or {_FIX}"
        )
    return True


def check_server(conn: socket.socket, path: str) -> None:
    """Refuse a socket served by a process of another user: its answers would not be the notes'."""
    uid = peer_uid(conn)
    if uid != os.getuid():
        raise UnsafePathError(
            f"the socket {path} is served by a process of uid {uid}, not by you (uid {os.getuid()}); "
            f"its answers would not come from your notes. Stop that process, or {_FIX}"
        )

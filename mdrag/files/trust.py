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

from mdrag.errors import ConfigError, UnsafePathError

_FIX = "remove it, or set XDG_RUNTIME_DIR (or server.socket_path) to a folder of your own"


def default_socket_path() -> str:
    """The socket when the config names none: in $XDG_RUNTIME_DIR when that is a folder of this
    user's own that it may write, else in /tmp/mdrag-UID, as without a login session. A tmux
    session outliving its login keeps an XDG_RUNTIME_DIR that logind has removed: `serve` died
    there making a folder it may not. `serve` and every client read this one rule, so they agree."""
    runtime = os.environ.get("XDG_RUNTIME_DIR") or ""
    if runtime_dir_problem(runtime) is None:
        return os.path.join(runtime, "mdrag", "mdrag.sock")
    return f"/tmp/mdrag-{os.getuid()}/mdrag.sock"


def runtime_fallback(socket_path: str) -> str | None:
    """What to log when the socket went to /tmp/mdrag-UID because $XDG_RUNTIME_DIR, though set,
    cannot hold it; None otherwise (unset, usable, or a socket path the config names)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR") or ""
    problem = runtime_dir_problem(runtime)
    if not runtime or problem is None or socket_path != default_socket_path():
        return None
    return f"XDG_RUNTIME_DIR={runtime} {problem}; the socket is {socket_path} instead (clients look there)"


def runtime_dir_problem(runtime: str) -> str | None:
    """Why $XDG_RUNTIME_DIR (`runtime`) cannot hold the socket's folder, or None when it can."""
    if not runtime:
        return "is not set"
    if not os.path.isabs(runtime):
        return "is not an absolute path"
    try:
        info = os.stat(runtime)
    except FileNotFoundError:
        return "does not exist (a login session that has ended?)"
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror or exc})"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != os.getuid():
        return f"is owned by uid {info.st_uid}, not by you"
    if not os.access(runtime, os.W_OK | os.X_OK):
        return "is not writable by you"
    return None


def peer_credentials(conn: socket.socket) -> tuple[int, int, int]:
    """The pid, uid and gid of the process on the other end of a unix socket (SO_PEERCRED)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    return int(pid), int(uid), int(gid)


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process on the other end of a unix socket."""
    return peer_credentials(conn)[1]


def check_folder(folder: Path, create: bool = False) -> bool:
    """Whether the socket's folder exists, having checked that it is this user's alone: a real
    folder (not a symbolic link), owned by this user, with no access for group or others.

    With `create` (the daemon), a missing folder is made 0700 first. A folder that fails the
    check raises UnsafePathError saying what is wrong and how to fix it.
    """
    if create:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(folder, 0o700)  # the umask can only take bits away: never more than 0700
        except FileExistsError:
            pass
        except OSError as exc:  # a folder above that is gone, or not ours to write
            raise ConfigError(
                f"cannot make the socket folder {folder}: {exc.strerror or exc}; set server.socket_path "
                "(or XDG_RUNTIME_DIR) to a folder you may write"
            ) from None
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

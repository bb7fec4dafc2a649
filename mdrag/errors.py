"""The error hierarchy: every failure a user can meet and act on.

MdragError                  anything the CLI reports as "Error: ..." with exit 1
├── ConfigError             a bad configuration value (names the key and the file)
├── QueryError              a request's argument malformed or outside its limits (exit 2: a usage error)
│   └── RequestTooLargeError  a request over the socket's size limit
├── NotFoundError           a request names a note or gap the index does not hold, or a note with no text
├── DocumentError           one file could not be read or parsed (recorded, never fatal)
├── StoreError              Milvus could not be opened or answered with an error
│   ├── StoreLockedError    the embedded database is held by another process
│   ├── RowsRejectedError   the store answers but refused these rows (their file fails, not the store)
│   ├── IndexFullError      the file system holding a Milvus Lite index is (nearly) full: writes wait
│   └── SchemaMismatchError the collections were built with another model or layout
├── ServerNotRunningError   no daemon answers on the socket
│   └── NoIndexError        ... and a read command finds no index to open
├── AlreadyRunningError     a live daemon already serves the socket
├── UnsafePathError         a file or folder mdrag would use is not safely its user's own
└── RemoteError             the daemon answered a request with an error
    └── DaemonBusyError     a live daemon had no free client slot (never a reason to open the index here)
"""


class MdragError(Exception):
    """Base of every error mdrag reports to a user rather than as a traceback."""


class ConfigError(MdragError):
    """A configuration value is missing, malformed or out of range."""


class QueryError(MdragError):
    """A search or request parameter is malformed or outside its documented limits: the
    caller's mistake, so the CLI exits 2 as for any other usage error."""


class RequestTooLargeError(QueryError):
    """A request is larger than the daemon reads (protocol.MAX_REQUEST_BYTES): said before it
    is sent, or by the daemon, never a connection closed without a word."""


class NotFoundError(MdragError):
    """A well-formed request names what the index does not hold (a note, a recorded gap), or a
    note with no text to compare."""


class DocumentError(MdragError):
    """A file could not be read or parsed as a markdown note."""


class StoreError(MdragError):
    """The vector store could not be opened or failed an operation."""


class StoreLockedError(StoreError):
    """The embedded Milvus Lite database is open in another process."""


class RowsRejectedError(StoreError):
    """The store is up but refused a write for what the rows hold: a per-file failure, not an outage."""


class IndexFullError(StoreError):
    """The file system holding a Milvus Lite index has no room: the engine would accept writes it
    cannot keep, so none is made until space is freed."""


class SchemaMismatchError(StoreError):
    """The collections on disk were built with another model, dimension or layout."""


class LayoutOutdatedError(SchemaMismatchError):
    """The collections were built by an older mdrag or another back-end of the same model: safe to
    rebuild from the notes, reusing the stored vectors only when they are this model's own."""

    def __init__(self, message: str, vectors_reusable: bool = True) -> None:
        super().__init__(message)
        self.vectors_reusable = vectors_reusable


class ServerNotRunningError(MdragError):
    """No daemon is listening on the configured socket."""


class NoIndexError(ServerNotRunningError):
    """No daemon answers and no index exists where the config says: a read command never makes one."""


class AlreadyRunningError(MdragError):
    """Another daemon already serves the configured socket."""

    @classmethod
    def serving(cls, socket: str, pid: int | None) -> "AlreadyRunningError":
        """The refusal that names the daemon serving `socket` by its process, when known."""
        holder = f"an mdrag daemon (process {pid})" if pid else "an mdrag daemon"
        return cls(f"{holder} is already running on {socket}")


class UnsafePathError(MdragError):
    """A path mdrag would use could let another user in or redirect a write: a socket folder owned
    by someone else or open to others, a socket served by another user, a symbolic link where mdrag
    writes a file of its own."""


class RemoteError(MdragError):
    """The daemon answered a request with an error."""


class DaemonBusyError(RemoteError):
    """A daemon is running but could not take this request now (every client slot in use)."""


# ---- errors across the socket -----------------------------------------------------------------
# The daemon sends each error's kind, and the client raises that class again (as a RemoteError
# too: it came from the daemon), so a caller tells "note not found" from "store down" whatever
# the route. Three kinds keep the names older clients know.
_WIRE_NAMES = {
    "QueryError": "InvalidRequest",
    "DaemonBusyError": "Busy",
    "RequestTooLargeError": "RequestTooLarge",
}


def _declared() -> dict[str, type[MdragError]]:
    """Every MdragError class declared in this module, by its name."""
    found: dict[str, type[MdragError]] = {"MdragError": MdragError}
    pending: list[type[MdragError]] = [MdragError]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub.__module__ == __name__ and sub.__name__ not in found:
                found[sub.__name__] = sub
                pending.append(sub)
    return found


ERROR_KINDS: dict[str, type[MdragError]] = {
    _WIRE_NAMES.get(name, name): cls for name, cls in _declared().items()
}
_KIND_OF = {cls: kind for kind, cls in ERROR_KINDS.items()}


def _remote_class(cls: type[MdragError]) -> type[MdragError]:
    """The class an answer of this kind is raised as: itself and a RemoteError."""
    if issubclass(cls, RemoteError):
        return cls
    if issubclass(RemoteError, cls):  # MdragError itself
        return RemoteError
    return type(cls.__name__, (cls, RemoteError), {"__doc__": cls.__doc__, "__module__": __name__})


_REMOTE = {kind: _remote_class(cls) for kind, cls in ERROR_KINDS.items()}


def error_kind(exc: MdragError) -> str:
    """The kind the wire names this error by: its class, or the nearest one declared here (a
    subclass elsewhere, such as the index lock's IndexBusyError, travels as StoreLockedError)."""
    for cls in type(exc).__mro__:
        kind = _KIND_OF.get(cls)
        if kind is not None:
            return kind
    return "MdragError"


def remote_error(kind: str, message: str) -> MdragError:
    """The error a daemon answered with, as its own class that is also a RemoteError (so both
    `except StoreError` and `except RemoteError` hold); a kind mdrag does not declare (a refused
    uid, a bug) is a plain RemoteError."""
    return _REMOTE.get(kind, RemoteError)(message)

"""The error hierarchy: every failure a user can meet and act on.

MdragError                  anything the CLI reports as "Error: ..." with exit 1
├── ConfigError             a bad configuration value (names the key and the file)
├── QueryError              a request's argument malformed or outside its limits (exit 2: a usage error)
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


class UnsafePathError(MdragError):
    """A path mdrag would use could let another user in or redirect a write: a socket folder owned
    by someone else or open to others, a socket served by another user, a symbolic link where mdrag
    writes a file of its own."""


class RemoteError(MdragError):
    """The daemon answered a request with an error."""


class DaemonBusyError(RemoteError):
    """A daemon is running but could not take this request now (every client slot in use)."""

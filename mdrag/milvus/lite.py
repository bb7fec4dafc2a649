"""Lite: the Milvus Lite server processes of an index's databases, started at once, stopped at once."""

from __future__ import annotations

import fcntl
import os
import socket
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdrag.config import is_lite_uri
from mdrag.files import private
from mdrag.files.indexfiles import lite_homes, lite_lock, lite_log, normalized
from mdrag.milvus.shards import LITE_SHARDS, shard_paths

if TYPE_CHECKING:
    import subprocess

# milvus-lite 2.5.1 imports pkg_resources only to read its own version: a deprecation warning on
# every command's stderr that a user can do nothing about.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)

# gRPC keepalive for a Lite server: none. pymilvus pings every 10 s even without calls, but the
# Lite server keeps gRPC's default policy (a ping at most every 5 min without data), answers
# with GOAWAY too_many_pings, and gRPC prints that on stderr. Over a local unix socket a dead
# server shows as a failed call at once, which is what keepalive would have found out.
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": 0}

# How long a spawned server may take to listen on its socket: ~20 ms on an idle machine, even
# over a large index (it loads collections later); seconds on a loaded one.
SERVER_UP_S = 30.0

# jemalloc settings for each Lite server (allocator_settings): a thread that purges freed pages,
# over about a second after they are freed (jemalloc's default decay is 10 s; its muzzy decay is
# already 0 in the bundled jemalloc 5.3, pinned here all the same).
LITE_ALLOCATOR = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0"

_started: set[Path] = set()  # databases whose server this process started ahead of the store
_starting: dict[Path, threading.Thread] = {}  # head starts still under way


def database_path(uri: str) -> Path:
    return normalized(uri)


def database_files(uri: str) -> list[Path]:
    """Every database file of a Milvus Lite index (one per shard), the named one first."""
    return shard_paths(database_path(uri), LITE_SHARDS)


def lock_held(db: Path) -> bool:
    """Milvus Lite keeps ".NAME.lock" beside a database while a process has it open."""
    return lite_lock(db).exists()


def started_here(db: Path) -> bool:
    """True when the lock beside `db` is this process's own head start, not another process."""
    return db in _started


def start_early(uri: str) -> list[threading.Thread]:
    """Start the Lite servers of `uri` in the background, so a command's imports hide their start.

    A command that calls this before its heavy imports (pymilvus alone takes ~0.5 s) opens the
    store to servers already up.
    The store's own open waits for these threads, then finds the servers or starts them itself
    and reports errors.
    """
    if not is_lite_uri(uri) or lock_held(database_path(uri)):
        return []  # a server, or another process has it: the store's open explains that
    threads = []
    for db in database_files(uri):
        thread = threading.Thread(target=_start, args=(db,), name="mdrag-lite-start", daemon=True)
        _starting[db] = thread
        threads.append(thread)
        thread.start()
    return threads


def start(dbs: list[Path]) -> None:
    """Start the servers of these databases at once (waiting for any head start first).

    milvus-lite's own manager starts one server at a time under its lock, each with a fixed
    0.5 s wait: for two shards that added 0.5 s to every command (no-op rescan 2.5 -> 3.0 s).
    Each here waits only until its server listens (_until_listening).
    A server that fails to start here is started again by MilvusClient, which reports why.
    """
    wait_for_head_start(dbs)
    threads = [threading.Thread(target=_start, args=(db,), name="mdrag-lite-start") for db in dbs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def wait_for_head_start(dbs: list[Path]) -> None:
    """Until start_early's threads for these databases are done: before that, their lock files
    exist but their servers cannot be found yet."""
    for db in dbs:
        head_start = _starting.pop(db, None)
        if head_start is not None:
            head_start.join()


def guard_lock_files() -> None:
    """Make milvus-lite 2.5.1's Server.stop() unlink its lock file only after a start that held it.

    Its stop() deletes `.NAME.lock` whatever happened: a start refused because another process
    holds the database (and the stop that __del__ repeats after a clean one) deleted the
    holder's lock file, so the next process locked a new file of the same name and opened a
    live database. Idempotent; patched once per process, before any Server starts.
    """
    from milvus_lite.server import Server

    if getattr(Server, "_mdrag_guarded", False):
        return
    original_start, original_stop = Server.start, Server.stop

    def start(self: Server) -> bool:
        ok = original_start(self)
        self._mdrag_held = self._p is not None  # the server process only exists once it held the lock
        return bool(ok)

    def stop(self: Server) -> None:
        if getattr(self, "_mdrag_held", False):
            self._mdrag_held = False
            original_stop(self)
            return
        if self._lock_fd:  # opened, never locked: close it, and leave the file to its holder
            self._lock_fd.close()
            self._lock_fd = None

    Server.start, Server.stop = start, stop
    Server._mdrag_guarded = True


def _start(db: Path) -> None:
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        from milvus_lite.server_manager import server_manager_instance as manager

        guard_lock_files()
        key = str(db.absolute().resolve())
        with manager._lock:  # milvus-lite 2.5.1's registry of running servers, by resolved path
            if key in manager._servers:
                return
        server = server_class()(key)
        if not (server.init() and server.start()):
            return
        with manager._lock:
            manager._servers.setdefault(key, server)  # MilvusClient(db) connects to it from here
        _started.add(db)
    except Exception:  # noqa: BLE001 - only a head start: the store's open reports what is wrong
        return


def running_server(db: Path) -> Any:
    """The Lite server this process runs for `db` (milvus-lite's registry), or None."""
    from milvus_lite.server_manager import server_manager_instance as manager

    with manager._lock:
        return manager._servers.get(str(db.absolute().resolve()))


def replace_server(db: Path, server: Any) -> Any:
    """Register `server` as `db`'s (MilvusClient(db) and servers_alive find it from here);
    returns the one it replaces, or None."""
    from milvus_lite.server_manager import server_manager_instance as manager

    with manager._lock:
        key = str(db.absolute().resolve())
        old = manager._servers.get(key)
        manager._servers[key] = server
        return old


def servers_alive(dbs: list[Path]) -> bool:
    """True while every one of these databases has its Lite server process running here
    (a server killed from outside leaves its clients failing every call until restarted)."""
    from milvus_lite.server_manager import server_manager_instance as manager

    with manager._lock:
        servers = [manager._servers.get(str(db.absolute().resolve())) for db in dbs]
    return all(
        server is not None and server._p is not None and server._p.poll() is None for server in servers
    )


_server_cls: Any = None


def server_class() -> Any:
    """milvus-lite's Server, its process's output sent to `lite_log` rather than inherited
    (a `--json` answer on stdout stays clean); milvus-lite's own manager starts this one too."""
    global _server_cls
    if _server_cls is not None:
        return _server_cls
    import subprocess  # here, not at the top: a command that only asks the daemon never spawns

    from milvus_lite import server as lite_server
    from milvus_lite import server_manager

    class LoggedServer(lite_server.Server):  # type: ignore[misc]
        def start(self) -> bool:
            # milvus-lite 2.5.1's Server.start, with the child's stdout and stderr redirected.
            # Held while the server runs; never opened through a link (see mdrag.files.private).
            shared = getattr(self, "_mdrag_shared_lock", None)
            if shared is not None:  # a twin (twins.start): the running server's lock, already held
                self._lock_fd = shared
            else:
                lock_fd = private.open_file(
                    Path(self._lock_path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, "a lock"
                )
                self._lock_fd = os.fdopen(lock_fd, "a")
                try:
                    fcntl.lockf(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    lite_server.logger.error(
                        "Open %s failed, the file has been opened by another program", self._db_file
                    )
                    return False
            self._mdrag_held = True  # see guard_lock_files: its stop may now end the server
            env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")}
            library_path = str(self._bin_path) + ":" + os.environ.get("LD_LIBRARY_PATH", "")
            env = {"LD_LIBRARY_PATH": library_path, "DYLD_LIBRARY_PATH": library_path, **env}
            self._mdrag_home = home_for(Path(self._db_file), getattr(self, "_mdrag_beside", None))
            env.update(own_places(self._mdrag_home, self.log_level))
            env.update(allocator_settings())
            log_path = lite_log(Path(self._db_file))
            log_fd = private.open_file(
                log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "the Lite server log"
            )
            with os.fdopen(log_fd, "ab") as log:
                process = subprocess.Popen(
                    args=self.args,
                    env=env,
                    cwd=str(self._work_dir),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                )
            self._p = process
            if self._address is None:
                if _until_listening(self._uds_path, process):
                    return True
            else:  # a TCP server: milvus-lite's own fixed wait
                try:
                    process.wait(0.5)
                except subprocess.TimeoutExpired:
                    return True
            lite_server.logger.error("Start milvus-lite failed; see %s", lite_log(Path(self._db_file)))
            return False

    server_manager.Server = LoggedServer
    _server_cls = LoggedServer
    return LoggedServer


def home_for(db: Path, taken: Path | None) -> Path:
    """The home of a server about to start for `db`: one of its two (lite_homes), not `taken`,
    the home of the server a twin starts beside (twins.start)."""
    home = next(home for home in lite_homes(db) if home != taken)
    private.refuse_link(home, "a Milvus Lite server's home")
    home.mkdir(exist_ok=True)
    return home


def own_places(home: Path, log_level: str) -> dict[str, str]:
    """The environment that keeps a Lite server's files in places of its own.

    HOME: the engine keeps its scratch folder in $HOME/.cache/milvus, empties it on its first
    collection and removes it on exit. Servers sharing one (every server of a user did) broke
    each other: one emptying it while another set up failed that one's setup, and every
    collection call of that server failed for its lifetime ("Mmap manager has not been init"),
    12 rounds in 20 where four servers made a collection at the same moment.
    GLOG_*: the engine's glog wrote a log file per server start into /tmp (INFO and WARNING,
    kept forever, the INFO one growing by a line per timed request) besides what it prints;
    to stderr only, which is the server's log beside its database, at the level milvus-lite
    was asked for (its LOG_LEVEL: ERROR unless set).
    """
    return {
        "HOME": str(home),
        "GLOG_logtostderr": "1",
        "GLOG_minloglevel": "0" if log_level == "INFO" else "2",
    }


def allocator_settings() -> dict[str, str]:
    """The environment that makes a Lite server give back the memory it frees.

    The server's allocator is jemalloc, linked into its binary, which reads MALLOC_CONF (glibc's
    MALLOC_* variables do nothing to it). Without a background thread jemalloc returns freed
    pages to the system only while the process goes on allocating, so a server that idles after
    loading an index or absorbing bulk writes (a daemon's, for weeks) keeps part of what those
    freed (docs/design/milvus.md, "Engine", has the figures). A MALLOC_CONF of the user's own is left
    as it is.
    """
    return {} if "MALLOC_CONF" in os.environ else {"MALLOC_CONF": LITE_ALLOCATOR}


def _until_listening(path: str, process: subprocess.Popen[bytes]) -> bool:
    """Whether a just-spawned server is up: True once it accepts a connection on its unix socket,
    or still runs after SERVER_UP_S (the client's connect then says what is wrong); False if it
    exits first. milvus-lite waits a fixed 0.5 s instead: longer than an idle machine needs, and
    on a loaded one a server could still be starting then, so the first connect found no socket."""
    deadline = time.monotonic() + SERVER_UP_S
    while process.poll() is None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(path)
                return True
            except OSError:
                pass
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.01)
    return False


def release(dbs: list[Path]) -> None:
    """Stop these databases' Lite servers now, at once: left to the interpreter's teardown, a
    stop added 0.2-2.3 s to a short command's wall time (0.03 s when asked for here)."""
    from milvus_lite.server_manager import server_manager_instance as manager

    servers = []
    with manager._lock:
        for db in dbs:
            _started.discard(db)
            server = manager._servers.pop(str(db.absolute().resolve()), None)
            if server is not None:
                servers.append(server)
    threads = [threading.Thread(target=server.stop, name="mdrag-lite-stop") for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def index_exists(uri: str) -> bool:
    """A Milvus Lite index is a file; a server's collections are made on first use (not checked)."""
    return not is_lite_uri(uri) or database_path(uri).exists()


def index_held(uri: str) -> bool:
    """True while another process has this Milvus Lite index open: its lock is taken.

    Milvus Lite takes a POSIX lock on ".NAME.lock" beside each database; a lock file without a
    lock is left by a crash and holds nothing. The probe never creates, removes or keeps it.
    """
    if not is_lite_uri(uri):
        return False
    for db in database_files(uri):
        try:
            fd = os.open(lite_lock(db), os.O_RDWR)
        except OSError:
            continue  # none (nobody has it open) or not ours to open
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        else:
            fcntl.lockf(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    return False

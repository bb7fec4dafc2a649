"""Lite: the Milvus Lite server processes of an index's databases, started at once, stopped at once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from mdrag import private
from mdrag.config import is_lite_uri
from mdrag.errors import StoreError
from mdrag.indexfiles import lite_lock, lite_log, normalized
from mdrag.milvus.shards import LITE_SHARDS, shard_paths

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

# A twin (start_twin) starts only where the memory free is this many times what the running
# server holds: it loads as much, and the machine keeps some to spare rather than swap.
TWIN_ROOM = 1.5

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
        server = _server_class()(key)
        if not (server.init() and server.start()):
            return
        with manager._lock:
            manager._servers.setdefault(key, server)  # MilvusClient(db) connects to it from here
        _started.add(db)
    except Exception:  # noqa: BLE001 - only a head start: the store's open reports what is wrong
        return


def start_twin(db: Path) -> Any:
    """A second Lite server of `db`, started beside the one that serves it, which keeps serving.

    Both read the same database file (SQLite's own locks let two processes read it; nothing
    writes meanwhile: the caller is the index's one writer). The twin shares the running
    server's lock: the same open lock file, so a process outside finds the index held
    throughout. Raises StoreError when the twin does not start.
    """
    from milvus_lite.server_manager import server_manager_instance as manager

    guard_lock_files()
    key = str(db.absolute().resolve())
    with manager._lock:
        running = manager._servers.get(key)
    if running is None or running._p is None:
        raise StoreError(f"no Milvus Lite server of this process serves {db}")
    needed, free = _resident_bytes(running._p.pid), _available_bytes()
    if needed is not None and free is not None and free < TWIN_ROOM * needed:
        raise StoreError(
            f"too little free memory for a second Milvus Lite server of {db.name} "
            f"({free >> 20} MB available, ~{needed >> 20} MB needed)"
        )
    twin = _server_class()(key)
    twin._mdrag_shared_lock = running._lock_fd
    if not (twin.init() and twin.start()):
        _end_beside(twin, running)
        raise StoreError(f"a second Milvus Lite server of {db} did not start; see {lite_log(db)}")
    return twin


def _resident_bytes(pid: int) -> int | None:
    """A process's resident memory (Linux), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _available_bytes() -> int | None:
    """Memory the kernel can give without swapping (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def hand_over(db: Path, twin: Any) -> None:
    """Make `twin` (start_twin) the server of `db`, and end the one that served it until now."""
    from milvus_lite.server_manager import server_manager_instance as manager

    key = str(db.absolute().resolve())
    with manager._lock:
        old = manager._servers.get(key)
        manager._servers[key] = twin  # MilvusClient(db) and servers_alive find the twin from here
    if old is not None:
        _end_beside(old, twin)


def discard_twin(db: Path, twin: Any) -> None:
    """End a twin that will not take over (its load failed): the running server stays."""
    from milvus_lite.server_manager import server_manager_instance as manager

    with manager._lock:
        running = manager._servers.get(str(db.absolute().resolve()))
    if running is not None:
        _end_beside(twin, running)
    else:  # nothing shares its lock: a plain stop
        twin.stop()


def _end_beside(ending: Any, staying: Any) -> None:
    """End `ending`'s process; the lock file they share stays open and locked, now `staying`'s.

    A Lite server exits once its lock is free, and a POSIX lock belongs to the process: closing
    any descriptor of the lock file frees it for every server of this process (a twin with a
    lock file of its own, whose predecessor's descriptor was closed, died within a second). So
    the two share one descriptor, which only the last server's stop closes, and `ending` is told
    to end by a signal instead (it has no write in hand).
    """
    staying._lock_fd = staying._lock_fd or ending._lock_fd
    ending._lock_fd = None
    ending._mdrag_held = False
    process = ending._p
    ending._p = None
    if process is not None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(ending._uds_path)


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


def _server_class() -> Any:
    """milvus-lite's Server, its process's output sent to `lite_log` rather than inherited
    (a `--json` answer on stdout stays clean); milvus-lite's own manager starts this one too."""
    global _server_cls
    if _server_cls is not None:
        return _server_cls
    from milvus_lite import server as lite_server
    from milvus_lite import server_manager

    class LoggedServer(lite_server.Server):  # type: ignore[misc]
        def start(self) -> bool:
            # milvus-lite 2.5.1's Server.start, with the child's stdout and stderr redirected.
            # Held while the server runs; never opened through a link (see mdrag.private).
            shared = getattr(self, "_mdrag_shared_lock", None)
            if shared is not None:  # a twin (start_twin): the running server's lock, already held
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

"""Databases: an index's Milvus clients, one per shard, opened at once, asked at once, closed at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

from loguru import logger
from pymilvus import MilvusClient

from mdrag.config import is_lite_uri
from mdrag.errors import StoreError, StoreLockedError
from mdrag.milvus import lite, twins
from mdrag.milvus.shards import by_shard

T = TypeVar("T")
Item = TypeVar("Item")


class Databases:
    """The clients of an index: one per Milvus Lite shard database (the first also holds the
    metadata collection), or one for a Milvus server, which spreads a collection by itself."""

    def __init__(self, uri: str, token: str, timeout_s: float) -> None:
        self.uri = uri
        self.is_lite = is_lite_uri(uri)
        self.uris = [str(db) for db in lite.database_files(uri)] if self.is_lite else [uri]
        self.clients: list[MilvusClient] = []
        self.closed = True  # until open() succeeds, and after close()
        self._token = token
        self._timeout_s = timeout_s
        self._pool = self._new_pool()

    @property
    def first(self) -> MilvusClient:
        """The first shard's client: the metadata collection lives there."""
        return self.clients[0]

    def __len__(self) -> int:
        return len(self.uris)

    def open(self) -> None:
        """Connect to every database; a Milvus Lite one's server starts here unless already up."""
        held = False
        if self.is_lite:
            lite.guard_lock_files()
            lite.server_class()  # a server milvus-lite's manager starts (a stale lock's) is ours too
            db = lite.database_path(self.uri)
            db.parent.mkdir(parents=True, exist_ok=True)
            lite.wait_for_head_start([Path(uri) for uri in self.uris])
            # A failed second open deletes the lock file: so look before trying.
            held = lite.lock_held(db) and not lite.started_here(db)
        clients: list[MilvusClient] = []
        try:
            if held:
                # Maybe a stale lock; if not, the failure must not touch the other shards' locks.
                clients.append(self._connect(self.uris[0], held))
            rest = self.uris[len(clients) :]
            if self.is_lite:
                lite.start([Path(uri) for uri in rest])  # at once, each until its server listens
            opening = [self._pool.submit(self._connect, uri, False) for uri in rest]
            failure = None
            for future in opening:
                try:
                    clients.append(future.result())
                except StoreError as exc:
                    failure = failure or exc
            if failure is not None:
                raise failure
        except StoreError:
            self._close_clients(clients)
            self._renew_pool()  # a failed open (a store outage retried for hours) leaves no threads
            if not held:
                self._release_lite()
            raise
        self.clients = clients
        self.closed = False

    def _connect(self, uri: str, held: bool) -> MilvusClient:
        try:
            # A per-call timeout bounds pymilvus' retries, so an unreachable server is an error
            # after timeout_s rather than a call that hangs.
            options = {"grpc_options": lite.GRPC_OPTIONS} if self.is_lite else {}
            # A connection of its own: pymilvus otherwise shares one per address and keeps it
            # after close(), one more for every reopen's new server over a daemon's months.
            return MilvusClient(
                uri=uri, token=self._token or "", timeout=self._timeout_s, dedicated=True, **options
            )
        except Exception as exc:  # pymilvus raises several unrelated types here
            if held:
                raise StoreLockedError(
                    f"the index {self.uri} is held by another process, and no mdrag daemon answered "
                    "on the socket: stop that process (or wait for it to finish), then try again"
                ) from exc
            raise StoreError(f"cannot open the Milvus store at {self.uri}: {exc}") from exc

    def each(self, work: Callable[[MilvusClient], T], clients: list[MilvusClient] | None = None) -> list[T]:
        """`work` done on every shard (or these), at once when there are several; in shard order."""
        clients = self.clients if clients is None else clients
        if len(clients) <= 1:
            return [work(client) for client in clients]
        return list(self._pool.map(work, clients))

    def by_note(
        self, items: Iterable[Item], doc_id_of: Callable[[Item], str]
    ) -> Iterator[tuple[int, MilvusClient, list[Item]]]:
        """Items grouped by the shard that holds their note's rows: (shard, its client, items)."""
        for shard, group in sorted(by_shard(items, doc_id_of, len(self.clients)).items()):
            yield shard, self.clients[shard], group

    def reopen_beside(
        self, load: Callable[[int, MilvusClient], None], swap: Callable[[], AbstractContextManager[object]]
    ) -> None:
        """Reopen each Milvus Lite shard while its running server keeps answering: a second server
        of the same database is started and `load`ed (the slow part: it reads every row), then,
        inside `swap` (the caller's requests held back, for milliseconds), it takes the shard's
        place and the old server ends. One shard at a time, so only one shard is held twice in
        memory. Raises StoreError with the running servers untouched when a twin fails."""
        for shard, uri in enumerate(self.uris):
            if self.closed:
                raise StoreError(f"the index {self.uri} was closed during its reopen")
            db = Path(uri)
            twin = twins.start(db)
            client = old = None
            try:
                client = self._connect(twin.uds_path, False)
                load(shard, client)
                with swap():
                    if self.closed:  # closed while the twin loaded (the daemon stopping)
                        raise StoreError(f"the index {self.uri} was closed during its reopen")
                    old_client, self.clients[shard] = self.clients[shard], client
                    old = twins.hand_over(db, twin)
                    client = None
                self._close_clients([old_client])
            except BaseException:
                if client is not None:
                    self._close_clients([client])
                if old is None:
                    twins.end(twin)  # never took over: the running server (if any) keeps the lock
                raise
            if old is not None:
                twins.end(old)  # after the switch: requests are not held while it stops

    def engines_alive(self) -> bool:
        """False when a Milvus Lite server of this index has died (a server URI: always True;
        a ping tells whether it answers)."""
        return self.closed or not self.is_lite or lite.servers_alive([Path(uri) for uri in self.uris])

    def close(self) -> None:
        self._close_clients(self.clients)
        self._renew_pool()
        if not self.closed:
            self.closed = True
            self._release_lite()

    def _renew_pool(self) -> None:
        """Its idle threads would outlive the store; a reopen gets a fresh pool (threads start on use)."""
        self._pool.shutdown(wait=False)
        self._pool = self._new_pool()

    def _new_pool(self) -> ThreadPoolExecutor:
        # Twice the shards: a query's dense search and its keyword rows' scoring may be asked at
        # once (each engine still runs them one after the other).
        return ThreadPoolExecutor(2 * len(self.uris), thread_name_prefix="mdrag-shard")

    @staticmethod
    def _close_clients(clients: list[MilvusClient]) -> None:
        for client in clients:
            try:
                client.close()
            except Exception as exc:  # closing a broken connection must not mask the real error
                logger.debug("closing the Milvus client failed: {}", exc)

    def _release_lite(self) -> None:
        if self.is_lite:
            lite.release([Path(uri) for uri in self.uris])

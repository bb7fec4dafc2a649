"""Engine calls: each Milvus call with its deadline, its failure as mdrag's error, rows read in full."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import grpc
from pymilvus import MilvusClient, MilvusException
from pymilvus.exceptions import (
    ConnectError,
    ConnectionConfigException,
    ConnectionNotExistException,
    MilvusUnavailableException,
)

from mdrag.errors import RowsRejectedError, StoreError
from mdrag.milvus.databases import Databases

QUERY_LIMIT = 16384  # the most rows Milvus returns for one query
WRITE_BATCH = 1000  # rows per insert/upsert call
IN_BATCH = 500  # values per `in [...]` filter

# Failures that say the engine cannot be reached, whatever the rows held.
_CONNECTION_ERRORS = (
    ConnectError,
    ConnectionConfigException,
    ConnectionNotExistException,
    MilvusUnavailableException,
)


def batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """`items` in slices of `size`: a call's rows or an `in` filter's values, bounded."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class EngineCalls:
    """The calls made to one index's databases. Each has a deadline: a Milvus Lite server that
    stops answering (stuck, not dead) made calls without one wait for ever, searches and the
    writer alike. A failure is a StoreError (the engine did not answer, or refused a read) or a
    RowsRejectedError (it answered, and refused a write's rows)."""

    def __init__(self, databases: Databases, uri: str, timeout_s: float) -> None:
        self._db = databases
        self._uri = uri
        self._timeout_s = timeout_s

    def call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(getattr(method, "__self__", None), MilvusClient):
            kwargs.setdefault("timeout", self._timeout_s)  # (an iterator's calls take its own)
        try:
            return method(*args, **kwargs)
        except MilvusException as exc:
            raise StoreError(
                f"Milvus {getattr(method, '__name__', 'call')} failed on {self._uri}: {exc.message}"
            ) from exc
        except grpc.RpcError as exc:  # pymilvus passes a missed deadline on as gRPC raised it
            raise self._unanswered(getattr(method, "__name__", "call"), exc, kwargs.get("timeout")) from exc

    def write(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        """A write whose failure says which it was: RowsRejectedError when the engine still
        answers (the rows' content was refused: a bad string, a JSON value out of range),
        StoreError when it cannot be reached (the writer then waits and replays)."""
        kwargs.setdefault("timeout", self._timeout_s)
        try:
            return method(*args, **kwargs)
        except grpc.RpcError as exc:
            raise self._unanswered(getattr(method, "__name__", "write"), exc, kwargs["timeout"]) from exc
        except MilvusException as exc:
            failure = f"Milvus {getattr(method, '__name__', 'write')} failed on {self._uri}: {exc.message}"
            if isinstance(exc, _CONNECTION_ERRORS) or not self.answers():
                raise StoreError(failure) from exc
            raise RowsRejectedError(failure) from exc
        except (TypeError, ValueError, OverflowError) as exc:  # pymilvus checks rows before sending
            raise RowsRejectedError(f"Milvus refused the rows: {exc}") from exc

    def _unanswered(self, name: str, exc: grpc.RpcError, timeout: float | None = None) -> StoreError:
        """A call the engine did not answer: an outage (the writer restarts a Lite engine)."""
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return StoreError(
                f"the Milvus engine at {self._uri} did not answer a {name} within "
                f"{timeout or self._timeout_s:.0f} s (stuck or overloaded)"
            )
        return StoreError(f"Milvus {name} failed on {self._uri}: {code.name if code else exc}")

    def query(
        self, collection: str, filter: str, fields: list[str], client: MilvusClient | None = None
    ) -> list[dict[str, Any]]:
        """Every row matching `filter` (of the first database unless `client` is given): one
        query when they fit in one answer, as a lookup's rows nearly always do, else the
        iterator (which costs two more round trips: it describes the collection first, and
        ends on an empty batch)."""
        query = (client or self._db.first).query
        rows = self.call(query, collection, filter=filter, output_fields=fields, limit=QUERY_LIMIT)
        if len(rows) < QUERY_LIMIT:
            return list(rows)
        return list(self.iterate(collection, fields, filter, client))

    def iterate(
        self, collection: str, fields: list[str], filter: str = "", client: MilvusClient | None = None
    ) -> Iterator[dict[str, Any]]:
        for batch in self.iterate_batches(collection, fields, filter, client):
            yield from batch

    def iterate_batches(
        self, collection: str, fields: list[str], filter: str = "", client: MilvusClient | None = None
    ) -> Iterator[list[dict[str, Any]]]:
        # An iterator, not query(limit=...): a filter may match more rows than one query returns.
        iterator = self.call(
            (client or self._db.first).query_iterator,
            collection,
            batch_size=4000,
            filter=filter,
            output_fields=fields,
        )
        try:
            while batch := self.call(iterator.next):
                yield list(batch)
        finally:
            iterator.close()

    def answers(self) -> bool:
        """Whether every shard answers a ping now (a stuck Lite server is alive but does not)."""
        try:
            self.ping()
        except StoreError:
            return False
        return True

    def ping(self, timeout_s: float = 3.0) -> None:
        """Raises StoreError unless every shard answers within `timeout_s`."""
        for client in self._db.clients:
            self.call(client.list_collections, timeout=timeout_s)

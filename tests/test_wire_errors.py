"""Errors keep their type across the socket: the daemon sends each MdragError's kind, the client
raises the same class (a RemoteError too), so callers tell "note not found" from "store down"."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdrag import errors
from mdrag.client.connection import DaemonClient
from mdrag.errors import (
    DaemonBusyError,
    MdragError,
    NotFoundError,
    QueryError,
    RemoteError,
    StoreError,
    StoreLockedError,
)
from mdrag.files.indexlock import IndexBusyError
from mdrag.serve.server import SocketServer

KINDS = sorted(errors.ERROR_KINDS.items())


def every_error(cls: type[MdragError]) -> MdragError:
    return cls(f"a {cls.__name__} happened")


@pytest.fixture(scope="module")
def client() -> Iterator[DaemonClient]:
    """A real socket server whose handler raises the error a request names; a client of it."""

    def handler(op: str, params: dict) -> object:
        if op == "note":
            raise every_error(errors.ERROR_KINDS[params["note"]])  # the kind, named as a note
        if op == "similar":
            raise IndexBusyError("/x/milvus.db", 7, "daemon", "")
        return {"pong": True}

    directory = Path(tempfile.mkdtemp(prefix="mdw", dir="/tmp"))
    server = SocketServer(str(directory / "sock" / "s.sock"), handler)
    server.start()
    try:
        yield DaemonClient(str(server.path))
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize(("kind", "cls"), KINDS, ids=[kind for kind, _ in KINDS])
def test_every_error_class_round_trips_through_the_wire(client, kind, cls):
    with pytest.raises(MdragError) as raised:
        # Busy is retried by the client for a few seconds before it is raised: ask once.
        client._call_once("note", None, None, note=kind)
    assert isinstance(raised.value, cls), (kind, type(raised.value).__mro__)
    assert isinstance(raised.value, RemoteError)  # it came from the daemon
    # Sent on again, it keeps its kind (a bare MdragError from the daemon is simply a RemoteError).
    assert errors.error_kind(raised.value) == (kind if cls is not MdragError else "RemoteError")
    if cls is not DaemonBusyError:  # the client words a busy daemon its own way
        assert str(raised.value) == f"a {cls.__name__} happened"


def test_callers_tell_a_missing_note_from_a_store_outage(client):
    with pytest.raises(NotFoundError) as missing:
        client.call("note", note="NotFoundError")
    assert not isinstance(missing.value, StoreError)
    with pytest.raises(StoreError) as down:
        client.call("note", note="StoreError")
    assert not isinstance(down.value, NotFoundError)
    with pytest.raises(QueryError):  # a refused argument, as if checked here (the CLI exits 2)
        client.call("note", note="InvalidRequest")


def test_an_error_declared_elsewhere_travels_as_its_nearest_declared_class(client):
    with pytest.raises(StoreLockedError, match="process 7"):
        client.call("similar")


def test_a_kind_mdrag_does_not_declare_is_a_plain_remote_error():
    raised = errors.remote_error("InternalError", "internal error: boom")
    assert type(raised) is RemoteError and str(raised) == "internal error: boom"

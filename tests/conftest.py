"""Shared fixtures: the real model (loaded once), Milvus Lite stores in tmp dirs, note folders."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mdrag.config import Config

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the bundled model must never need the network


@pytest.fixture(scope="session")
def embedder():
    from mdrag.embedder import Embedder

    return Embedder()


@pytest.fixture()
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def make_config(tmp_path: Path) -> Callable[..., Config]:
    def build(roots: list[Path] | None = None, **values) -> Config:
        values.setdefault("milvus_uri", str(tmp_path / "index" / "milvus.db"))
        values.setdefault("server_socket_path", str(tmp_path / "s.sock"))
        return Config().with_overrides(roots=tuple(str(r) for r in roots or ()), **values)

    return build


@pytest.fixture()
def make_service(make_config, embedder) -> Iterator[Callable[..., object]]:
    from mdrag.service import Service

    opened: list[Service] = []

    def build(roots: list[Path], **values) -> Service:
        service = Service(make_config(roots, **values), embedder=embedder)
        opened.append(service)
        return service

    yield build
    for service in opened:
        service.close()

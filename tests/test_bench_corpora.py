"""bench.corpora: an eval index is reused only where it was built, and found again by its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import corpora
from mdrag.config import Config


def _corpus(tmp_path: Path) -> corpora.Corpus:
    notes = tmp_path / "source"
    notes.mkdir()
    (notes / "bread.md").write_text("# Bread\n\nKnead the dough for ten minutes.\n", encoding="utf-8")
    (notes / "git.md").write_text("# Git\n\nRebase the feature branch onto main.\n", encoding="utf-8")
    return corpora.Corpus("tiny", [(notes, None, "")])


def _open(corpus: corpora.Corpus, base: Path) -> tuple[dict[str, object], set[str], Path]:
    service, root, facts = corpora.open_indexed(corpus, Config(), base)
    try:
        paths = {record.file_path for record in service.catalog.records()}
    finally:
        service.close()
    return facts, paths, root


@pytest.mark.slow  # builds a real index through open_indexed (the model, Milvus Lite)
def test_an_eval_index_moved_elsewhere_is_built_again_for_where_it_is(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    facts, paths, root = _open(corpus, tmp_path / "work")
    assert not facts["cached"] and paths == {str(root / "bread.md"), str(root / "git.md")}
    facts, _, _ = _open(corpus, tmp_path / "work")
    assert facts["cached"]  # the same place: reused

    (tmp_path / "work").rename(tmp_path / "moved")  # its notes are named by their old paths
    facts, paths, root = _open(corpus, tmp_path / "moved")
    assert not facts["cached"]
    assert paths == {str(root / "bread.md"), str(root / "git.md")}
    assert json.loads((root.parent / corpora.READY).read_text())["root"] == str(root)


def test_the_key_names_how_texts_are_built(monkeypatch) -> None:
    config = Config()
    before = corpora.index_identity(config)
    monkeypatch.setattr(corpora, "BUILD_VERSION", corpora.BUILD_VERSION + 1)
    assert corpora.index_identity(config) != before

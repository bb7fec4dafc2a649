"""The files kept beside an index keep their names (an index, its lock and its gap log must be
found again), and every one of them is named by mdrag.files.indexfiles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mdrag.files.indexfiles import IndexFiles, lite_homes, lite_lock, lite_log, normalized


def test_a_lite_index_keeps_its_files_beside_its_database(tmp_path):
    files = IndexFiles.at(str(tmp_path / "milvus.db"), tmp_path / "unused")
    assert files.is_lite and files.database == tmp_path / "milvus.db"
    assert files.lock == tmp_path / "milvus.db.mdrag.lock"
    assert files.dirty_marker == tmp_path / "milvus.db.dirty"
    assert files.carried_vectors == tmp_path / "milvus.carried.sqlite"
    assert files.gap_log == tmp_path / "milvus.gaps.sqlite"
    assert files.databases == [tmp_path / "milvus.db", tmp_path / "milvus.shard1.db"]
    assert files.rebuild_uri == str(tmp_path / "milvus.rebuild.db")
    assert files.rebuild_databases == [tmp_path / "milvus.rebuild.db", tmp_path / "milvus.rebuild.shard1.db"]
    assert files.rebuild_files() == [
        tmp_path / "milvus.rebuild.keywords",
        tmp_path / "milvus.rebuild.db",
        tmp_path / "milvus.rebuild.db.log",
        tmp_path / ".milvus.rebuild.db.lock",
        tmp_path / ".milvus.rebuild.db.home1",
        tmp_path / ".milvus.rebuild.db.home2",
        tmp_path / "milvus.rebuild.shard1.db",
        tmp_path / "milvus.rebuild.shard1.db.log",
        tmp_path / ".milvus.rebuild.shard1.db.lock",
        tmp_path / ".milvus.rebuild.shard1.db.home1",
        tmp_path / ".milvus.rebuild.shard1.db.home2",
    ]
    assert files.keyword_index == tmp_path / "milvus.keywords"
    assert files.roots_record == tmp_path / "milvus.roots.json"
    assert lite_log(files.databases[1]) == tmp_path / "milvus.shard1.db.log"
    assert lite_lock(files.databases[1]) == tmp_path / ".milvus.shard1.db.lock"
    assert lite_homes(files.databases[1]) == (
        tmp_path / ".milvus.shard1.db.home1",
        tmp_path / ".milvus.shard1.db.home2",
    )


def test_a_server_index_keeps_its_files_in_the_data_dir_named_after_its_uri(tmp_path):
    files = IndexFiles.at("http://localhost:19530", tmp_path / "data")
    name = "server-1966a52dd91f"  # sha256 of the URI, as every earlier mdrag named them
    assert not files.is_lite and files.database is None
    assert files.lock == tmp_path / "data" / f"{name}.mdrag.lock"
    assert files.dirty_marker == tmp_path / "data" / f"{name}.db.dirty"
    assert files.carried_vectors == tmp_path / "data" / f"{name}.carried.sqlite"
    assert files.gap_log == tmp_path / "data" / f"{name}.gaps.sqlite"
    assert files.databases == files.rebuild_databases == files.rebuild_files() == []
    assert files.keyword_index == tmp_path / "data" / f"{name}.keywords"


def test_every_path_is_expanded_and_made_absolute_once(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert normalized("~/index/milvus.db") == tmp_path / "index" / "milvus.db"
    assert IndexFiles.at("milvus.db", Path("data")).gap_log == tmp_path / "milvus.gaps.sqlite"
    assert IndexFiles.at("~/milvus.db", Path("data")).databases[0] == tmp_path / "milvus.db"
    assert IndexFiles.at("http://host:19530", Path("~/data")).lock.parent == tmp_path / "data"


def test_present_finds_the_index_files_and_never_a_users_note_beside_them(tmp_path):
    for name in [
        "milvus.db",
        "milvus.db.log",
        ".milvus.db.lock",
        "milvus.gaps.sqlite",
        "milvus.rebuild.db",
        "milvus.roots.json",
    ]:
        (tmp_path / name).write_text("")
    (tmp_path / ".milvus.db.home1" / ".cache").mkdir(parents=True)  # a Lite server's home
    files = IndexFiles.at(str(tmp_path / "milvus.db"), tmp_path)
    assert sorted(p.name for p in files.present()) == sorted(
        [
            ".milvus.db.home1",
            ".milvus.db.lock",
            "milvus.db",
            "milvus.db.log",
            "milvus.gaps.sqlite",
            "milvus.rebuild.db",
            "milvus.roots.json",
            tmp_path.name,
        ]
    )  # a folder of mdrag's own: it is closed too
    (tmp_path / "milvus.md").write_text("# A note named like the index\n")
    assert tmp_path / "milvus.md" not in files.present() and tmp_path not in files.present()


def test_naming_the_files_loads_no_pymilvus():
    code = (
        "import sys; from mdrag.files.indexfiles import IndexFiles; "
        "IndexFiles.at('/tmp/x/milvus.db', '/tmp').rebuild_files(); print('pymilvus' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_roots_an_index_is_opened_with_are_kept_privately_and_none_keeps_them(tmp_path):
    files = IndexFiles.at(str(tmp_path / "milvus.db"), tmp_path)
    assert files.recorded_roots() == []
    files.record_roots([str(tmp_path / "notes"), str(tmp_path / "wiki" / ".." / "notes")])
    assert files.recorded_roots() == [str(tmp_path / "notes")]  # resolved, once each
    assert files.roots_record.stat().st_mode & 0o077 == 0
    files.record_roots([])  # a command whose config names no roots keeps the daemon's
    assert files.recorded_roots() == [str(tmp_path / "notes")]
    files.roots_record.write_text("{not json")
    assert files.recorded_roots() == []

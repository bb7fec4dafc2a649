"""Config files kept parsed: a command reads an unchanged config without a YAML parser, and any change is seen."""

from __future__ import annotations

import datetime
import json
import os
import stat
import subprocess
import sys

import pytest

from mdrag.config import load_config
from mdrag.errors import ConfigError
from mdrag.files import configcache


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "mdrag" / "config"


def _entries(cache) -> list:
    return sorted(cache.glob("*.json")) if cache.exists() else []


def test_an_unchanged_config_is_read_again_without_importing_a_yaml_parser(tmp_path, cache):
    path = tmp_path / "config.yaml"
    path.write_text("search:\n  top_k: 7\n  threshold: 0.6\n")
    assert load_config(path).search_top_k == 7  # parsed, and kept
    assert len(_entries(cache)) == 1
    code = (
        "import sys; from mdrag.config import load_config; "
        f"c = load_config({str(path)!r}); print(c.search_top_k, c.search_threshold, 'yaml' in sys.modules)"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["7", "0.6", "False"]


def _rewrite_in_place_keeping_size_and_mtime(path, text):
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `touch -r` or a careless sync
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def _replace_by_rename(path, text):
    fresh = path.with_name("fresh.yaml")
    fresh.write_text(text)
    os.replace(fresh, path)  # as an editor saves: a new file in its place


def _edit_through_a_link(path, text):
    target = path.with_name("dotfiles-config.yaml")
    os.replace(path, target)
    path.symlink_to(target)
    assert load_config(path).search_top_k == 3  # the link read once, as it was
    target.write_text(text)


@pytest.mark.parametrize(
    "change", [_rewrite_in_place_keeping_size_and_mtime, _replace_by_rename, _edit_through_a_link]
)
def test_every_kind_of_change_to_the_file_is_read(tmp_path, cache, change):
    path = tmp_path / "config.yaml"
    path.write_text("search:\n  top_k: 3\n")
    assert load_config(path).search_top_k == 3
    change(path, "search:\n  top_k: 9\n")
    assert load_config(path).search_top_k == 9
    assert load_config(path).search_top_k == 9  # and kept as it is now


@pytest.mark.parametrize(
    "secret",
    [
        "milvus:\n  uri: http://localhost:19530\n  token: 'root:Milvus'\n",
        "milvus:\n  uri: http://root:Milvus@localhost:19530\n",
    ],
)
def test_a_file_that_holds_credentials_is_never_copied_to_the_cache(tmp_path, cache, secret):
    path = tmp_path / "config.yaml"
    path.write_text(secret)
    assert "Milvus" in (load_config(path).milvus_token + load_config(path).milvus_uri)
    assert _entries(cache) == []
    path.write_text("milvus:\n  uri: http://localhost:19530\n  token: ''\n")  # no credentials: kept
    load_config(path)
    assert len(_entries(cache)) == 1


@pytest.mark.parametrize("forgery", ["writable by others", "a link to another file"])
def test_an_entry_anyone_else_could_have_written_is_not_believed(tmp_path, cache, forgery):
    path = tmp_path / "config.yaml"
    path.write_text("search:\n  top_k: 3\n")
    load_config(path)
    (entry,) = _entries(cache)
    record = json.loads(entry.read_text())
    record["data"]["search"]["top_k"] = 99  # someone else's settings for this very file
    entry.unlink()
    if forgery == "writable by others":
        entry.write_text(json.dumps(record))
        entry.chmod(0o666)
    else:
        planted = tmp_path / "planted.json"
        planted.write_text(json.dumps(record))
        planted.chmod(0o600)
        entry.symlink_to(planted)
    assert load_config(path).search_top_k == 3


def test_the_cache_is_private_and_a_broken_or_unwritable_one_is_passed_by(tmp_path, cache, monkeypatch):
    path = tmp_path / "config.yaml"
    path.write_text("search:\n  top_k: 4\n")
    load_config(path)
    (entry,) = _entries(cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600 and stat.S_IMODE(cache.stat().st_mode) == 0o700
    entry.write_text("{not json")
    assert load_config(path).search_top_k == 4
    assert '"top_k": 4' in entry.read_text()  # written again
    entry.unlink()
    entry.symlink_to(tmp_path / "elsewhere.json")  # never written through
    assert load_config(path).search_top_k == 4 and not (tmp_path / "elsewhere.json").exists()
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # no cache can be made
    assert load_config(path).search_top_k == 4


def test_a_broken_file_is_an_error_every_time_never_a_cached_answer(tmp_path, cache):
    path = tmp_path / "config.yaml"
    path.write_text("search: [unclosed\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match="cannot read the config file"):
            load_config(path)
    assert _entries(cache) == []
    path.write_text("- a list\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match="must be a mapping"):
            load_config(path)


def test_a_value_json_cannot_hold_is_parsed_each_time(tmp_path, cache):
    path = tmp_path / "dates.yaml"
    path.write_text("when: 2026-11-27\n")

    def parse(text: str):
        return {"when": datetime.date(2026, 11, 27)}

    assert configcache.parsed(path, parse, cache) == {"when": datetime.date(2026, 11, 27)}
    assert _entries(cache) == []


def test_two_config_files_that_share_an_entry_name_take_turns_in_it(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(configcache.zlib, "crc32", lambda data: 0)  # every path the same checksum
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("search:\n  top_k: 3\n")
    second.write_text("search:\n  top_k: 8\n")
    for _ in range(2):
        assert load_config(first).search_top_k == 3
        assert load_config(second).search_top_k == 8
    assert len(_entries(cache)) == 1

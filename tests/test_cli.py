"""The `mdrag` command as a user runs it: real processes, real model, Milvus Lite in a tmp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import write


@pytest.fixture()
def env(tmp_path):
    return {
        **os.environ,
        "MDRAG_MILVUS_URI": str(tmp_path / "db" / "milvus.db"),
        "MDRAG_SERVER_SOCKET_PATH": str(tmp_path / "s.sock"),
        "MDRAG_CONFIG": str(write(tmp_path / "config.yaml", "{}\n")),
        "HF_HUB_OFFLINE": "1",
    }


def mdrag(env, *args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "mdrag.cli.main", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_reindex_json_search_json_and_status_json(env, notes):
    write(
        notes / "bread.md",
        "---\ntags: [baking]\n---\n# Bread\n\nLet the dough rise for five hours.\n",
    )
    (notes / "bad.md").write_bytes(b"caf\xe9 \xff")  # neither UTF-8 nor marked UTF-16/32
    indexed = mdrag(env, "reindex", str(notes), "--json")
    assert indexed.returncode == 0, indexed.stderr
    report = json.loads(indexed.stdout)
    assert set(report) >= {
        "added",
        "updated",
        "unchanged",
        "deleted",
        "failed",
        "sections_embedded",
        "seconds",
    }
    assert report["added"] == 1 and report["failed"][0]["file_path"] == str(notes / "bad.md")

    found = mdrag(env, "search", "how long does dough rise", "--threshold", "0.2", "--json")
    assert found.returncode == 0, found.stderr
    response = json.loads(found.stdout)
    assert response["results"][0]["file_path"] == str(notes / "bread.md")
    assert response["search_parameters"]["threshold"] == 0.2

    status = json.loads(mdrag(env, "status", "--json").stdout)
    assert status["documents"] == {"indexed": 1, "failed": 1}
    assert status["failed"][0]["error"].startswith("not valid UTF-8")


def test_human_search_output_shows_score_path_line_and_heading(env, notes):
    write(notes / "git.md", "# Git\n\n## Branches\n\nCreate a feature branch for every change.\n")
    assert mdrag(env, "reindex", str(notes)).returncode == 0
    out = mdrag(env, "search", "feature branch", "--threshold", "0", cwd=notes).stdout
    assert "git.md:3" in out and "Git > Branches" in out and "feature branch" in out


@pytest.mark.slow
def test_human_search_output_lists_the_closest_notes_when_nothing_passes(env, notes):
    write(notes / "git.md", "# Git\n\n## Branches\n\nCreate a feature branch for every change.\n")
    assert mdrag(env, "reindex", str(notes)).returncode == 0
    done = mdrag(env, "search", "how do I rebase onto main", "--threshold", "0.999", cwd=notes)
    # Nothing to give: exit 1 and an empty stdout for scripts; the person reads stderr.
    assert done.returncode == 1 and done.stdout == ""
    assert (
        "no confident answer in your notes: no note mentions rebase, onto or main; closest notes:"
        in done.stderr
    )
    assert "git.md" in done.stderr and "Git > Branches" in done.stderr


def test_invalid_query_is_a_usage_error_exit_code_2(env):
    result = mdrag(env, "search", "   ")
    assert result.returncode == 2
    assert result.stderr.startswith("Error: query must be 1-1000 characters")


def test_bad_config_value_is_an_error_naming_key_and_file(env, tmp_path):
    config = write(tmp_path / "bad.yaml", "search:\n  top_k: 500\n")
    result = mdrag(env, "--config", str(config), "status")
    assert result.returncode == 1
    assert "search.top_k" in result.stderr and str(config) in result.stderr
    assert "Traceback" not in result.stderr


def test_reindex_with_no_roots_and_no_paths_says_what_to_do(env):
    result = mdrag(env, "reindex")
    assert result.returncode == 1 and "no roots configured" in result.stderr


def test_reindex_takes_a_path_as_output_shows_it_from_any_folder_under_the_roots_the_index_last_had(
    env, tmp_path
):
    vault = tmp_path / "vault"
    write(vault / "ops" / "restore.md", "# Restore\n\nRun pg_restore against the dump.\n")
    write(vault / "draft.md", "# Draft\n\nA lighthouse keeper's notes.\n")
    assert mdrag(env, "reindex", str(vault)).returncode == 0  # no roots configured: this one
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (vault / "draft.md").unlink()
    write(vault / "ops" / "new.md", "# New\n\nRotate the backup keys.\n")
    # As `search` shows them (`vault/…`), from a folder that holds no `vault`: a folder, and a
    # note deleted since, which only its root can name.
    result = mdrag(env, "reindex", "vault/ops", "vault/draft.md", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "added 1," in result.stdout and "deleted 1," in result.stdout


def test_version_is_the_packages_own_and_the_installed_one(env):
    # `--version` prints mdrag.__version__ (click would read the installed metadata, ~20 ms of
    # the process); pyproject takes its version from there, so the two cannot part.
    from importlib.metadata import version

    from mdrag import __version__

    result = mdrag(env, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"mdrag, version {__version__}"
    assert version("mdrag") == __version__


def test_status_says_how_many_notes_searches_leave_out_until_they_are_read_again(capsys):
    from mdrag.cli.render import index_status
    from mdrag.client.paths import Paths

    report = {
        "roots": ["/n"],
        "unavailable_roots": [{"root": "/n/usb", "reason": "not mounted", "notes_kept": 3}],
        "unshown": {"notes": 3, "example": "/n/usb/a.md"},
        "documents": {"indexed": 5},
        "sections": 9,
        "open_gaps": 0,
        "last_indexed_at": None,
        "model": "m",
        "store": {"uri": "/db", "shards": 1},
        "failed": [],
        "warnings": [],
    }
    index_status(report, Paths())
    out = capsys.readouterr().out
    assert (
        "NOT SHOWN: 3 note(s) whose search rows were lost, until they can be read again (e.g. /n/usb/a.md)"
        in out
    )
    index_status({**report, "unshown": None}, Paths())
    assert "NOT SHOWN" not in capsys.readouterr().out

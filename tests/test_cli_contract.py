"""The CLI's promises to a newcomer and a script: no index is ever made by a read, exit codes, --config anywhere."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from mdrag.cli.main import main
from mdrag.client.paths import Paths

READ_COMMANDS = [
    ["search", "how do I restore the database"],
    ["status"],
    ["similar", "note.md"],
    ["related", "note.md"],
    ["duplicates"],
    ["gaps"],
    ["gaps", "resolve", "a query"],
    ["context", "how do I restore the database"],
]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user: no config, no index, no daemon (a socket path nobody serves)."""
    for name in list(os.environ):
        if name.startswith("MDRAG_") and not name.startswith("MDRAG_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "run").mkdir(mode=0o700)  # as a login session's: one that is not there is not used
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main_with(list(args))
    return int(exited.value.code or 0)


def main_with(args: list[str]) -> None:
    import sys

    saved = sys.argv
    sys.argv = ["mdrag", *args]
    try:
        main()
    finally:
        sys.argv = saved


def everything_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.exists() else []


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: " ".join(a))
def test_a_read_command_with_no_daemon_and_no_index_says_so_and_creates_nothing(home, capsys, args):
    before = everything_under(home)
    assert run(*args) == 1
    err = capsys.readouterr().err
    index = home / "data" / "mdrag" / "milvus.db"
    assert f"no index at {index}: start `mdrag serve` or run `mdrag reindex DIR`" in err
    assert everything_under(home) == before  # no index, no gaps file, no data dir


def test_config_is_accepted_after_the_subcommand_as_well_as_before(home, capsys):
    config = home / "elsewhere.yaml"
    config.write_text(f"milvus:\n  uri: {home / 'other' / 'index.db'}\n")
    for args in (
        ["search", "--config", str(config), "a query"],
        ["--config", str(config), "search", "a query"],
        ["gaps", "resolve", "a query", "--config", str(config)],
        ["status", "--config", str(config)],
    ):
        assert run(*args) == 1
        assert f"no index at {home / 'other' / 'index.db'}" in capsys.readouterr().err, args


def test_a_config_after_the_subcommand_wins_over_one_before_it(home, capsys):
    first, second = home / "first.yaml", home / "second.yaml"
    first.write_text("milvus:\n  uri: /nowhere/first.db\n")
    second.write_text("milvus:\n  uri: /nowhere/second.db\n")
    assert run("--config", str(first), "status", "--config", str(second)) == 1
    assert "no index at /nowhere/second.db" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["search", "--no-such-option", "q"],
        ["similar"],
        ["search"],  # no query, no passage: said as a usage error, not as a query of 0 characters
        ["search", "-k", "many", "q"],
        ["nonsense"],
        ["context"],
    ],
    ids=lambda a: " ".join(a),
)
def test_usage_errors_exit_2(home, capsys, args):
    assert run(*args) == 2
    assert "Usage:" in capsys.readouterr().err


def test_other_errors_exit_1_with_an_error_line(home, capsys):
    (home / "bad.yaml").write_text("search:\n  top_k: 0\n")
    assert run("--config", str(home / "bad.yaml"), "search", "q") == 1
    assert capsys.readouterr().err.startswith("Error: ")


def test_an_unknown_environment_variable_is_warned_about_and_the_command_answers(home, capsys, monkeypatch):
    monkeypatch.setenv("MDRAG_HOME", "x")  # a name another tool might set
    run("status")  # no index here: the command goes on past its config to say so
    err = capsys.readouterr().err
    assert "warning: environment variable MDRAG_HOME is not an mdrag setting, ignored" in err
    assert "Error: no index at" in err


def test_a_known_environment_variable_with_a_bad_value_stops_a_command_with_a_clear_error(
    home, capsys, monkeypatch
):
    monkeypatch.setenv("MDRAG_SEARCH_TOP_K", "x")
    assert run("status") == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and "MDRAG_SEARCH_TOP_K" in err and "Traceback" not in err


def test_serve_and_reindex_of_a_missing_root_fail_and_name_it(home, capsys):
    present = home / "notes"
    present.mkdir()
    config = home / "roots.yaml"
    config.write_text(f"roots: ['{home / 'unmounted'}', '{present}']\n")
    for args in (["serve"], ["reindex"]):
        assert run("--config", str(config), *args) == 1
        err = capsys.readouterr().err
        assert f"{home / 'unmounted'} does not exist" in err and err.startswith("Error: "), args


def test_serve_and_reindex_share_one_arena_before_any_thread_starts(home, monkeypatch):
    # What indexing frees goes back to the system only if no thread has its own arena yet.
    from mdrag.embedding import heap

    notes = home / "notes"
    notes.mkdir()
    threads_at_call = []

    def stop_here() -> None:
        threads_at_call.append(threading.active_count())
        raise SystemExit(7)  # this test is about the call, not the indexing that would follow

    def too_late(*args: object, **kwargs: object) -> None:
        raise SystemExit(8)  # the index opened, or a daemon started, before the call

    monkeypatch.setattr(heap, "share_one_arena", stop_here)
    monkeypatch.setattr("mdrag.client.route.lock_index_for_daemon", too_late)
    monkeypatch.setattr("mdrag.cli.main.open_route", too_late)
    before = threading.active_count()
    assert run("serve", "--root", str(notes)) == 7
    assert run("reindex", str(notes)) == 7
    assert threads_at_call == [before, before]


def test_a_read_command_warns_of_a_missing_root_and_goes_on(home, capsys):
    config = home / "roots.yaml"
    config.write_text(f"roots: ['{home / 'unmounted'}']\n")
    assert run("--config", str(config), "status") == 1  # it went on, to the index (none here)
    err = capsys.readouterr().err
    assert f"warning: the root {home / 'unmounted'} does not exist" in err
    assert "no index at" in err


def test_paths_are_shown_from_their_roots_name(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    monkeypatch.chdir(tmp_path / "..")
    paths = Paths([str(vault), str(vault / "deep" / "inner")])
    assert paths.shown(str(vault / "a" / "b.md")) == "vault/a/b.md"
    assert paths.shown(str(vault / "deep" / "inner" / "c.md")) == "inner/c.md"  # the closest root
    assert paths.shown(str(tmp_path / "vaultish" / "x.md")) == f"{tmp_path.name}/vaultish/x.md"
    assert paths.shown("/elsewhere/x.md") == "/elsewhere/x.md"
    assert paths.shown(str(vault)) == f"{tmp_path.name}/vault"  # a root's failure: where it is
    assert paths.shown_folder(str(vault)) == "vault"  # a root itself, as a --path names it
    assert paths.shown_folder(str(vault / "a")) == "vault/a"


def test_a_path_typed_as_text_output_shows_it_names_the_note_under_its_root(tmp_path, monkeypatch):
    vault = tmp_path / "roots" / "vault"
    (vault / "a").mkdir(parents=True)
    (vault / "a" / "b.md").write_text("# B\n")
    here = tmp_path / "here"
    (here / "local").mkdir(parents=True)
    monkeypatch.chdir(here)
    paths = Paths([str(vault)])
    assert paths.typed("vault/a/b.md") == str(vault / "a" / "b.md")  # as `search` shows it
    assert paths.typed("vault/a") == str(vault / "a")  # a --path prefix
    assert paths.typed("vault") == str(vault)
    assert paths.typed("local") == str(here / "local")  # what is there from here comes first
    # Nothing there: still under the root it names (a note deleted since, for reindex to drop;
    # a typo, named where it was meant), unless two roots share that name.
    assert paths.typed("vault/missing.md") == str(vault / "missing.md")
    twin = tmp_path / "other" / "vault"
    twin.mkdir(parents=True)
    assert Paths([str(vault), str(twin)]).typed("vault/missing.md") == str(here / "vault" / "missing.md")
    assert paths.typed(str(vault / "a" / "b.md")) == str(vault / "a" / "b.md")
    (here / "vault" / "a").mkdir(parents=True)
    assert paths.typed("vault/a") == str(here / "vault" / "a")  # here wins over a root's name


@pytest.mark.parametrize(
    ("embedded", "described", "words"),
    [
        (1, 0, "1 section embedded"),
        (2, 0, "2 sections embedded"),
        (0, 1, "0 sections and 1 description embedded"),
        (2, 3, "2 sections and 3 descriptions embedded"),
    ],
)
def test_a_runs_report_counts_in_words_and_names_each_root_left_without_notes(
    capsys, embedded, described, words
):
    from mdrag.cli import render

    report = {
        **dict.fromkeys(("added", "updated", "unchanged", "deleted", "sections_reused"), 0),
        "failed": [],
        "sections_embedded": embedded,
        "descriptions_embedded": described,
        "seconds": 0.3,
        "upgrade": "",
        "roots_without_notes": ["/n/archives"],
    }
    render.reindex_report(report, Paths([]))
    out = capsys.readouterr().out
    assert f"; {words} in 0.3s" in out
    assert (
        "NO NOTES: /n/archives (no .md or .markdown file of it is indexed; is it the folder you meant?)"
        in out
    )

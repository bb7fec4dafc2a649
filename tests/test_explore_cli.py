"""The exploring commands as a user runs them, with --json: through a running daemon, and with none."""

from __future__ import annotations

import json
import os

import pytest

from mdrag.cli.explore import relation_lines
from tests.conftest import write
from tests.daemon_process import DaemonProcess, mdrag_cli
from tests.test_explore import OTHERS, SOURDOUGH

GAP = "how do I renew a fishing licence"


def run_json(env, *args, stdin=None, code=0):
    """Search and context exit 1 when they have nothing to give, --json or not."""
    result = mdrag_cli(env, *args, "--json", timeout=180, stdin=stdin)
    assert result.returncode == code, result.stderr
    return json.loads(result.stdout)


def fill(notes):
    write(notes / "sourdough.md", SOURDOUGH)
    write(notes / "old" / "sourdough.md", SOURDOUGH.replace("every morning", "each morning"))
    for name, text in OTHERS.items():
        write(notes / name, text)
    write(notes / "kitchen.md", "# Kitchen\n\nThe recipe is in [[sourdough]].\n")


@pytest.fixture()
def daemon(tmp_path):
    notes = tmp_path / "notes"
    fill(notes)
    process = DaemonProcess(notes, tmp_path / "state").start()
    process.wait_fresh()
    yield process
    process.close()


def assert_shown_paths_are_accepted_back(env, notes):
    """Text output shows `notes/old/sourdough.md` (from the root's name): typed back from a
    directory that holds no `notes`, it names the same note or folder."""
    assert not os.path.exists("notes")  # the tests' working directory: the root's name alone leads
    kitchen = run_json(env, "related", "notes/kitchen.md")
    assert kitchen["note"] == str(notes / "kitchen.md")
    similar = run_json(env, "similar", "notes/sourdough.md", "-k", "1")
    assert similar["results"][0]["path"] == str(notes / "old" / "sourdough.md")
    under = run_json(env, "search", "sourdough starter", "--path", "notes/old", "--threshold", "0")
    assert {hit["file_path"] for hit in under["results"]} == {str(notes / "old" / "sourdough.md")}
    pack = run_json(env, "context", "sourdough starter", "--path", "notes/old")
    assert {source["path"] for source in pack["sources"]} <= {str(notes / "old" / "sourdough.md")}


def test_every_command_answers_through_the_daemon_and_gaps_survive_its_restart(daemon):
    env, notes = daemon.env, daemon.notes
    original, copy = str(notes / "sourdough.md"), str(notes / "old" / "sourdough.md")

    similar = run_json(env, "similar", original, "-k", "3")
    assert similar["results"][0]["path"] == copy and similar["results"][0]["tier"] == "near-duplicate"
    draft = run_json(env, "similar", "--text", "-", stdin=SOURDOUGH)
    assert draft["results"][0]["score"] >= 90
    pairs = run_json(env, "duplicates")
    assert [{p["a"], p["b"]} for p in pairs["pairs"]] == [{original, copy}]
    related = run_json(env, "related", str(notes / "kitchen.md"))
    assert "links to" in {r["path"]: r["relations"] for r in related["related"]}[original]
    assert_shown_paths_are_accepted_back(env, notes)
    backlinks = run_json(env, "related", original)["backlinks"]
    assert [b["path"] for b in backlinks] == [str(notes / "kitchen.md")]
    pack = run_json(env, "context", "how do I bake sourdough bread", "--max-tokens", "200")
    assert pack["sources"] and pack["tokens"] <= 200 and "#" in pack["sources"][0]["anchor"]
    explained = run_json(env, "search", "sourdough starter", "--explain", "--threshold", "0.5")
    assert explained["results"][0]["explain"]["score_rank"] >= 1
    assert explained["confidence"]["level"] in ("high", "medium", "low")
    selected = run_json(env, "search", "--selected", "-", "--threshold", "0.3", stdin=OTHERS["tax.md"])
    assert selected["results"][0]["file_path"] == str(notes / "tax.md")

    for _ in range(3):
        assert run_json(env, "search", GAP, code=1)["results"] == []
    gaps = [g for g in run_json(env, "gaps")["gaps"] if g["query"] == GAP]
    assert [(g["count"], g["status"]) for g in gaps] == [(3, "open")]

    daemon.stop_cleanly()
    daemon.start()
    gaps = [g for g in run_json(env, "gaps", "--status", "open")["gaps"] if g["query"] == GAP]
    assert [g["count"] for g in gaps] == [3]
    assert run_json(env, "gaps", "resolve", GAP)["status"] == "addressed"
    assert not [g for g in run_json(env, "gaps", "--status", "open")["gaps"] if g["query"] == GAP]
    text = mdrag_cli(env, "gaps", "--status", "addressed")
    assert GAP in text.stdout


def indexed_without_a_daemon(tmp_path):
    """The notes indexed by `mdrag reindex`, and the environment of commands that find no daemon."""
    notes = tmp_path / "notes"
    fill(notes)
    env = {
        **os.environ,
        "MDRAG_MILVUS_URI": str(tmp_path / "db" / "milvus.db"),
        "MDRAG_SERVER_SOCKET_PATH": str(tmp_path / "none.sock"),
        "MDRAG_CONFIG": str(write(tmp_path / "config.yaml", f"roots: [{notes}]\n")),
        "HF_HUB_OFFLINE": "1",
    }
    assert run_json(env, "reindex")["added"] == 6
    return env, notes


def test_the_commands_work_without_a_daemon(tmp_path):
    env, notes = indexed_without_a_daemon(tmp_path)
    draft = run_json(env, "similar", "--text", "-", stdin=SOURDOUGH)
    assert draft["results"][0]["tier"] == "near-duplicate"
    assert len(run_json(env, "duplicates", "--min-score", "90")["pairs"]) == 1
    related = run_json(env, "related", str(notes / "sourdough.md"))
    assert [b["path"] for b in related["backlinks"]] == [str(notes / "kitchen.md")]
    assert run_json(env, "search", GAP, code=1)["confidence"]["level"] in ("none", "low")
    assert [g["query"] for g in run_json(env, "gaps")["gaps"]] == [GAP]
    human = mdrag_cli(env, "related", str(notes / "kitchen.md"))
    assert human.returncode == 0 and "links to" in human.stdout
    assert_shown_paths_are_accepted_back(env, notes)
    # A config naming no roots (the daemon had them on its command line: `make run NOTES=…`):
    # paths are shown, and taken, from the roots the index was last opened with.
    bare = {**env, "MDRAG_CONFIG": str(write(tmp_path / "bare.yaml", "{}\n"))}
    shown = mdrag_cli(bare, "search", "sourdough starter", "--threshold", "0")
    assert shown.returncode == 0 and "notes/sourdough.md" in shown.stdout, shown.stdout
    assert str(notes) not in shown.stdout
    assert run_json(bare, "related", "notes/kitchen.md")["note"] == str(notes / "kitchen.md")


# Arguments out of their limits, checked by the daemon or the index rather than by click: each is
# a usage error (exit 2), as click's own are. Naming what the index does not hold is not (exit 1).
OUT_OF_LIMITS = [
    ["search", ""],
    ["search", "   "],
    ["search", "bread", "-k", "0"],
    ["search", "bread", "-k", "-3"],
    ["search", "bread", "-k", "101"],
    ["search", "bread", "--threshold", "2"],
    ["search", "bread", "--threshold", "-0.1"],
    ["search", "bread", "--wait-fresh", "-1"],
    ["context", "bread", "--max-tokens", "0"],
    ["duplicates", "--min-score", "200"],
    ["similar", "--text", "-", "-k", "0"],
    ["duplicates", "--limit", "0"],
    ["related", "not-there.md", "-k", "0"],
]
NOT_HELD = [["related", "not-there.md"], ["similar", "not-there.md"], ["gaps", "resolve", "never asked"]]


def assert_exit_codes(env):
    for args in OUT_OF_LIMITS:
        result = mdrag_cli(env, *args, timeout=180, stdin=SOURDOUGH)
        assert (result.returncode, result.stdout) == (2, ""), (args, result.stdout, result.stderr)
        assert result.stderr.startswith(("Error: ", "Usage: ")), (args, result.stderr)
        assert "Traceback" not in result.stderr, args
    for args in NOT_HELD:
        result = mdrag_cli(env, *args, timeout=180)
        assert result.returncode == 1, (args, result.stderr)
        assert result.stderr.startswith("Error: ") and "Traceback" not in result.stderr, args


def test_arguments_out_of_their_limits_exit_2_through_the_daemon(daemon):
    assert_exit_codes(daemon.env)


def test_arguments_out_of_their_limits_exit_2_without_a_daemon(tmp_path):
    env, _ = indexed_without_a_daemon(tmp_path)
    assert_exit_codes(env)


def test_related_lines_keep_every_path_in_one_column_clear_of_its_relations():
    """'links to, linked from, similar' is 32 characters: a fixed column of 28 ran it into the path."""
    items = [
        {
            "path": "/n/a.md",
            "relations": ["links to", "linked from", "similar"],
            "score": 0.71,
            "tier": "similar",
        },
        {"path": "/n/b.md", "relations": ["linked from"], "score": None, "tier": None},
    ]
    lines = relation_lines(items, lambda path: "notes" + path[2:])
    assert lines == [
        "links to, linked from, similar  notes/a.md  (0.71, similar)",
        "linked from                     notes/b.md",
    ]
    assert relation_lines([], str) == []

"""The README's set-up and command examples run as written against examples/notes and print what it shows.

Each command example of README.md is run here, against a daemon started by the Makefile's own
`run` recipe, and its key lines checked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mdrag.client.connection import DaemonClient
from mdrag.errors import RemoteError, ServerNotRunningError
from mdrag.notes.scanner import NoteFilter

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "notes"
EXAMPLES_DOC = REPO / "README.md"

pytestmark = pytest.mark.slow

# (command as the README writes it, exit code, key lines of stdout as regexes; `!` + text:
# this text on stderr). Paths in text output are shown from the root's name: notes/...
WHILE_SERVING = [
    (
        "mdrag status",
        0,
        [r"^daemon:\s+running \(pid \d+", r"^state:\s+watching$", r"^documents: {n} \(indexed {n}\)$"],
    ),
    (
        'mdrag search "how do I restore a database backup"',
        0,
        [r"^0\.[789]\d\d\s+notes/runbooks/restore-the-database\.md:6-8\s", r"^\(1 result, "],
    ),
    (
        'mdrag search "how do I restore a database backup" --threshold 0.5',
        0,
        [r"^0\.[56]\d\d\s+notes/runbooks/restore-the-database\.md:10-17\s", r"^\(2 results, "],
    ),
    (
        "mdrag search pg_restore --mode keyword -k 1",
        0,
        [
            r"^[\d.]+\s+notes/(postgresql-backup-and-restore|runbooks/restore-the-database)\.md:\d+-\d+\s",
            r"^\(1 result, ",
        ],
    ),
    (
        'mdrag search "how do I renew a fishing licence"',
        1,
        ["!no confident answer in your notes: no note mentions renew, fishing or licence; closest notes:"],
    ),
    (
        'mdrag search "how do I set up Grafana Loki"',
        1,
        ["!no confident answer in your notes: no note mentions grafana or loki; closest notes:"],
    ),
    (
        "mdrag similar examples/notes/cooking/sourdough-bread-baking.md -k 3",
        0,
        # the tier is a column as wide as its longest name ("closely related")
        [r"^\s*(9\d|100)\s+near-duplicate\s+notes/archive/sourdough-2023\.md$"],
    ),
    (
        "mdrag duplicates",
        0,
        [
            r"^\(1 pair at 90 or above\)$",
            r"^\s*(9\d|100)\s+notes/archive/sourdough-2023\.md$",
            r"^\s+notes/cooking/sourdough-bread-baking\.md$",
        ],
    ),
    (
        "mdrag related examples/notes/kitchen.md",
        0,
        [
            r"^linked from(, similar)?\s+notes/meal-plan\.md",
            r"^links to(, similar)?\s+notes/cooking/sourdough-bread-baking\.md",
            r"^links to(, similar)?\s+notes/cooking/tomato-pasta-sauce\.md",
            r"^similar\s+notes/archive/sourdough-2023\.md",
            r"^broken link, line 8: Shopping list$",
        ],
    ),
    ("mdrag gaps", 0, [r"^\s+1x\s+open\s+how do I renew a fishing licence$"]),
    (
        'mdrag gaps resolve "how do I renew a fishing licence"',
        0,
        [r"^how do I renew a fishing licence: addressed$"],
    ),
    (
        'mdrag context "how do I restore the database" --max-tokens 300',
        0,
        [
            r"^Notes relevant to: how do I restore the database$",
            r"^\[1\] \S+restore-the-database\.md#\S+ \(lines \d+-\d+\)",
        ],
    ),
    ("mdrag reindex examples/notes", 0, [r"^added 0, updated 0, unchanged {n}, deleted 0, failed 0;"]),
]
# After `make run` stops (Ctrl-C): the same commands read the same index, and show its paths as
# the daemon did, from the roots it was opened with (`make run` gives them on the command line).
AFTER_STOP = [
    ("mdrag status", 0, [r"^daemon:\s+not running", r"^documents: {n} \(indexed {n}\)$"]),
    (
        'mdrag search "how do I restore a database backup"',
        0,
        [r"^[\d.]+\s+notes/runbooks/restore-the-database\.md:\d+-\d+\s"],
    ),
]


def make_run_command() -> tuple[dict[str, str], list[str]]:
    """The Makefile's `run` recipe, as make would run it on a fresh clone (NOTES at its default)."""
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "the Makefile has no run target"
    lines = [line.strip() for line in recipe.group(1).splitlines()]
    assert len(lines) == 1, f"expected a one-line run recipe, got {lines}"
    notes = re.search(r"^NOTES\s*\?=\s*(\S+)", makefile, re.M)
    assert notes
    line = (
        lines[0]
        .replace("$(MDRAG)", "mdrag")
        .replace("$(NOTES)", notes.group(1))
        .replace("$(CURDIR)", str(REPO))
    )
    assert "$(" not in line, f"the run recipe uses a variable this test does not know: {line}"
    words = shlex.split(line)
    env = {}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "mdrag", line
    return env, [sys.executable, "-m", "mdrag.cli.main", *words[1:]]


def cli(command: str) -> list[str]:
    words = shlex.split(command)
    assert words[0] == "mdrag"
    return [sys.executable, "-m", "mdrag.cli.main", *words[1:]]


def check(command: str, code: int, expected: list[str], env: dict[str, str], notes: int) -> str:
    done = subprocess.run(cli(command), cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    where = f"$ {command}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    assert done.returncode == code, where
    lines = done.stdout.splitlines()
    for pattern in expected:
        if pattern.startswith("!"):
            assert pattern[1:] in done.stderr, where
            continue
        regex = re.compile(pattern.replace("{n}", str(notes)))
        assert any(regex.search(line) for line in lines), f"no line matches {regex.pattern}\n{where}"
    # Text output shows paths from their root, never from /
    # (the roots themselves, and context's citations for an assistant, stay absolute)
    if "context" not in command:
        assert not any(str(REPO) in line for line in lines if not line.startswith("roots:")), where
    return done.stdout


def state_files(home: Path) -> list[Path]:
    """mdrag's files under the data dir, less what an open index has only while it is open: the
    lock and crash-marker files, and the Lite servers' homes (hidden, like the locks)."""
    data = home / "data"
    return sorted(
        p.relative_to(home)
        for p in data.rglob("*")
        if not any(part.startswith(".") for part in p.relative_to(data).parts)
        and not p.name.endswith(".dirty")
    )


@pytest.fixture(scope="module")
def readme_env():
    home = Path(tempfile.mkdtemp(prefix="mdr", dir="/tmp"))  # short: the socket lives under it
    (home / "run").mkdir(mode=0o700)  # as a login session's: one that is not there is not used
    env = {k: v for k, v in os.environ.items() if not k.startswith("MDRAG_") or k.startswith("MDRAG_TEST_")}
    env.update(
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_RUNTIME_DIR=str(home / "run"),
        HF_HUB_OFFLINE="1",
    )
    yield env, home
    subprocess.run(["rm", "-rf", str(home)], check=False)


def test_every_readme_example_is_in_the_examples_text():
    text = EXAMPLES_DOC.read_text()
    for command, _, _ in WHILE_SERVING + AFTER_STOP:
        assert command in text, f"{command!r} is tested but not in {EXAMPLES_DOC.name}"
    assert "make run" in text


def test_the_readme_set_up_and_every_command_example_run_as_written(readme_env):
    env, home = readme_env
    notes = len(list(NoteFilter([EXAMPLES]).scan()))
    make_env, serve = make_run_command()
    with open(home / "daemon.log", "w") as log:  # the child keeps its own copy of the descriptor
        daemon = subprocess.Popen(serve, cwd=REPO, env={**env, **make_env}, stdout=log, stderr=log, text=True)
    try:
        client = DaemonClient(str(home / "run" / "mdrag" / "mdrag.sock"), timeout=120)
        deadline = time.monotonic() + 180
        while True:
            assert daemon.poll() is None, (home / "daemon.log").read_text()
            assert time.monotonic() < deadline, (home / "daemon.log").read_text()
            try:
                state = client.call("status")["daemon"]
                if state["state"] == "watching" and state["queue_depth"] == 0:
                    break
            except (ServerNotRunningError, RemoteError):
                pass
            time.sleep(0.3)
        for command, code, expected in WHILE_SERVING:
            check(command, code, expected, env, notes)
        # --json keeps absolute paths for scripts
        out = subprocess.run(
            cli('mdrag search "why does my wifi keep dropping" --threshold 0.5 --json'),
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
        hit = json.loads(out.stdout)["results"][0]
        assert hit["file_path"] == str(EXAMPLES / "projects" / "home-network-troubleshooting.md")
        index_files = state_files(home)
    finally:
        daemon.send_signal(signal.SIGINT)  # Ctrl-C in make run's terminal
        daemon.wait(timeout=60)
    for command, code, expected in AFTER_STOP:
        check(command, code, expected, env, notes)
    # the second terminal's commands read the daemon's index and made no other
    assert state_files(home) == index_files

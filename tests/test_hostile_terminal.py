"""Notes that talk to the terminal: escape sequences in a note's text, headings, title, tags, links
and file names never reach the terminal through any command's output.

A real daemon indexes notes planted with OSC 52 (write the clipboard), OSC 0 (the window's title),
CSI 2J (clear the screen), SGR 8 (hide what follows), a carriage return, 8-bit C1 controls and
BEL, in every place a note can hold text; every command that prints what a note holds runs in a
real pty (python's `pty`), as a person at a terminal runs it, and through a NO_COLOR pipe. The only
escapes that may come out are mdrag's own: its colours and its OSC 8 links to a percent-encoded
file:// URI.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write
from tests.daemon_process import DaemonProcess, mdrag_cli

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: the clipboard holds `rm -rf ~`
TITLE = "\x1b]0;owned\x1b\\"  # OSC 0: the window's title, ended by ST
CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
HIDDEN = "\x1b[8m"  # SGR 8: what follows is invisible
C1 = "\x9b2J\x9d0;c1-title\x9c"  # the same, 8-bit
BELL, OVERWRITE = "\x07", "\r"  # a carriage return: what follows writes over the line
# In file names, their own payloads: a name shows its controls as `?`, so its payload as text.
NAME_TITLE, NAME_CLIP = "\x1b]0;name-title\x07", "\x1b]52;c;bmFtZQ==\x07"

# mdrag's own: the colours click writes for its styles, and OSC 8 links to a printable URI.
OWN = re.compile(r"\x1b\[(?:0|1|2|31|32|33|36)m|\x1b\]8;;(?:file://[!-~]+)?\x1b\\")


def planted(notes: Path) -> dict[str, Path]:
    """Notes holding the sequences in every place: text, headings, title and tags, a link's
    target, file names (an indexed one, a failed one)."""
    lamp = write(
        notes / "lamp.md",
        f"---\ntitle: Lamp {TITLE} room\ntags: [keeper{CLIPBOARD}, light{C1}]\n---\n"
        f"# Lighthouse {CLIPBOARD} keeper\n\n"
        f"The lighthouse keeper trims the wick {HIDDEN}every{BELL} evening{CLEAR} and logs the weather.{OVERWRITE}\n\n"
        f"See [[missing {TITLE} note]] and [[nowhere{C1}]].\n",
    )
    odd = write(
        notes / f"wick{NAME_TITLE}{HIDDEN}.md",
        f"# Wick {C1}care\n\nA lighthouse keeper trims the wick{CLIPBOARD} every evening and logs the weather.\n",
    )
    twin = write(notes / f"twin{CLEAR}.md", lamp.read_text())  # a duplicate of lamp.md
    failed = notes / f"bad{NAME_CLIP}.md"
    failed.write_bytes(b"# Bad\n\n\xff\xfe not UTF-8 \xc3\x28 at all\n")
    return {"lamp": lamp, "odd": odd, "twin": twin, "failed": failed}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory) -> Iterator[DaemonProcess]:
    base = tmp_path_factory.mktemp("terminal")
    notes = base / "notes"
    planted(notes)
    process = DaemonProcess(notes, base / "state").start()
    process.wait_fresh()
    # A question the notes cannot answer, holding the sequences: a gap `mdrag gaps` lists.
    process.client.call("search", query=f"zebra migration {TITLE}{CLIPBOARD} routes")
    yield process
    process.close()


def in_terminal(env: dict[str, str], *args: str, stderr_too: bool = True) -> str:
    """What `mdrag ARGS` writes to a real terminal (a pty), decoded; stderr to it as well unless
    `stderr_too` is false (reindex's progress bar: tqdm's own)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "mdrag.cli.main", *args],
        env={**env, "TERM": "xterm-256color"},
        stdin=slave,
        stdout=slave,
        stderr=slave if stderr_too else subprocess.DEVNULL,
        close_fds=True,
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        process.wait(30)
    return out.decode("utf-8", errors="replace")


def assert_only_own_escapes(output: str, what: str) -> None:
    rest = OWN.sub("", output)
    bad = sorted({f"U+{ord(c):04X}" for c in rest if c in "\x1b\x07" or 0x80 <= ord(c) <= 0x9F})
    assert not bad, f"{what}: {bad} reached the terminal:\n{output!r}"
    # A sequence in a note's text goes whole, payload and all (the OSC 52 one's is the clipboard's).
    assert "cm0gLXJmIH4=" not in rest, f"{what}: the clipboard's payload shown:\n{output!r}"


def commands(notes: Path) -> list[tuple[str, ...]]:
    lamp = str(notes / "lamp.md")
    return [
        ("search", "lighthouse keeper trims the wick", "--threshold", "0"),
        ("search", "lighthouse keeper trims the wick", "--threshold", "0", "--explain"),
        ("search", "zebra migration routes", "--threshold", "0.99"),  # nothing: the closest notes
        ("open", "lighthouse keeper wick", "1", "--print"),
        ("similar", lamp),
        ("related", lamp),
        ("context", "lighthouse keeper trims the wick"),
        ("status",),
        ("gaps",),
        ("duplicates", "--min-score", "90"),
        ("related", str(notes / f"gone{NAME_TITLE}{NAME_CLIP}.md")),  # an error naming the path
    ]


def test_every_command_at_a_terminal_shows_the_notes_text_without_their_escapes(daemon):
    for args in commands(daemon.notes):
        output = in_terminal(daemon.env, *args)
        assert "Traceback" not in output, (args, output)
        assert_only_own_escapes(output, " ".join(args))
    # What the notes say still shows, their escapes gone.
    shown = in_terminal(daemon.env, "search", "lighthouse keeper trims the wick", "--threshold", "0")
    assert "Lighthouse  keeper" in OWN.sub("", shown)
    assert "\x1b]8;;file://" in shown, "a terminal still gets its links"
    assert "notes/wick?]0;name-title??[8m.md" in OWN.sub("", shown), "a name's controls show as ?"
    related = OWN.sub("", in_terminal(daemon.env, "related", str(daemon.notes / "lamp.md")))
    assert "broken link, line 9: nowhere\r\n" in related  # its C1 controls gone


def test_the_reindex_report_names_a_failed_note_without_its_escapes(daemon):
    output = in_terminal(daemon.env, "reindex", "--force", stderr_too=False)
    assert_only_own_escapes(output, "reindex")
    assert "failed notes/bad?]52;c;bmFtZQ==?.md: " in output  # its controls as ?, as ls shows them
    # `mdrag serve` at a terminal writes its log there: the notes it names are cleaned too.
    assert "bad?]52;c;bmFtZQ==?.md" in daemon.log() and "\x1b" not in daemon.log()


def test_a_no_color_pipe_gets_no_escape_at_all_and_json_stays_exact(daemon):
    env = {**daemon.env, "NO_COLOR": "1"}
    for args in commands(daemon.notes):
        result = mdrag_cli(env, *args, timeout=120)
        output = result.stdout + result.stderr
        bad = sorted({f"U+{ord(c):04X}" for c in output if c in "\x1b\x07" or 0x80 <= ord(c) <= 0x9F})
        assert not bad, (args, output)
    answer = mdrag_cli(env, "search", "lighthouse keeper trims the wick", "--threshold", "0", "--json")
    hits = json.loads(answer.stdout)["results"]
    assert any(CLIPBOARD.strip("\x07") in hit["heading_path"] for hit in hits)  # exact, escaped by JSON
    assert "\x1b" not in answer.stdout and "\x9b" not in answer.stdout


def test_the_cleaning_drops_each_sequence_whole_and_keeps_tabs_newlines_and_plain_text():
    from mdrag.termtext import clean, json_safe, visible

    assert clean(f"a{CLIPBOARD}b{TITLE}c{CLEAR}d{HIDDEN}e{C1}f{BELL}g\r\nh\ti") == "abcdefg\nh\ti"
    assert clean("unterminated \x1b]0;title\nnext line") == "unterminated \nnext line"
    assert clean("café — ok") == "café — ok"
    # Bidirectional overrides and isolates (Trojan Source) would show `evildm.png` for this name.
    assert clean("evil\u202egnp.md \u2066x\u2069") == "evilgnp.md x"
    assert visible("evil\u202egnp.md") == "evil?gnp.md"
    assert clean("עברית and عربي") == "עברית and عربي"  # right-to-left text itself is kept
    assert visible("a\x1b[2J\n.md") == "a?[2J\n.md" and visible("a\n.md", keep="") == "a?.md"
    assert json.loads(json_safe(json.dumps("x\x9by", ensure_ascii=False))) == "x\x9by"

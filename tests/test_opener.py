"""Opener: editor commands without a shell, file and Obsidian URIs, OSC 8 links only where they draw."""

from __future__ import annotations

import io
import subprocess
import sys
import urllib.parse

import pytest

from mdrag.config import check_template, load_config
from mdrag.errors import ConfigError
from mdrag.notes.opener import (
    add_uris,
    editor_argv,
    file_uri,
    hyperlink,
    hyperlinks_wanted,
    obsidian_uri,
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_path_with_spaces_and_shell_characters_is_one_argument_of_the_command():
    path = "/notes/my notes/a; rm -rf ~ $(reboot) `x`.md"
    argv = editor_argv(path, 12, "code --goto {path}:{line}")
    assert argv == ["code", "--goto", f"{path}:12"]


def test_the_template_is_split_once_and_each_word_filled_in_on_its_own():
    argv = editor_argv("/n/it's.md", 3, "nvim '+call cursor({line}, 1)' {path}")
    assert argv == ["nvim", "+call cursor(3, 1)", "/n/it's.md"]


def test_an_editor_command_really_receives_the_hostile_path_whole(tmp_path):
    record = tmp_path / "argv.txt"
    recorder = tmp_path / "recorder.py"
    recorder.write_text(f"import sys\nopen({str(record)!r}, 'w').write(repr(sys.argv[1:]))\n")
    path = str(tmp_path / "a note; touch pwned.md")
    template = f"{sys.executable} {recorder} {{line}} {{path}}"
    subprocess.run(editor_argv(path, 4, template), check=True, cwd=tmp_path)
    assert record.read_text() == repr(["4", path])
    assert not (tmp_path / "pwned.md").exists()


def test_editor_from_the_environment_gets_plus_line_only_when_it_understands_it():
    assert editor_argv("/n/a.md", 7, environ={"EDITOR": "nvim -R"}) == ["nvim", "-R", "+7", "/n/a.md"]
    assert editor_argv("/n/a.md", 7, environ={"VISUAL": "gedit", "EDITOR": "vim"}) == [
        "gedit",
        "+7",
        "/n/a.md",
    ]
    # Editors with another way to name a line: VS Code and its forks, Sublime Text, Helix.
    assert editor_argv("/n/a b.md", 7, environ={"VISUAL": "/usr/bin/code --wait"}) == [
        "/usr/bin/code",
        "--wait",
        "--goto",
        "/n/a b.md:7",
    ]
    assert editor_argv("/n/a.md", 7, environ={"VISUAL": "subl -w"}) == ["subl", "-w", "/n/a.md:7"]
    assert editor_argv("/n/a.md", 7, environ={"EDITOR": "hx"}) == ["hx", "/n/a.md:7"]
    assert editor_argv("/n/a.md", 7, environ={"EDITOR": "kate"}) == ["kate", "/n/a.md"]  # unknown: the path
    assert editor_argv("/n/a.md", 7, environ={})[-1] == "/n/a.md"


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("code --goto", "must name {path}"),
        ("code {path} {user}", "only {path}, {line}"),
        ("code 'unclosed {path}", "cannot split"),
    ],
)
def test_a_bad_open_command_is_a_clear_configuration_error(template, problem, monkeypatch):
    assert problem in (check_template(template) or "")
    monkeypatch.setenv("MDRAG_OPEN_COMMAND", template)
    with pytest.raises(ConfigError, match=r"open\.command"):
        load_config()


def test_a_note_in_an_obsidian_vault_gets_an_obsidian_uri(tmp_path):
    vault = tmp_path / "My Vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "sub dir").mkdir()
    note = vault / "sub dir" / "a & b.md"
    query = urllib.parse.parse_qs(urllib.parse.urlparse(obsidian_uri(str(note)) or "").query)
    assert query == {"vault": ["My Vault"], "file": ["sub dir/a & b.md"]}
    assert obsidian_uri(str(tmp_path / "elsewhere.md")) is None


def test_the_command_can_open_the_obsidian_uri_of_a_note_in_a_vault(tmp_path):
    (tmp_path / "vault" / ".obsidian").mkdir(parents=True)
    note = str(tmp_path / "vault" / "a b.md")
    assert editor_argv(note, 1, "xdg-open {obsidian_uri}") == [
        "xdg-open",
        "obsidian://open?vault=vault&file=a%20b.md",
    ]
    assert editor_argv(note, 1, "browser {uri}") == ["browser", file_uri(note)]
    with pytest.raises(ConfigError, match="in no Obsidian vault"):
        editor_argv(str(tmp_path / "loose.md"), 1, "xdg-open {obsidian_uri}")


def test_search_json_hits_and_closest_notes_carry_uris(tmp_path):
    (tmp_path / ".obsidian").mkdir()
    response = add_uris(
        {"results": [{"file_path": str(tmp_path / "a b.md")}], "closest": [{"path": "/x/c.md"}]}
    )
    hit = response["results"][0]
    assert hit["uri"] == file_uri(str(tmp_path / "a b.md")) and hit["uri"].endswith("/a%20b.md")
    assert hit["obsidian_uri"].startswith("obsidian://open?vault=")
    assert response["closest"][0] == {"path": "/x/c.md", "uri": "file:///x/c.md"}


def test_hyperlinks_only_on_a_terminal_that_draws_them():
    assert hyperlinks_wanted(Terminal(), {"TERM": "xterm-256color"})
    assert not hyperlinks_wanted(io.StringIO(), {"TERM": "xterm-256color"})  # piped
    assert not hyperlinks_wanted(Terminal(), {"TERM": "xterm", "NO_COLOR": "1"})
    assert not hyperlinks_wanted(Terminal(), {"TERM": "dumb"})


def test_a_hyperlink_is_an_osc8_escape_whose_uri_cannot_break_out():
    assert hyperlink("a.md", "file:///a.md") == "\x1b]8;;file:///a.md\x1b\\a.md\x1b]8;;\x1b\\"
    link = hyperlink("x", "file:///a\x1b]8;;evil\x07.md")
    uri = link.removeprefix("\x1b]8;;").split("\x1b\\")[0]
    assert uri == "file:///a%1B]8;;evil%07.md"


def test_from_the_page_a_terminal_editor_is_never_chosen_but_the_desktop_opener_is():
    from mdrag.notes.opener import editor_argv

    argv = editor_argv("/n/a.md", 3, "", {"EDITOR": "vim"}, terminal=False)
    assert argv[0] in ("xdg-open", "open") and argv[-1] == "/n/a.md"
    assert editor_argv("/n/a.md", 3, "", {"EDITOR": "vim"}) == ["vim", "+3", "/n/a.md"]


def test_a_stored_name_with_odd_bytes_opens_the_file_of_those_bytes():
    from mdrag.notes.opener import editor_argv, file_uri
    from mdrag.notes.pathtext import to_fs, to_text

    stored = to_text(b"/n/caf\xe9.md")  # latin-1: stored as \xe9
    assert editor_argv(stored, 1, "", {"EDITOR": "nano"})[-1] == to_fs(stored)
    assert file_uri(stored) == "file:///n/caf%E9.md"


def test_the_editor_gets_the_users_umask_not_the_one_mdrag_keeps_for_its_index(tmp_path):
    import subprocess
    import sys

    made = tmp_path / "made-by-editor"
    editor = tmp_path / "editor.py"  # an editor that saves a new file
    editor.write_text(f"open({str(made)!r}, 'w').close()\n")
    # In a process of its own: mdrag's umask is the whole process's.
    code = (
        "import os, sys\n"
        "os.umask(0o022)\n"
        "from mdrag.files import private\n"
        "from mdrag.notes.opener import run_editor\n"
        "private.restrict_umask()\n"
        f"run_editor([sys.executable, {str(editor)!r}], wait=True)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert made.stat().st_mode & 0o777 == 0o644

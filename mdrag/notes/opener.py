"""Opener: where a hit opens (an editor command, a file:// or obsidian:// URI, an OSC 8 terminal link)."""

from __future__ import annotations

import os
import shlex
import sys
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdrag.config import check_template
from mdrag.errors import ConfigError
from mdrag.files.private import user_umask
from mdrag.notes.pathtext import to_fs

# Editors that take `+LINE` before the file, `--goto FILE:LINE` (VS Code and its forks) or
# `FILE:LINE`; any other $VISUAL or $EDITOR gets the path alone.
PLUS_LINE = {"vi", "vim", "nvim", "nano", "emacs", "emacsclient", "micro", "kak", "ne", "mg", "joe", "gedit"}
GOTO_LINE = {"code", "code-insiders", "codium", "cursor", "windsurf"}
PATH_LINE = {"subl", "sublime_text", "hx", "helix", "zed"}


def editor_argv(
    path: str,
    line: int = 1,
    template: str = "",
    environ: Mapping[str, str] = os.environ,
    terminal: bool = True,
) -> list[str]:
    """The command that opens `path` (as the index stores it) at `line`: one argv list, each word
    of the template filled in on its own, so a path with spaces, quotes or `;` stays one argument
    and no shell ever reads it. Without a template, $VISUAL or $EDITOR when there is a
    `terminal` to show it in (a terminal editor started from the page would run unseen), else
    the desktop's opener."""
    path = to_fs(path)  # a name's odd bytes, stored as \xHH, are the bytes of the file on disk
    if template:
        problem = check_template(template)
        if problem:
            raise ConfigError(f"open.command: {problem}")
        words = shlex.split(template)
        values = {"path": path, "line": str(max(1, int(line))), "uri": file_uri(path), "obsidian_uri": ""}
        if any("{obsidian_uri}" in word for word in words):
            values["obsidian_uri"] = obsidian_uri(path) or ""
            if not values["obsidian_uri"]:
                raise ConfigError(
                    f"open.command names {{obsidian_uri}}, but {path} is in no Obsidian vault "
                    "(no folder above it holds .obsidian/)"
                )
        return [word.format_map(values) for word in words]
    editor = (environ.get("VISUAL") or environ.get("EDITOR")) if terminal else None
    if editor:
        words = shlex.split(editor)
        name, at = Path(words[0]).name, max(1, int(line))
        if name in PLUS_LINE:
            return [*words, f"+{at}", path]
        if name in GOTO_LINE:
            return [*words, "--goto", f"{path}:{at}"]
        if name in PATH_LINE:
            return [*words, f"{path}:{at}"]
        return [*words, path]
    return ["open" if sys.platform == "darwin" else "xdg-open", path]


def run_editor(argv: list[str], wait: bool) -> int | None:
    """Start the editor. `wait`: in the foreground of this terminal (a terminal editor needs it);
    else detached, its output discarded (from the page's server). Never through a shell."""
    import subprocess  # here: only `open` and the page's "Open in editor" start an editor

    # The editor gets the user's own umask, not the one mdrag keeps for its index files.
    if wait:
        return subprocess.call(argv, umask=user_umask())
    subprocess.Popen(
        argv,
        umask=user_umask(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the editor outlives the page's server
    )
    return None


def file_uri(path: str) -> str:
    """The file:// URI of a path as the index stores it: its `\\xHH` escapes are the file's bytes."""
    return "file://" + urllib.parse.quote(os.fsencode(os.path.abspath(to_fs(path))))


def obsidian_vault(path: str) -> Path | None:
    """The Obsidian vault holding `path`: the nearest folder above it with a `.obsidian/` folder."""
    for folder in Path(os.path.abspath(path)).parents:
        if (folder / ".obsidian").is_dir():
            return folder
    return None


def obsidian_uri(path: str) -> str | None:
    """`obsidian://open?vault=NAME&file=PATH-IN-VAULT` for a note in a vault, else None."""
    vault = obsidian_vault(path)
    if vault is None:
        return None
    inside = Path(os.path.abspath(path)).relative_to(vault).as_posix()
    query = urllib.parse.urlencode({"vault": vault.name, "file": inside}, quote_via=urllib.parse.quote)
    return f"obsidian://open?{query}"


def uris(path: str) -> dict[str, str]:
    """The links a hit carries in --json and on the page: `uri` (file://) and, in a vault,
    `obsidian_uri`."""
    found = {"uri": file_uri(path)}
    obsidian = obsidian_uri(path)
    if obsidian:
        found["obsidian_uri"] = obsidian
    return found


def add_uris(response: dict[str, Any]) -> dict[str, Any]:
    """A search response with `uri` (and `obsidian_uri`) on every hit, related hit and closest note."""
    for hit in [*response.get("results", []), *(response.get("related") or [])]:
        hit.update(uris(hit["file_path"]))
    for note in response.get("closest") or []:
        note.update(uris(note["path"]))
    return response


def hyperlinks_wanted(stream: Any = None, environ: Mapping[str, str] = os.environ) -> bool:
    """OSC 8 links only for a person at a terminal that draws them: not when piped, not under
    NO_COLOR, TERM=dumb (or no TERM), nor inside the Linux console, which prints the escapes."""
    stream = stream if stream is not None else sys.stdout
    if not getattr(stream, "isatty", lambda: False)() or environ.get("NO_COLOR"):
        return False
    term = environ.get("TERM", "")
    return bool(term) and term not in ("dumb", "linux")


def hyperlink(text: str, uri: str) -> str:
    """`text` as an OSC 8 hyperlink to `uri` (terminals without support show the text alone)."""
    # Control characters in a URI would end the escape early or inject others: percent-encode them.
    safe = "".join(c if 0x20 < ord(c) < 0x7F else urllib.parse.quote(c) for c in uri)
    return f"\x1b]8;;{safe}\x1b\\{text}\x1b]8;;\x1b\\"

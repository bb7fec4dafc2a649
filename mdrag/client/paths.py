"""Paths as a person reads them: a note's path shown from its root's name, not from `/`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from mdrag import termtext
from mdrag.text.canonical import canonical


class Paths:
    """A route's paths as a person reads and types them, against the roots of the index it
    reaches (the daemon's, from its ping, or the configured ones for an index opened here)."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self._roots: list[str] = []  # longest first: a path is shown from its closest root
        self.use_roots(roots)

    def use_roots(self, roots: Iterable[str]) -> None:
        """The roots paths are shown against from now on (a new list: a reader never sees half)."""
        resolved = {os.path.realpath(os.path.expanduser(root)) for root in roots}
        self._roots = sorted(resolved, key=len, reverse=True)

    @property
    def known(self) -> bool:
        """Whether any roots are known (a page's client learns them from its first request)."""
        return bool(self._roots)

    @property
    def roots(self) -> tuple[str, ...]:
        return tuple(self._roots)

    def holds(self, path: str) -> bool:
        """Whether `path` (absolute) is a root or under one."""
        return any(path == root or path.startswith(root + os.sep) for root in self._roots)

    def typed(self, path: str) -> str:
        """A path as a person types it, made absolute: from the working directory when something
        is there, else, when it begins with a root's name as text output shows it (`vault/a/b.md`,
        `vault`), under that root. So a path copied from a search's output is accepted back."""
        absolute = on_disk(os.path.abspath(os.path.expanduser(path)))
        if os.path.exists(absolute) or os.path.isabs(os.path.expanduser(path)):
            return absolute
        first, _, rest = os.path.normpath(path).partition(os.sep)
        named = [root for root in self._roots if canonical(os.path.basename(root)) == canonical(first)]
        unders = [on_disk(os.path.join(root, rest)) if rest else root for root in named]
        for under in unders:
            if os.path.exists(under):
                return under
        # Under the one root of that name even when nothing is there (a note deleted since, or a
        # typo): the answer then names the path the person meant, not one under the working folder.
        return unders[0] if len(unders) == 1 and rest else absolute

    def shown(self, path: str) -> str:
        """`/home/me/vault/a/b.md` under the root `/home/me/vault` -> `vault/a/b.md`; a path under
        no root is shown relative to the working directory when under it, else as it is. Text
        output only: `--json` keeps absolute paths for scripts. A control character in a name
        shows as `?`, as `ls` shows it: never sent to the terminal, nor dropped to show another
        file's name."""
        for root in self._roots:
            if path.startswith(root + os.sep) and os.path.basename(root):
                return visible(os.path.join(os.path.basename(root), path[len(root) + 1 :]))
        cwd = os.getcwd() + os.sep
        return visible(path[len(cwd) :] if path.startswith(cwd) else path)

    def shown_folder(self, path: str) -> str:
        """A folder a search was narrowed to, as `shown` shows paths, and a root itself by its name
        (`notes`), as `--path notes` takes it back. Elsewhere a root keeps its whole path: a
        root's failure names the drive that is not mounted."""
        if path in self._roots and os.path.basename(path):
            return visible(os.path.basename(path))
        return self.shown(path)


def on_disk(path: str) -> str:
    """`path` with each name as spelled on disk where it was typed in the other Unicode form
    (`canonical`: "Café" typed composed, a folder macOS named decomposed, or the reverse). Each
    name not in ASCII is looked up among its folder's entries, even where the path opens as typed
    (APFS opens either form, but the index stores the one on disk); a name in neither form, and
    every name after it, stays as typed, and so does a trailing slash."""
    if path.isascii():
        return path
    trailing = os.sep if path.endswith(os.sep) and path.strip(os.sep) else ""
    parts = Path(path).parts
    found, first = (parts[0], 1) if os.path.isabs(path) else ("", 0)
    for at, name in enumerate(parts[first:], start=first):
        if not name.isascii():
            try:
                entries = os.listdir(found or ".")
            except OSError:
                entries = []
            wanted = canonical(name)
            spelled = name if name in entries else next((e for e in entries if canonical(e) == wanted), None)
            if spelled is None:
                return os.path.join(found, *parts[at:]) + trailing
            name = spelled
        found = os.path.join(found, name)
    return found + trailing


def visible(path: str) -> str:
    """`path` with each control character as `?` (a name's escape shows, and goes nowhere)."""
    return termtext.visible(path, keep="")

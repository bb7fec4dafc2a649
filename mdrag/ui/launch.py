"""Launch: the browser opened on a private file that leads to the page, so the key is on no command line.

A browser is started with its address as an argument, and every user of the machine reads every
process's arguments (`ps`). So, as Jupyter does, the browser is given a file:// address instead:
an HTML file only this user can read (0600, in the daemon socket's 0700 folder) that sends it on
to the page. The file is removed when the page stops. A browser confined away from that folder (a
snap's) cannot read it: its user opens the printed address, or runs `mdrag ui --no-browser`.
"""

from __future__ import annotations

import html
import os
import sys
import threading
import webbrowser
from pathlib import Path

from mdrag.config import Config
from mdrag.errors import MdragError
from mdrag.files import private, trust

REDIRECT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url={url}"><title>mdrag</title></head>
<body><p><a href="{url}">Open mdrag's search page</a></p></body></html>
"""


def launch_file(config: Config, port: int, url: str) -> Path:
    """The private file that leads to `url`, made afresh for this run."""
    folder = Path(config.server_socket_path).expanduser().parent
    trust.check_folder(folder, create=True)  # ours alone, or UnsafePathError
    path = folder / f"ui-{port}.html"
    path.unlink(missing_ok=True)  # an earlier page's on this port, that did not stop cleanly
    fd = private.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, "the page's launch file")
    with os.fdopen(fd, "w") as handle:
        handle.write(REDIRECT.format(url=html.escape(url)))
    return path


def open_browser(config: Config, port: int, url: str) -> Path | None:
    """Open the user's browser on the page through its launch file; the file, to remove at the end."""
    try:
        path = launch_file(config, port, url)
    except (MdragError, OSError) as exc:
        print(f"not opening a browser ({exc}); open the address above", file=sys.stderr)
        return None

    def start() -> None:
        if not webbrowser.open(path.as_uri()):
            print("no browser found; open the address above", file=sys.stderr)

    # A thread of its own: a browser command may run until the browser closes.
    threading.Thread(target=start, name="mdrag-browser", daemon=True).start()
    return path

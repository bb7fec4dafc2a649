"""The test suite's own home: HOME and XDG dirs in a temporary folder, and a watch on the real one."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

XDG_HOMES = {
    "XDG_DATA_HOME": ".local/share",
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_STATE_HOME": ".local/state",
}
# Where mdrag keeps anything of its own under a home (data and gaps, config, ONNX export).
MDRAG_DIRS = (".local/share/mdrag", ".local/state/mdrag", ".cache/mdrag", ".config/mdrag")


class HomeSnapshot:
    """Every path under mdrag's dirs in a home, with its size and mtime, to compare later."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.taken = self._take()

    def _take(self) -> dict[str, tuple[int, int]]:
        entries: dict[str, tuple[int, int]] = {}
        for name in MDRAG_DIRS:
            top = self.home / name
            for path in [top, *top.rglob("*")] if top.exists() else []:
                try:
                    info = path.lstat()
                except OSError:
                    continue
                entries[str(path)] = (info.st_size, info.st_mtime_ns)
        return entries

    def changes(self) -> list[str]:
        now = self._take()
        added = [f"added {p}" for p in sorted(now.keys() - self.taken.keys())]
        removed = [f"removed {p}" for p in sorted(self.taken.keys() - now.keys())]
        changed = [f"changed {p}" for p in sorted(now.keys() & self.taken.keys()) if now[p] != self.taken[p]]
        return added + removed + changed


REAL_HOME = Path(os.environ.get("MDRAG_TEST_REAL_HOME") or Path.home())
REAL_HOME_SNAPSHOT = HomeSnapshot(REAL_HOME)
_created: list[Path] = []  # the temporary home this process made (a nested run reuses its parent's)


def isolate_home() -> Path:
    """Point HOME, every XDG_*_HOME and XDG_RUNTIME_DIR at a fresh temporary home; return it.

    Subprocesses (daemons, CLI runs) inherit it. The ONNX export of the bundled model is copied
    in from the real cache when there is one (read, never written), so a session need not
    export it again.
    """
    # A pytest run inside a test shares its parent's home; a pytest-xdist worker (which inherits
    # the controller's environment) makes one of its own, so no two workers share an index path.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if os.environ.get("MDRAG_TEST_HOME") and os.environ.get("MDRAG_TEST_HOME_WORKER", "") == worker:
        return Path(os.environ["MDRAG_TEST_HOME"])
    # A short path under /tmp: the runtime dir holds unix sockets (~107 bytes at most).
    home = Path(tempfile.mkdtemp(prefix="mdh", dir="/tmp"))
    _created.append(home)
    os.environ["MDRAG_TEST_REAL_HOME"] = str(REAL_HOME)
    os.environ["MDRAG_TEST_HOME"] = str(home)
    os.environ["MDRAG_TEST_HOME_WORKER"] = worker
    os.environ["HOME"] = str(home)
    for variable, relative in XDG_HOMES.items():
        (home / relative).mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(home / relative)
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    _seed_onnx_cache(REAL_HOME / ".cache" / "mdrag" / "onnx", home / ".cache" / "mdrag" / "onnx")
    return home


def remove_home() -> None:
    """Remove the temporary home this process made, at the session's end."""
    for home in _created:
        shutil.rmtree(home, ignore_errors=True)


def _seed_onnx_cache(real: Path, private: Path) -> None:
    if not real.is_dir():
        return
    for source in real.glob("*/*.onnx"):
        target = private / source.parent.name / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)  # the real file is only ever replaced, never written in place
        except OSError:
            shutil.copy2(source, target)

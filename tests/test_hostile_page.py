"""The page against local attackers, with real processes: its key on no command line and in no
cookie, another user (uid 65534, through setpriv) reaching no note, a page on another port of
127.0.0.1 receiving nothing that opens one, hostile headers and held connections costing the
user's search nothing, a page started before the daemon locking nobody out, bad filters as 400s.

One notes folder with its index, one page (`mdrag ui --no-browser`, with 256 file descriptors) and
one daemon serve the module; the page starts before the daemon, as a user may start them.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import resource
import select
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.browser import Browser, available
from tests.conftest import write
from tests.daemon_process import DaemonProcess, mdrag_cli, wait_until
from tests.leaks import allow_process

OTHER = 65534  # nobody
MARKER = "The keeper trims the wick"  # a line of the private note: seen only by who reaches it
PAGE_FDS = 256
as_root = pytest.mark.skipif(
    os.getuid() != 0 or not shutil.which("setpriv"), reason="another user needs root and setpriv"
)


class Elsewhere:
    """A page served on another port of 127.0.0.1 (another user's, say) that records every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        seen = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = b"<!doctype html><title>elsewhere</title><p>elsewhere</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class World:
    """The notes, their index, the page and (once started) the daemon."""

    def __init__(self, base: Path, elsewhere: Elsewhere) -> None:
        self.notes = base / "notes"
        write(self.notes / "lamp.md", f"# Harbour lamp\n\n{MARKER} of the harbour lamp each evening.\n")
        write(
            self.notes / "chart.md",
            f"# Harbour chart\n\nThe [chart of the harbour]({elsewhere.url}/from-a-note) shows the rocks.\n",
        )
        self.daemon = DaemonProcess(self.notes, base / "state")
        self.env = self.daemon.env
        built = mdrag_cli(self.env, "reindex", str(self.notes), timeout=300)
        assert built.returncode == 0, built.stderr
        self.page_log = base / "page.log"
        with self.page_log.open("w") as log:  # a file: a pipe nobody reads would stop the page once full
            self.page = subprocess.Popen(
                [sys.executable, "-m", "mdrag.cli.main", "ui", "--no-browser"],
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (PAGE_FDS, PAGE_FDS)),
            )
        assert self.page.stdout is not None
        line = self.page.stdout.readline()
        assert line.startswith("mdrag ui: http://127.0.0.1:"), line
        self.address = line.split(": ", 1)[1].strip()  # http://127.0.0.1:PORT/KEY/
        parts = urllib.parse.urlparse(self.address)
        self.port, self.key = parts.port or 0, parts.path.strip("/")

    def running(self) -> bool:
        return self.daemon.process is not None and self.daemon.process.poll() is None

    def serving(self) -> DaemonProcess:
        """The daemon, started if it is not running; the module stops it."""
        if not self.running():
            self.daemon.start(timeout=60)
            assert self.daemon.process is not None
            allow_process(self.daemon.process.pid)  # the module's, whichever test started it
        return self.daemon

    def close(self) -> None:
        self.page.terminate()
        self.page.communicate(timeout=10)
        self.daemon.close()


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[Elsewhere]:
    server = Elsewhere()
    yield server
    server.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory, elsewhere) -> Iterator[World]:
    """The index and the page, and no daemon yet."""
    made = World(tmp_path_factory.mktemp("hostile-page"), elsewhere)
    yield made
    made.close()


@pytest.fixture(scope="module")
def serving(world) -> World:
    """The same, with the daemon running."""
    world.serving()
    return world


def get(port: int, path: str, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}", **(headers or {})})
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        connection.close()


def note_path(world: World) -> str:
    return "note?" + urllib.parse.urlencode({"path": str(world.notes / "lamp.md")})


# ---- class 8: the page is a client of the daemon, never the index's holder ------------------------


def test_a_page_started_before_the_daemon_locks_nobody_out_and_answers_once_the_daemon_runs(world):
    assert not world.running(), "this test runs first: the page up, the daemon not yet started"
    status, text = get(world.port, f"/{world.key}/")
    assert status == 200 and "start it with `mdrag serve`" in text
    status, text = get(world.port, f"/{world.key}/results?q=harbour+lamp")
    assert status == 503 and "start it with `mdrag serve`" in text
    started = time.monotonic()
    world.serving()  # `mdrag serve` starts as if no page were open
    assert time.monotonic() - started < 45
    found = mdrag_cli(world.env, "search", "who trims the wick of the harbour lamp", "--json", timeout=60)
    assert found.returncode == 0, found.stderr
    status, text = get(world.port, f"/{world.key}/results?q=who+trims+the+wick+of+the+harbour+lamp")
    assert status == 200 and "notes/lamp.md" in text  # the page took the daemon's roots
    assert world.page.poll() is None


# ---- class 1: the key on no command line; another user reaches no note ---------------------------

FAKE_BROWSER = """#!{python}
# What a browser does with what it is given: records its arguments, reads the file, opens the page.
import html, json, os, re, stat, sys, time, urllib.parse, urllib.request
given = sys.argv[1]
record = {{"argv": sys.argv[1:]}}
target = given
if given.startswith("file://"):
    path = urllib.parse.unquote(urllib.parse.urlparse(given).path)
    record["mode"] = stat.S_IMODE(os.stat(path).st_mode)
    record["folder_mode"] = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)
    target = html.unescape(re.search(r'url=([^"]+)"', open(path).read()).group(1))
response = urllib.request.urlopen(target, timeout=30)
record["status"] = response.status
record["page"] = "Search your notes" in response.read().decode()
with open({record!r}, "w") as out:
    json.dump(record, out)
time.sleep(3)  # a browser stays open
"""

# Another user, watching every process's arguments while `mdrag ui` runs (as `ps` shows them to
# anyone), trying every address it sees (following its redirects and cookies) and every file.
WATCHER = r"""
import http.cookiejar, json, re, select, subprocess, sys, urllib.parse, urllib.request
note = sys.argv[1]
lines, tried, files, ports = set(), [], {}, set()
def attempt(url):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    for asked in (url, urllib.parse.urljoin(url, "note?path=" + urllib.parse.quote(note)),
                  urllib.parse.urljoin(url, "/note?path=" + urllib.parse.quote(note))):
        try:
            with opener.open(asked, timeout=10) as response:
                tried.append([asked, response.status, "trims the wick" in response.read().decode()])
        except Exception as exc:
            tried.append([asked, str(exc)[:80], False])
while True:
    ready, _, _ = select.select([sys.stdin], [], [], 0.01)
    if ready:
        line = sys.stdin.readline()
        if not line:
            break
        ports.add(int(line))
        attempt(f"http://127.0.0.1:{int(line)}/")
    for line in subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout.splitlines():
        if line in lines:
            continue
        lines.add(line)
        if "http.cookiejar" in line:
            continue  # this watcher's own command line
        for url in re.findall(r"https?://127\.0\.0\.1:\d+[^\s'\"]*", line):
            attempt(url)
        for path in re.findall(r"file://(\S+)", line):
            try:
                files[path] = open(urllib.parse.unquote(path)).read()[:200]
            except OSError as exc:
                files[path] = type(exc).__name__
print(json.dumps({"lines": sorted(lines), "tried": tried, "files": files}))
"""


@as_root
@pytest.mark.usefixtures("serving")
def test_the_pages_key_is_on_no_command_line_and_another_user_reaches_no_note(world, tmp_path):
    record = tmp_path / "browser.json"
    browser = tmp_path / "fake-browser"
    browser.write_text(FAKE_BROWSER.format(python=sys.executable, record=str(record)))
    browser.chmod(0o755)
    watcher = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={OTHER}",
            f"--regid={OTHER}",
            "--clear-groups",
            sys.executable,
            "-I",
            "-c",
            WATCHER,
            str(world.notes / "lamp.md"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    ui = subprocess.Popen(
        [sys.executable, "-m", "mdrag.cli.main", "ui"],  # opens the browser, as documented
        env={**world.env, "BROWSER": str(browser)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert ui.stdout is not None and watcher.stdin is not None
    try:
        address = ui.stdout.readline().split(": ", 1)[1].strip()
        key, port = urllib.parse.urlparse(address).path.strip("/"), urllib.parse.urlparse(address).port
        watcher.stdin.write(f"{port}\n")  # they find the port (it listens for anyone): not the key
        watcher.stdin.flush()
        wait_until(lambda: record.exists() and record.stat().st_size > 0, 30)
        opened = json.loads(record.read_text())
        launch_file = urllib.parse.unquote(urllib.parse.urlparse(opened["argv"][0]).path)
        time.sleep(1.5)  # the browser stays open, its arguments in the process list
    finally:
        ui.terminate()
        _, errors = ui.communicate(timeout=15)
        seen, _ = watcher.communicate("", timeout=60)
    watched = json.loads(seen)
    # The other user watched the whole run, the browser included: they never saw the key, and
    # whatever they tried with what they saw opened no note.
    assert any(str(browser) in line for line in watched["lines"]), "the watch missed the browser"
    assert not [t for t in watched["tried"] if t[2]], f"another user opened the note: {watched['tried']}"
    assert not [line for line in watched["lines"] if key in line]
    assert watched["tried"] and watched["files"]
    assert all(text == "PermissionError" for text in watched["files"].values()), watched["files"]
    # The browser was given a private file, not the address, and opened the page through it.
    assert opened["argv"] == [Path(launch_file).as_uri()] and key not in opened["argv"][0]
    assert opened["mode"] == 0o600 and opened["folder_mode"] == 0o700
    assert opened["status"] == 200 and opened["page"]
    assert not Path(launch_file).exists(), "the launch file outlived the page"
    assert "Traceback" not in errors


# ---- class 2: a page on another port of 127.0.0.1 receives nothing that opens a note ------------


def _wait(driver, condition, timeout: float = 15):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: condition(d))


@pytest.mark.usefixtures("serving")
def test_a_page_on_another_port_receives_nothing_that_opens_a_note(world, elsewhere):
    from selenium.webdriver.common.by import By

    assert available(), "chromium and chromedriver are missing: `make browser-tool` installs them"
    status, text = get(world.port, f"/{world.key}/{note_path(world)}")
    assert status == 200 and MARKER in text  # with the key, the note is there to take
    chromium = Browser()
    driver = chromium.driver
    try:
        driver.get(world.address + "?q=harbour+lamp")  # the page, as the user opens it
        assert "lamp.md" in driver.find_element(By.ID, "results").text
        driver.get(world.address + "note?" + urllib.parse.urlencode({"path": str(world.notes / "chart.md")}))
        page_tab = driver.current_window_handle
        driver.find_element(By.PARTIAL_LINK_TEXT, "chart of the harbour").click()  # a link out of a note
        _wait(driver, lambda d: len(d.window_handles) == 2)
        driver.switch_to.window(next(h for h in driver.window_handles if h != page_tab))
        _wait(driver, lambda d: "elsewhere" in d.title)
        driver.switch_to.window(page_tab)
        driver.execute_script("location.href = arguments[0]", elsewhere.url + "/from-the-page")
        _wait(driver, lambda d: "elsewhere" in d.title)
        driver.get(world.address)
        driver.get(elsewhere.url + "/typed")  # the user goes there next
        _wait(driver, lambda d: "elsewhere" in d.title)
    finally:
        chromium.close()
    asked = {path for path, _ in elsewhere.requests}
    assert {"/from-a-note", "/from-the-page", "/typed"} <= asked, asked
    # Replay everything it received against our port: every header, every path it was sent, every
    # address named in a header, each with the private note's path.
    for path, headers in elsewhere.requests:
        sent = {k: v for k, v in headers.items() if k not in ("host", "connection", "content-length")}
        named = [urllib.parse.urlparse(v).path for v in headers.values() if f":{world.port}" in v]
        for tried in {path, "/", "/" + note_path(world), *named, *[p + note_path(world) for p in named]}:
            status, text = get(world.port, tried, sent)
            assert MARKER not in text and status in (403, 404), (tried, sent, status)
    assert not [h for _, h in elsewhere.requests if world.key in json.dumps(h)]


# ---- class 3: hostile headers cost the user's search nothing -------------------------------------


def _search_seconds(world: World, timeout: float = 60) -> float:
    started = time.perf_counter()
    status, text = get(world.port, f"/{world.key}/results?q=who+trims+the+wick", timeout=timeout)
    assert status == 200 and "lamp.md" in text, (status, text[-500:])
    return time.perf_counter() - started


@pytest.mark.usefixtures("serving")
def test_hostile_cookie_headers_do_not_slow_the_users_search(world, capsys):
    """A Cookie header of backslashes in quotes is quadratic for CPython's http.cookies (15 KB: half
    a second); the page parses no cookie, and refuses a request without its key before anything."""
    before = statistics.median(_search_seconds(world) for _ in range(5))
    answered: list[tuple[int, float, int]] = []
    stop = threading.Event()

    def attacker() -> None:
        size = 1024
        while not stop.is_set():
            cookie = 'a="' + "\\" * size + '"'
            started = time.perf_counter()
            status, _ = get(world.port, "/?q=x", {"Cookie": cookie}, timeout=60)
            answered.append((size, time.perf_counter() - started, status))
            size = min(size * 2, 15_000)  # growing, up to just under the page's 16 KiB head limit

    attackers = [threading.Thread(target=attacker) for _ in range(4)]
    for thread in attackers:
        thread.start()
    try:
        time.sleep(0.3)
        during = [_search_seconds(world) for _ in range(5)]
    finally:
        stop.set()
        for thread in attackers:
            thread.join(60)
    largest = [seconds for size, seconds, _ in answered if size == 15_000]
    assert {status for _, _, status in answered} == {404}  # no key: refused, whatever the cookie
    with capsys.disabled():
        print(
            f"\nsearch through the page: {before * 1000:.0f} ms alone, {statistics.median(during) * 1000:.0f} ms "
            f"(max {max(during) * 1000:.0f}) under {len(answered)} hostile requests "
            f"(a 15 KB one refused in {max(largest) * 1000:.0f} ms at most)"
        )
    assert largest and max(during) < max(1.0, 5 * before)
    status, _ = get(world.port, "/", {"Cookie": "a=" + "b" * 20_000})
    assert status == 431  # a head past 16 KiB is refused whole


# ---- class 4: connections held open cost the user nothing, and are closed ------------------------


def _closed(sock: socket.socket, timeout: float) -> bool:
    """Whether the page closes this connection within `timeout` (whatever it says first)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


def _sockets_of(pid: int) -> int:
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            count += os.readlink(fd).startswith("socket:")
        except OSError:
            continue
    return count


@pytest.mark.usefixtures("serving")
def test_connections_held_open_never_lock_the_user_out_and_are_closed(world, capsys):
    alone_s = _search_seconds(world)  # and the daemon's first search (the model's warm-up) done
    held: list[socket.socket] = []
    most = 0
    try:
        started = time.monotonic()
        for i in range(PAGE_FDS + 100):  # more than the page may open files
            try:
                sock = socket.create_connection(("127.0.0.1", world.port), timeout=3)
            except TimeoutError:
                break  # the page accepts no more: the user is locked out too (asserted below)
            if i % 3 == 1:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1")  # half a request, never finished
            elif i % 3 == 2:
                sock.sendall(f"GET /{world.key}/ HTTP/1.1\r\n".encode())  # the key alone does not keep it
            held.append(sock)
            if i % 50 == 0:
                most = max(most, _sockets_of(world.page.pid))
        opened_s = time.monotonic() - started
        try:
            answered_s = _search_seconds(world, timeout=10)  # the user's own, while they hold theirs
        except TimeoutError:
            answered_s = float("inf")
        assert answered_s < 3.0, f"the user's search did not answer beside {len(held)} held connections"
        dribble = socket.create_connection(("127.0.0.1", world.port), timeout=10)
        held.append(dribble)
        dribbled_at = time.monotonic()
        dribbled = False
        for byte in b"GET / HTTP/1.1\r\nHost: 127.0.0.1:1\r\n":  # a byte at a time, never done
            try:
                dribble.sendall(bytes([byte]))
            except OSError:
                dribbled = True
                break
            ready, _, _ = select.select([dribble], [], [], 0.5)
            if ready:
                dribbled = True
                break
        dribble_s = time.monotonic() - dribbled_at
        deadline = time.monotonic() + 15
        open_after = [s for s in held[:-1] if not _closed(s, max(0.01, deadline - time.monotonic()))]
        closed_s = time.monotonic() - started
    finally:
        for sock in held:
            sock.close()
    with capsys.disabled():
        print(
            f"\n{len(held) - 1} connections held (opened in {opened_s:.1f} s, the page's sockets at most {most}): "
            f"the user's search answered in {answered_s * 1000:.0f} ms ({alone_s * 1000:.0f} alone); all closed {closed_s:.1f} s after "
            f"the first; one sent a byte each 0.5 s closed after {dribble_s:.1f} s"
        )
    assert not open_after, f"{len(open_after)} held connections still open"
    assert dribbled and dribble_s < 9
    assert most < PAGE_FDS * 3 // 4  # bounded, well inside its file descriptors


# ---- class 11: a bad filter is a 400 naming it -----------------------------------------------------


@pytest.mark.usefixtures("serving")
def test_a_filter_that_is_not_a_number_is_a_400_on_the_page_never_a_500(world):
    for query, named in (
        ("k=10a", "top_k"),
        ("k=3.5", "top_k"),
        ("k=1e9", "top_k"),
        ("k=-3", "top_k"),
        ("threshold=0.5x", "threshold"),
        ("threshold=nan", "threshold"),
        ("threshold=-1", "threshold"),
    ):
        for view in ("", "results"):
            status, text = get(world.port, f"/{world.key}/{view}?q=lamp&{query}")
            assert status == 400 and f"{named} must be" in text, (view, query, status, text[-300:])
            assert "Traceback" not in text and "Internal Server Error" not in text
    assert world.page.poll() is None
    assert "Traceback" not in world.page_log.read_text()  # nothing any test sent it failed inside

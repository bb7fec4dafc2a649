"""Hostile inputs: names, encodings, frontmatter, sizes and special files a folder may hold."""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from mdrag.errors import DocumentError, RowsRejectedError, StoreError
from mdrag.notes.document import FileVanished, decode_text, parse_document, read_bytes
from mdrag.notes.frontblock import split_frontmatter
from mdrag.notes.pathtext import to_fs, to_text
from tests.conftest import write
from tests.daemon_process import mdrag_cli, started_over, wait_until

# ---- names ----------------------------------------------------------------------------------

# Byte names as old zips, Windows shares and other locales leave them.
HOSTILE_NAMES = [
    b"caf\xe9.md",  # latin-1
    b"\xc3(bad.md",  # an invalid UTF-8 sequence
    b"\xed\xa0\x80surrogate.md",  # an encoded surrogate (invalid in UTF-8)
    b"\xff\xfe.md",  # bytes no UTF-8 ever holds
    b"back\\x e9 \\xe9 \\\\.md",  # literal backslashes that look like the escape form
    b"mix\\\xe9.md",  # a literal backslash just before an undecodable byte
]


def test_a_stored_path_is_valid_utf8_and_round_trips_to_the_name_for_every_byte_name():
    rng = random.Random(19)
    names = [os.fsdecode(n) for n in HOSTILE_NAMES]
    names += [os.fsdecode(bytes(rng.choice(b"\\x9fa\xe9\xff/.") for _ in range(12))) for _ in range(3000)]
    names += [os.fsdecode(rng.randbytes(10).replace(b"\0", b"")) for _ in range(3000)]
    stored = {}
    for name in names:
        text = to_text(name)
        text.encode("utf-8")  # storable: no surrogates left
        assert to_fs(text) == name
        assert stored.setdefault(text, name) == name  # two names never share a stored form


def test_a_valid_utf8_name_is_stored_unchanged():
    for name in [
        "/n/café.md",
        "/n/a b 'q' \"d\".md",
        "/n/-rf.md",
        "/n/line\nbreak.md",
        "/n/win\\dir.md",
        "/n/x\\y",
    ]:
        assert to_text(name) == name


def test_a_folder_name_in_bytes_is_stored_and_round_trips_like_a_file_name():
    path = os.fsdecode(b"/notes/d\xe9j\xe0/vu\xff.md")
    assert to_text(path) == "/notes/d\\xe9j\\xe0/vu\\xff.md"
    assert to_fs(to_text(path)) == path


# ---- content --------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_notes_with_a_bom_are_decoded(codec):
    import codecs

    bom = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-le": codecs.BOM_UTF32_LE,
        "utf-32-be": codecs.BOM_UTF32_BE,
    }[codec]
    text = "---\ntitle: Wide\n---\n# Überschrift\n\nWide text ✓\n"
    document = parse_document("/n/wide.md", bom + text.encode(codec))
    assert document.text == text
    assert document.frontmatter == {"title": "Wide"}


def test_utf8_bom_and_crlf_notes_are_decoded():
    assert decode_text(b"\xef\xbb\xbf# T\r\n\r\nbody\r\n") == "# T\r\n\r\nbody\r\n"


@pytest.mark.parametrize(
    "data",
    [b"caf\xe9 au lait\n", b"# T\n\x00\x01binary", b"\xff\xfe\x00"],  # latin-1, NUL, a broken UTF-16
)
def test_undecodable_content_fails_with_a_reason(data):
    with pytest.raises(DocumentError):
        parse_document("/n/x.md", data)


def test_random_bytes_either_decode_or_fail_with_a_reason_never_otherwise():
    rng = random.Random(7)
    for _ in range(500):
        data = rng.randbytes(rng.randrange(0, 300))
        try:
            parse_document("/n/r.md", data)
        except DocumentError:
            pass


def test_a_file_over_the_size_limit_fails_with_its_size_and_the_limit_without_being_read(tmp_path):
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * 3_000_000)
    with pytest.raises(DocumentError, match=r"3\.0 MB, over the index.max_file_mb limit of 2 MB"):
        read_bytes(str(big), limit=2_000_000)


def test_a_file_gone_before_its_read_is_a_vanished_file(tmp_path):
    with pytest.raises(FileVanished):
        read_bytes(str(tmp_path / "gone.md"))
    with pytest.raises(FileVanished):
        read_bytes(str(tmp_path / "gone-dir" / "note.md"))


def _special_files(folder: Path) -> dict[str, Path]:
    """One path of each kind that is no regular file, each named as a note."""
    import socket

    folder.mkdir(exist_ok=True)
    made = {name: folder / f"{name}.md" for name in ("fifo", "socket", "folder", "device", "device-link")}
    os.mkfifo(made["fifo"])
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(made["socket"]))
    listener.close()  # the socket file stays
    made["folder"].mkdir()
    os.symlink("/dev/null", made["device"])
    os.symlink("/dev/zero", made["device-link"])
    return made


def test_a_note_that_became_a_fifo_socket_folder_or_device_after_the_scan_fails_at_once(tmp_path):
    """The indexer reads what the scan found; by then the path may be anything. A FIFO once held
    the reader for ever (a plain open waits for a writer) and /dev/zero streamed to the limit."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # a read that waits for ever fails this test, never hangs it
        for kind, path in _special_files(tmp_path).items():
            read = pool.submit(read_bytes, str(path))
            try:
                failed = read.exception(timeout=2.0)
            except TimeoutError:
                if kind == "fifo":  # a reader waiting for a writer: given one, so that the run can end
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                pytest.fail(f"reading a {kind} waited")
            assert isinstance(failed, DocumentError), (kind, failed)
            assert "not a regular file" in str(failed), kind
            assert not isinstance(failed, FileVanished), kind  # a failure, never a delete


# ---- frontmatter ------------------------------------------------------------------------------

ALIAS_BOMB = (
    "---\n"
    + "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
    + "---\n# Laughs\n\nThe body of the bomb note about lighthouse lenses.\n"
)
DEEP_FLOW = "---\nx: " + "[" * 3000 + "]" * 3000 + "\n---\n# Deep\n\nbody\n"
DEEP_BLOCK = "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(500)) + "---\n# Deep\n\nbody\n"
RECURSIVE = "---\na: &a [*a, *a]\n---\n# R\n\nbody\n"
HUGE = "---\n" + "".join(f"k{i}: {'v' * 60}\n" for i in range(2000)) + "---\n# H\n\nbody\n"
# TOML: arrays and inline tables nested past the parser's recursion, or within it past the bound;
# tables nested by a dotted header; a block past the size bound.
TOML_DEEP_ARRAY = "+++\nx = " + "[" * 30_000 + "]" * 30_000 + "\n+++\n# T\n\nbody\n"
TOML_DEEP_TABLE = "+++\nx = " + "{a = " * 200 + "1" + "}" * 200 + "\n+++\n# T\n\nbody\n"
TOML_DOTTED = "+++\n[" + ".".join(["a"] * 5000) + "]\nb = 1\n+++\n# T\n\nbody\n"
# Dotted keys, which the parser reads in time that grows with the square of their parts.
TOML_DOTTED_KEY = "+++\n" + "a." * 30_000 + "b = 1\n+++\n# T\n\nbody\n"
TOML_DOTTED_INLINE = "+++\nx = {" + "a." * 30_000 + "b = 1}\n+++\n# T\n\nbody\n"
TOML_HUGE = "+++\n" + "".join(f"k{i} = '{'v' * 60}'\n" for i in range(2000)) + "+++\n# H\n\nbody\n"
# JSON: arrays and objects nested past the decoder's recursion, or within it past the bound; a block
# past the size bound (its object, or one value in it, never closing before it).
JSON_DEEP_ARRAY = '{\n"x": ' + "[" * 30_000 + "]" * 30_000 + "\n}\n# T\n\nbody\n"
JSON_DEEP_OBJECT = '{\n"x": ' + '{"a": ' * 200 + "1" + "}" * 200 + "\n}\n# T\n\nbody\n"
JSON_HUGE = "{\n" + ",\n".join(f'"k{i}": "{"v" * 60}"' for i in range(2000)) + "\n}\n# H\n\nbody\n"
JSON_LONG_VALUE = '{\n"k": "' + "v" * 5_000_000 + '"\n}\n# H\n\nbody\n'


@pytest.mark.parametrize(
    "text",
    [
        ALIAS_BOMB,
        DEEP_FLOW,
        DEEP_BLOCK,
        RECURSIVE,
        HUGE,
        TOML_DEEP_ARRAY,
        TOML_DEEP_TABLE,
        TOML_DOTTED,
        TOML_DOTTED_KEY,
        TOML_DOTTED_INLINE,
        TOML_HUGE,
        JSON_DEEP_ARRAY,
        JSON_DEEP_OBJECT,
        JSON_HUGE,
        JSON_LONG_VALUE,
    ],
    ids=[
        "bomb",
        "flow",
        "block",
        "cycle",
        "huge",
        "toml-array",
        "toml-table",
        "toml-dotted",
        "toml-key",
        "toml-inline",
        "toml-huge",
        "json-array",
        "json-object",
        "json-huge",
        "json-long-value",
    ],
)
def test_hostile_frontmatter_is_indexed_as_text_with_a_warning_in_bounded_time_and_memory(text):
    tracemalloc.start()
    started = time.monotonic()
    frontmatter, offset, has_fm, warning = split_frontmatter(text)
    seconds = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (frontmatter, offset, has_fm) == ({}, 0, False)  # the whole text stays in the body
    assert "indexed as text" in warning
    assert seconds < 1.0
    assert peak < 20_000_000


def test_frontmatter_values_are_kept_as_json_the_engine_accepts():
    text = "---\ntitle: T\nd: 2024-01-02\nn: .nan\ni: .inf\nbig: 100000000000000000000000\n1: one\n---\nb\n"
    frontmatter = split_frontmatter(text)[0]
    assert frontmatter == {
        "title": "T",
        "d": "2024-01-02",
        "n": "nan",
        "i": "inf",
        "big": "100000000000000000000000",
        "1": "one",
    }
    json.dumps(frontmatter, allow_nan=False)


def test_a_toml_block_with_a_long_word_is_read_in_linear_time():
    # The dotted-key check once scanned a long word again from each of its characters (60 KB: 22 s).
    for value in ["ab" * 30_000, "a" * 60_000]:
        started = time.monotonic()
        frontmatter, _, _, warning = split_frontmatter(f"+++\ntitle = 'x'\nsig = '{value}'\n+++\nbody\n")
        assert time.monotonic() - started < 0.5
        assert (frontmatter["sig"], warning) == (value, "")


def test_toml_frontmatter_is_read_as_yaml_is_and_a_malformed_block_is_text_with_a_warning():
    text = (
        "+++\ntitle = 'Deploy'\ndate = 2024-05-26T09:10:33-07:00\ntags = ['a', 'b']\ndraft = true\n+++\n# B\n"
    )
    frontmatter, offset, has_fm, warning = split_frontmatter(text)
    assert frontmatter == {
        "title": "Deploy",
        "date": "2024-05-26 09:10:33-07:00",
        "tags": ["a", "b"],
        "draft": True,
    }
    assert (text[offset:], has_fm, warning) == ("# B\n", True, "")
    for broken, says in [
        (
            "+++\ntitle = \n+++\n# B\n",
            "malformed TOML frontmatter, indexed as text: Invalid value (at line 2, column 9)",
        ),
        ("+++\ntitle = 'x'\n# B\n", "frontmatter opened with '+++' but never closed; indexed as text"),
    ]:
        assert split_frontmatter(broken) == ({}, 0, False, says)


def test_python_object_tags_are_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    text = f"---\nx: !!python/object/apply:os.system ['touch {marker}']\n---\n# T\n\nbody\n"
    frontmatter, _, _, warning = split_frontmatter(text)
    assert frontmatter == {} and "malformed YAML" in warning
    assert not marker.exists()


# ---- the indexer and the engine, in process ---------------------------------------------------


class RefusingStore:
    """The real store, but the rows of one note carry a string no UTF-8 field holds, as a note's
    own content once did: the real engine refuses them."""

    def __init__(self, store, poisoned: str) -> None:
        self._store, self._poisoned = store, poisoned

    def __getattr__(self, name):
        return getattr(self._store, name)

    def _poison(self, rows):
        return [
            {**r, "title": "\udce9"} if r["file_path"] == self._poisoned and r["status"] == "indexed" else r
            for r in rows
        ]

    def upsert_metadata(self, rows):
        return self._store.upsert_metadata(self._poison(rows))


@pytest.mark.slow
def test_a_note_the_engine_refuses_fails_alone_and_the_rest_of_its_batch_is_indexed(make_service, notes):
    for i in range(5):
        write(notes / f"n{i}.md", f"# Note {i}\n\nThe orchard has {i} pear trees in a row.\n")
    # Values the engine once refused in a JSON field, now stored as text.
    write(notes / "n5.md", "---\nbig: 100000000000000000000000\nn: .nan\n---\n# Note 5\n\nFive pear trees.\n")
    poisoned = str(notes / "n2.md")
    service = make_service([notes])
    service.indexer.store = RefusingStore(service.store, poisoned)
    report = service.reindex()
    assert report.added == 5
    assert [f["file_path"] for f in report.failed] == [poisoned]
    assert "the index refused this note" in report.failed[0]["error"]
    assert service.status()["failed"][0]["file_path"] == poisoned
    found = {
        h["file_path"]
        for h in service.search({"query": "pear trees", "threshold": 0.0, "top_k": 10})["results"]
    }
    assert found == {str(notes / f"n{i}.md") for i in (0, 1, 3, 4, 5)}


@pytest.mark.slow
def test_a_store_that_does_not_answer_is_an_outage_not_a_refusal(make_service, notes):
    service = make_service([notes])
    service.store.close()
    with pytest.raises(StoreError) as raised:
        service.store.upsert_metadata([{"doc_id": "x"}])
    assert not isinstance(raised.value, RowsRejectedError)


class UnavailableStore(RefusingStore):
    """The real store, whose engine stops answering at the metadata write."""

    def upsert_metadata(self, rows):
        raise StoreError("Milvus upsert failed: connection refused")


@pytest.mark.slow
def test_a_write_that_fails_for_an_outage_leaves_no_note_processing(make_service, notes):
    for i in range(3):
        write(notes / f"n{i}.md", f"# Note {i}\n\nA stonemason's chisel, number {i}.\n")
    service = make_service([notes])
    service.indexer.store = UnavailableStore(service.store, "")
    with pytest.raises(StoreError):
        service.reindex()
    assert "processing" not in service.status()["documents"]


@pytest.mark.slow
def test_a_note_deleted_between_scan_and_read_is_removed_not_failed(make_service, notes, monkeypatch):
    for i in range(20):
        write(notes / f"n{i}.md", f"# Note {i}\n\nSailing knots, number {i}.\n")
    service = make_service([notes])
    service.reindex()
    import mdrag.index.changes

    real = mdrag.index.changes.read_bytes

    def delete_then_read(path, limit):  # the file goes after the scan saw it, before its read
        if path.endswith(("n3.md", "n4.md")):
            os.unlink(to_fs(path))
        return real(path, limit)

    monkeypatch.setattr(mdrag.index.changes, "read_bytes", delete_then_read)
    report = service.reindex(force=True)
    assert report.failed == [] and report.deleted == 2
    assert service.status()["documents"] == {"indexed": 18}


# ---- end to end through `mdrag reindex` --------------------------------------------------------


def cli_env(notes: Path, state: Path) -> dict[str, str]:
    state.mkdir(parents=True, exist_ok=True)
    (state / "config.yaml").write_text("{}\n")
    return {
        **os.environ,
        "MDRAG_CONFIG": str(state / "config.yaml"),
        "MDRAG_MILVUS_URI": str(state / "milvus.db"),
        "MDRAG_SERVER_SOCKET_PATH": f"/tmp/mdrag-hostile-{os.getpid()}/none.sock",  # no daemon there
        "MDRAG_ROOTS": str(notes),
        "HF_HUB_OFFLINE": "1",
    }


def ordinary_notes(notes: Path, count: int = 8) -> None:
    for i in range(count):
        write(notes / f"plain{i}.md", f"# Plain {i}\n\nNotes on beekeeping, hive number {i}.\n")


def write_bytes_named(folder: Path, name: bytes, text: str) -> bytes:
    path = os.fsencode(folder) + b"/" + name
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(text.encode())
    return path


def reindex(env, *args):
    result = mdrag_cli(env, "reindex", "--json", *args, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def search(env, query):
    result = mdrag_cli(env, "search", query, "--json", "--threshold", "0", "--top-k", "50", timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["results"]


@pytest.mark.slow
def test_reindex_indexes_non_utf8_names_beside_ordinary_notes_and_each_path_leads_to_its_file(tmp_path):
    notes = tmp_path / "notes"
    ordinary_notes(notes)
    hostile = {
        name: write_bytes_named(notes, name, f"# Odd {i}\n\nA zeppelin hangar, odd name {i}.\n")
        for i, name in enumerate([*HOSTILE_NAMES, b"d\xe9j\xe0/inner.md"])
    }
    env = cli_env(notes, tmp_path / "state")
    report = reindex(env)
    assert report["failed"] == [] and report["added"] == 8 + len(hostile)
    hits = [h for h in search(env, "zeppelin hangar") if "zeppelin" in h["section_text"]]
    assert {os.fsencode(to_fs(h["file_path"])) for h in hits} == set(hostile.values())
    for hit in hits:  # each stored path opens the very file the hit came from
        with open(to_fs(hit["file_path"]), encoding="utf-8") as handle:
            assert hit["section_text"].strip().splitlines()[-1] in handle.read()
    assert reindex(env)["unchanged"] == 8 + len(hostile)
    os.unlink(hostile[b"caf\xe9.md"])
    assert reindex(env)["deleted"] == 1


@pytest.mark.slow
def test_special_files_and_odd_names_neither_stall_nor_stop_a_reindex(tmp_path):
    notes = tmp_path / "notes"
    ordinary_notes(notes, 3)
    os.mkfifo(notes / "fifo.md")
    os.symlink("/dev/zero", notes / "zero.md")
    os.symlink(notes / "loop-b.md", notes / "loop-a.md")
    os.symlink(notes / "loop-a.md", notes / "loop-b.md")
    os.symlink(notes, notes / "self")  # a folder loop
    for name in ["new\nline.md", "quo'te\".md", "-rf.md", "--help.md"]:
        write(notes / name, f"# {name!r}\n\nA lantern for {name!r}.\n")
    env = cli_env(notes, tmp_path / "state")
    started = time.monotonic()
    report = reindex(env)
    assert time.monotonic() - started < 120
    assert report["added"] == 3 + 4
    assert {h["file_path"] for h in search(env, "lantern")} >= {
        str(notes / "-rf.md"),
        str(notes / "new\nline.md"),
    }


def drop_file_permission_override() -> None:
    """Root reads any file; a child without CAP_DAC_OVERRIDE/READ_SEARCH meets permissions as a
    user does (dropped from the bounding set, they are gone after the exec)."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.slow
def test_an_unreadable_folder_or_file_fails_with_the_reason_and_keeps_its_notes(tmp_path):
    notes = tmp_path / "notes"
    ordinary_notes(notes, 2)
    write(notes / "locked" / "a.md", "# A\n\nThe vault holds an amber brooch.\n")
    write(notes / "locked" / "b.md", "# B\n\nThe vault holds a silver spoon.\n")
    write(notes / "shut.md", "# Shut\n\nThe vault holds a copper kettle.\n")
    env = cli_env(notes, tmp_path / "state")

    def run(*args):
        result = subprocess.run(
            [sys.executable, "-m", "mdrag.cli.main", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=drop_file_permission_override,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    assert run("reindex", "--json")["added"] == 5
    os.chmod(notes / "locked", 0)
    os.chmod(notes / "shut.md", 0)
    try:
        report = run("reindex", "--json")
    finally:
        os.chmod(notes / "locked", 0o755)
        os.chmod(notes / "shut.md", 0o644)
    failed = {f["file_path"]: f["error"] for f in report["failed"]}
    assert "Permission denied" in failed[str(notes / "locked")]
    assert "Permission denied" in failed[str(notes / "shut.md")]
    assert report["deleted"] == 0
    found = {h["file_path"] for h in run("search", "vault holds", "--json", "--threshold", "0")["results"]}
    assert {str(notes / "locked" / "a.md"), str(notes / "locked" / "b.md"), str(notes / "shut.md")} <= found


# ---- end to end through the daemon ----------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = started_over(tmp_path_factory.mktemp("hostile"))
    yield process
    process.close()


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def searchable(daemon, query: str, path: str) -> bool:
    return path in {h["file_path"] for h in daemon.search(query)}


@pytest.mark.slow
def test_the_daemon_indexes_byte_names_saved_with_ordinary_notes_and_deletes_them_by_stored_form(daemon):
    folder = daemon.notes / "burst"
    for i in range(5):
        write(folder / f"plain{i}.md", f"# Plain {i}\n\nA glassblower's furnace, batch {i}.\n")
    written = [
        write_bytes_named(folder, name, f"# Odd {i}\n\nA glassblower's furnace, odd {i}.\n")
        for i, name in enumerate([b"caf\xe9.md", b"\xc3(x.md", b"d\xe9j\xe0/in\xff.md"])
    ]
    stored = [to_text(os.fsdecode(p)) for p in written]
    expected = set(stored) | {str(folder / f"plain{i}.md") for i in range(5)}
    # A new folder's files reach the daemon through the watcher's folder event, which may come
    # after a --wait-fresh that found the queue empty: wait for the notes themselves.
    wait_until(
        lambda: expected <= {h["file_path"] for h in daemon.search("glassblower furnace", top_k=50)}, 60
    )
    assert daemon.status()["failed"] == []
    similar = daemon.client.call("similar", note=stored[0])["results"]
    assert similar and all(os.path.exists(to_fs(r["path"])) for r in similar)
    daemon.client.call("related", note=stored[2])
    for path in written:
        os.unlink(path)
    wait_until(lambda: not set(stored) & {h["file_path"] for h in daemon.search("glassblower", top_k=50)}, 30)
    assert "ERROR" not in daemon.log()


@pytest.mark.slow
@pytest.mark.parametrize(
    "text", [ALIAS_BOMB, DEEP_FLOW, TOML_DOTTED_KEY], ids=["alias-bomb", "deep-nesting", "toml-dotted-key"]
)
def test_hostile_frontmatter_saved_into_a_root_is_indexed_as_text_quickly_and_the_daemon_lives(daemon, text):
    assert daemon.process is not None
    name = f"hostile-{len(text)}"

    def index(path: Path, content: str) -> tuple[float, float]:
        """Seconds until searchable, and the daemon's peak RSS growth in MB meanwhile."""
        before = peak_rss_kb(daemon.process.pid)
        started = time.monotonic()
        write(path, content)
        wait_until(
            lambda: (
                daemon.status()["documents"].get("indexed", 0)
                and daemon.client.call("search", query="x", threshold=1.0, wait_fresh=60)
                and searchable(daemon, path.stem, str(path))
            ),
            60,
        )
        return time.monotonic() - started, (peak_rss_kb(daemon.process.pid) - before) / 1024

    # The same text without a frontmatter block first: the model's own cost of embedding it
    # (and its memory for windows this long) is not the frontmatter's.
    plain_s, plain_mb = index(daemon.notes / f"{name}-plain.md", f"# {name}-plain\n\n" + text[4:])
    fence = text[:3]  # --- or +++
    hostile_s, hostile_mb = index(
        daemon.notes / f"{name}.md", text.replace(f"\n{fence}\n#", f"\n{fence}\n# {name}\n#", 1)
    )
    print(
        f"\n{name}: searchable in {hostile_s:.2f} s (+{hostile_mb:.1f} MB peak RSS); "
        f"the same text as a plain note: {plain_s:.2f} s (+{plain_mb:.1f} MB)"
    )
    assert hostile_s < max(5.0, 2 * plain_s)  # 5 s on a quiet machine; never much past plain text
    assert hostile_mb < 100
    warnings = {w["file_path"]: w["warning"] for w in daemon.status()["warnings"]}
    assert "indexed as text" in warnings[str(daemon.notes / f"{name}.md")]
    assert daemon.process.poll() is None


@pytest.mark.slow
def test_a_note_over_the_size_limit_is_failed_with_the_reason_and_blocks_nothing(daemon):
    huge = daemon.notes / "huge.md"
    huge.write_text(("# Huge\n\n" + "A very long ledger line about nothing much. " * 20 + "\n\n") * 23_000)
    assert huge.stat().st_size > 20_000_000
    time.sleep(3)
    small = daemon.notes / "after-huge.md"
    started = time.monotonic()
    write(small, "# After\n\nThe falconer's gauntlet hangs by the door.\n")
    seconds = wait_until(lambda: searchable(daemon, "falconer gauntlet", str(small)), 60)
    print(f"\nsmall note after a 20 MB one: searchable in {time.monotonic() - started:.2f} s")
    assert seconds < 5
    wait_until(lambda: any(f["file_path"] == str(huge) for f in daemon.status()["failed"]), 30)
    failed = {f["file_path"]: f["error"] for f in daemon.status()["failed"]}
    assert "over the index.max_file_mb limit of 5 MB" in failed[str(huge)]


@pytest.mark.slow
def test_a_small_note_saved_after_a_large_one_is_searchable_before_the_large_one_is_done(daemon):
    large = daemon.notes / "large.md"
    paragraph = "Tidal charts of the northern estuary, with soundings and notes. " * 12
    large.write_text("".join(f"## Reach {i}\n\n{paragraph} {i}\n\n" for i in range(2500)))  # ~2 MB
    time.sleep(3)
    small = daemon.notes / "after-large.md"
    started = time.monotonic()
    write(small, "# After\n\nThe cooper tightens the barrel hoops.\n")
    seconds = wait_until(lambda: searchable(daemon, "cooper barrel hoops", str(small)), 120)
    print(f"\nsmall note after a 2 MB one: searchable in {time.monotonic() - started:.2f} s")
    assert seconds < 5
    assert "waits behind newer changes" in daemon.log()
    large.unlink()  # the module's daemon has other tests to serve


@pytest.mark.slow
def test_a_reindex_path_outside_the_roots_is_one_warning_line_not_a_traceback(daemon, tmp_path):
    result = mdrag_cli(daemon.env, "reindex", str(tmp_path), timeout=60)
    assert result.returncode == 1 and "is not under a configured root" in result.stderr
    log = daemon.log()
    assert "Traceback" not in log and "ERROR" not in log
    assert any("WARNING" in line and "is not under a configured root" in line for line in log.splitlines())


@pytest.mark.slow
def test_reindex_of_a_path_as_a_hit_shows_it_refreshes_that_note_and_deletes_nothing(tmp_path):
    notes = tmp_path / "notes"
    ordinary_notes(notes, 2)
    path = write_bytes_named(notes, b"caf\xe9.md", "# Cafe\n\nA copper espresso pot.\n")
    env = cli_env(notes, tmp_path / "state")
    reindex(env)
    stored = to_text(os.fsdecode(path))
    assert "\\xe9" in stored
    report = reindex(env, "--force", stored)  # as copied from `mdrag search` output
    assert (report["updated"], report["deleted"], report["failed"]) == (1, 0, [])
    report = reindex(env, "--force", os.fsdecode(path))  # as the shell passes the real bytes
    assert (report["updated"], report["deleted"], report["failed"]) == (1, 0, [])


def make_deep_note(top: Path, levels: int = 22, name_length: int = 200) -> Path:
    """A note under folders nested past the system's path length (22 x 201 bytes > 4,096): made a
    folder at a time through descriptors, as no one path to it can be opened."""
    top.mkdir()
    parent = os.open(top, os.O_DIRECTORY)
    path = top
    try:
        for level in range(levels):
            name = f"{level:02d}" + "d" * (name_length - 2)
            os.mkdir(name, dir_fd=parent)
            child = os.open(name, os.O_DIRECTORY, dir_fd=parent)
            os.close(parent)
            parent, path = child, path / name
        note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=parent)
        os.write(note, b"# Deep\n\nThe spelunker maps the lowest cave.\n")
        os.close(note)
    finally:
        os.close(parent)
    return path / "deep.md"


@pytest.mark.slow
def test_a_note_past_the_systems_path_length_is_listed_in_status_with_its_reason_until_it_is_gone(daemon):
    top = daemon.notes / "cave"
    deep = make_deep_note(top)
    assert len(bytes(deep)) > os.pathconf("/", "PC_PATH_MAX")
    assert mdrag_cli(daemon.env, "reindex", timeout=120).returncode == 0
    failed = {f["file_path"]: f["error"] for f in daemon.status()["failed"]}
    (place,) = [p for p in failed if p.startswith(str(top))]
    assert "longer than the system allows" in failed[place] and "not indexed" in failed[place]
    shown = mdrag_cli(daemon.env, "status", timeout=60)
    assert "longer than the system allows" in shown.stdout
    shutil.rmtree(top)  # by descriptors: no path too long for it
    assert mdrag_cli(daemon.env, "reindex", timeout=120).returncode == 0
    assert not [f for f in daemon.status()["failed"] if f["file_path"].startswith(str(top))]

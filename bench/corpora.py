"""Eval corpora: unpack a judged corpus once and keep its index, keyed by content and index identity.

Indexing SciFact takes minutes on a small machine, so `make eval` builds each corpus's index
once under a work dir (default `.eval-work/`, or `$MDRAG_EVAL_WORK`) and reuses it while
neither the notes nor what the index is built for (schema, sectioning, model, and how texts are
embedded and keyword-analysed: BUILD_VERSION) change.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WORK = REPO / ".eval-work"
READY = "ready.json"  # written last: a work dir without it is an interrupted build
# Raised when mdrag embeds or keyword-analyses the same notes differently while the schema, the
# sectioning and the model stay (2: each text is its own ONNX run; 3: text before the first
# heading that is only an HTML comment is no section): the cached indexes are then built again
# rather than measured as if the code that built them were today's.
BUILD_VERSION = 3


@dataclass
class Corpus:
    """Where the notes come from: (archive, member globs or None for all, prefix under the root)."""

    name: str
    sources: list[tuple[Path, tuple[str, ...] | None, str]]

    def digest(self) -> str:
        h = hashlib.sha256()
        for archive, globs, prefix in self.sources:
            h.update(_file_digest(archive).encode())
            h.update(json.dumps([globs, prefix]).encode())
        return h.hexdigest()[:16]


def scifact(notes: Path) -> Corpus:
    return Corpus("scifact", [(notes, None, "")])


def natural(folder: Path, data_root: Path, name: str = "natural") -> Corpus:
    """A judged natural-question set (`natural`, or a vault): `corpus.json` names archives (relative
    to data_root) and globs; a note's id is `<source name>/<member path>`, so each source unpacks
    under its name."""
    spec = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    sources = []
    for source in spec["sources"]:
        globs = tuple(source.get("include") or ()) or None
        sources.append((data_root / source["archive"], globs, source["name"]))
    return Corpus(name, sources)


def index_identity(config: Any) -> str:
    """What an index is built for; another value means another index."""
    from mdrag.milvus.schema import SCHEMA_VERSION
    from mdrag.notes.sections import SECTIONING_VERSION

    return json.dumps(
        {
            "schema": SCHEMA_VERSION,
            "sectioning": SECTIONING_VERSION,
            "model": config.embedding_model,
            "backend": config.embedding_backend,
            "max_tokens": config.sections_max_tokens,
            "build": BUILD_VERSION,
        },
        sort_keys=True,
    )


def work_dir(corpus: Corpus, config: Any, base: Path | None = None) -> Path:
    base = base or Path(os.environ.get("MDRAG_EVAL_WORK") or DEFAULT_WORK)
    key = hashlib.sha256((corpus.digest() + index_identity(config)).encode()).hexdigest()[:16]
    return base / f"{corpus.name}-{key}"


def open_indexed(corpus: Corpus, config: Any, base: Path | None = None) -> tuple[Any, Path, dict[str, Any]]:
    """A Service over the corpus's cached index (built first if missing), its notes root and build facts."""
    from mdrag.service import Service

    where = work_dir(corpus, config, base)
    ready = where / READY
    root = where / "notes"
    if ready.exists() and json.loads(ready.read_text(encoding="utf-8")).get("root") != str(root.resolve()):
        # The index names its notes by absolute path: one built elsewhere (a moved or renamed
        # work dir) would match none of them here, and every query would score as missed.
        ready.unlink()
    if not ready.exists():
        shutil.rmtree(where, ignore_errors=True)
        _unpack(corpus, root)
    config = config.with_overrides(roots=(str(root.resolve()),), milvus_uri=str(where / "index" / "eval.db"))
    service = Service.open(config)
    if ready.exists():
        facts = json.loads(ready.read_text(encoding="utf-8"))
        facts["cached"] = True
        return service, root.resolve(), facts
    started = time.perf_counter()
    report = service.reindex()
    facts = {
        "notes": report.added,
        "sections_embedded": report.sections_embedded,
        "index_seconds": round(time.perf_counter() - started, 1),
        "root": str(root.resolve()),
    }
    print(
        f"{corpus.name}: indexed {report.added} notes ({report.sections_embedded} sections) "
        f"in {facts['index_seconds']}s into {where}",
        file=sys.stderr,
    )
    ready.write_text(json.dumps(facts))
    facts["cached"] = False
    return service, root.resolve(), facts


def _unpack(corpus: Corpus, root: Path) -> None:
    for archive, globs, prefix in corpus.sources:
        target = root / prefix if prefix else root
        target.mkdir(parents=True, exist_ok=True)
        if archive.is_dir():
            shutil.copytree(archive, target, dirs_exist_ok=True)
            continue
        with tarfile.open(archive) as tar:
            # Member paths match (and name notes) without a leading "./" (the EIPs archive has one).
            members = [
                m
                for m in tar.getmembers()
                if globs is None or any(fnmatch.fnmatch(m.name.removeprefix("./"), g) for g in globs)
            ]
            tar.extractall(target, members=members, filter="data")


def _file_digest(path: Path) -> str:
    if path.is_dir():
        h = hashlib.sha256()
        for p in sorted(path.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(path)).encode())
                h.update(hashlib.sha256(p.read_bytes()).digest())
        return h.hexdigest()
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

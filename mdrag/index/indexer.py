"""Indexer: brings the store in line with the files (hash, section, embed, write, delete)."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from loguru import logger

from mdrag import keys
from mdrag.answers.status import ReindexReport
from mdrag.catalog import Catalog, record_from_row
from mdrag.embedding.embedder import EmbedCancelled, Embedder
from mdrag.errors import DocumentError, RowsRejectedError
from mdrag.index import prepass
from mdrag.index.readahead import ReadCancelled, read_ahead
from mdrag.index.reading import NoteReader
from mdrag.index.roots import Roots, under
from mdrag.index.rows import PreparedNote, store_each, store_notes
from mdrag.index.unheld import sort_out
from mdrag.milvus import CarriedVectors, PendingKeywords, Store
from mdrag.notes.document import MAX_FILE_BYTES, FileUnreadable, FileVanished, parse_document, read_bytes
from mdrag.notes.pathtext import to_fs, to_text
from mdrag.notes.scanner import NoteFilter
from mdrag.notes.sections import Sectioner
from mdrag.progress import ProgressMeter

# Texts per write batch: the model sorts a batch by length, and the larger the batch the less
# of each model batch is padding. A stop still comes within one model batch (embed checks
# `cancel`).
BATCH_TEXTS = 2048
# The first batches of a run are smaller (64, 128, ... texts): a first index becomes searchable
# note by note within seconds, rather than after the first 2048 texts.
FIRST_BATCH_TEXTS = 64
BATCH_FILES = 512  # and never more files than this per batch, so each write stays bounded
READ_AHEAD = 256  # files read and sectioned ahead of the model by the reader thread
READ_AHEAD_BYTES = 32_000_000  # and at most this much of their text (the one in hand aside)
RUN_VECTORS = 100_000  # vectors one run keeps for reuse (384 float32 each: ~150 MB at most)

Listener = Callable[[list[dict[str, Any]]], None]  # told of each batch's new vector rows once visible


@dataclass
class IndexReport:
    """What one indexing run did; `mdrag reindex --json` prints it."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    sections_embedded: int = 0
    sections_reused: int = 0
    seconds: float = 0.0

    def to_dict(self) -> ReindexReport:
        return cast(ReindexReport, asdict(self))


class RunVectors:
    """The vectors one indexing run has embedded or found, by (section_id, window).

    A section repeated across notes (versions of a page, a shared template) is reused from here.
    Asking the store instead costs a query per batch that returns every copy's row: 28 s of a
    100 s cold run over the PowerShell reference, with the model idle meanwhile.
    """

    def __init__(self, store_had_notes: bool, limit: int = RUN_VECTORS) -> None:
        self._vectors: dict[tuple[str, int], np.ndarray] = {}
        self.limit = limit
        # The store can hold a vector this run has not seen only if it had notes when the run
        # began, or if this run let go of one it wrote.
        self.store_may_know_more = store_had_notes

    def get(self, key: tuple[str, int]) -> np.ndarray | None:
        return self._vectors.get(key)

    def add(self, vectors: dict[tuple[str, int], np.ndarray]) -> None:
        self._vectors.update(vectors)
        while len(self._vectors) > self.limit:
            del self._vectors[next(iter(self._vectors))]  # the oldest first
            self.store_may_know_more = True


class Indexer:
    """The one writer of the index; a daemon owns one and feeds it every change."""

    def __init__(
        self,
        embedder: Embedder,
        store: Store,
        catalog: Catalog,
        note_filter: NoteFilter,
        max_tokens: int = 1000,
        max_file_bytes: int = MAX_FILE_BYTES,
        carried: CarriedVectors | None = None,
        roots: Roots | None = None,
        waiting: PendingKeywords | None = None,
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.catalog = catalog
        self.filter = note_filter
        self.carried = carried
        # Which roots are there: an unavailable one's notes are kept, never taken as deleted.
        self.roots = roots or Roots(note_filter.roots, lambda root: len(catalog.paths_under(to_text(root))))
        self.sectioner = Sectioner(embedder.count_tokens, max_tokens)
        self.reader = NoteReader(self.sectioner, embedder)  # a large note is sectioned once a version
        self.listeners: list[Listener] = []
        self.max_file_bytes = max_file_bytes  # `index.max_file_mb`: larger notes are refused
        self._resume: tuple[RunVectors, set[str]] | None = None  # a stopped run's vectors, its files
        # Notes read ahead of the model, searchable by their words (index/prepass.py); None for
        # an index whose searches cannot read it (a rebuild's, switched in once complete).
        self.waiting = waiting
        # Notes whose rows the keyword index lacks, and so are not shown (its repair could not
        # read them: a root away, a note unreadable): a run that meets one reads it again.
        self.unshown: set[str] = set()

    # ---- public operations ---------------------------------------------------------------

    def reconcile(
        self,
        paths: Iterable[Path] | None = None,
        force: bool = False,
        progress: ProgressMeter | None = None,
        cancel: threading.Event | None = None,
        forget: bool = False,
    ) -> IndexReport:
        """Index every note under `paths` (default: all roots) and drop what vanished there.

        A root that is unavailable (see index/roots.py) is neither scanned nor emptied: its notes stay
        as indexed, unless `forget` (a person named it: `mdrag reindex ROOT`).
        """
        started = time.monotonic()
        scope = None if paths is None else [Path(p).expanduser().resolve() for p in paths]
        report = IndexReport()
        away = self._away(scope, forget, report)
        reachable = [t for t in (self.filter.roots if scope is None else scope) if not _in(t, away)]
        # Paths as stored: valid UTF-8 whatever bytes the names hold (see pathtext).
        files = [to_text(p) for p in self.filter.scan(reachable)]
        files = sort_out(files, map(to_text, reachable), self.catalog, report.failed, self.filter.unheld)
        seen = set(files)
        if scope is None:
            gone = [p for p in self.catalog.paths() if p not in seen]
        else:
            candidates: set[str] = set()
            for target in scope:
                candidates.update(self.catalog.paths_under(to_text(target)))
                if self.catalog.get(to_text(target)) is not None:
                    candidates.add(to_text(target))
            gone = sorted(p for p in candidates if p not in seen)
        gone = [p for p in gone if not under(p, away)]
        if self.filter.unreadable:
            gone = self._keep_unreadable(gone, report)
        # Newest first: a first index of a large vault (hours on two cores) makes the notes in use
        # searchable within minutes, not at their place in the alphabet.
        files = newest_first(files)
        report = self.index_files(files, force=force, progress=progress, cancel=cancel, report=report)
        if cancel is None or not cancel.is_set():
            report.deleted += self.remove(gone)
            if scope is None and self.carried is not None:
                self.carried.discard()  # every note is in the new layout now
            if scope is None and self.waiting is not None:
                self.waiting.discard()  # every note is indexed: none waits (nor one gone meanwhile)
        report.seconds = time.monotonic() - started
        return report

    def index_files(
        self,
        paths: list[str],
        force: bool = False,
        progress: ProgressMeter | None = None,
        cancel: threading.Event | None = None,
        report: IndexReport | None = None,
    ) -> IndexReport:
        """Bring these files (paths as stored, see pathtext) up to date; a path that no longer
        exists is removed.

        `cancel` stops the run between batches: what was written stays consistent, and what
        was not is found changed by the next run. `progress` is told of every note read, text
        embedded and batch written, and finished at the end.
        """
        started = time.monotonic()
        report = report or IndexReport()
        missing = [p for p in paths if not _may_be_note(p) or not self.filter.accepts(to_fs(p))]
        report.deleted += self.remove(self._kept_while_away(missing))
        gone = set(missing)
        present = sort_out([p for p in paths if p not in gone], paths, self.catalog, report.failed)
        present = list(dict.fromkeys(present))  # read-ahead must never see one path twice
        meter = progress or ProgressMeter()
        meter.begin(len(present))
        done = writes = 0
        batch: list[PreparedNote] = []
        texts = 0
        run = self._resumed(present) or RunVectors(store_had_notes=len(self.catalog) > 0)
        # A reader thread reads, hashes and sections the next files while the model embeds.
        vanished: list[str] = []
        notes = self._prepare(present, force, report, vanished, meter)
        prepared_files = read_ahead(notes, READ_AHEAD, cancel, lambda p: p.size, READ_AHEAD_BYTES)
        finished = False
        ahead = None
        try:
            ahead = self._keywords_ahead(present, meter)
            for prepared in prepared_files:
                batch.append(prepared)
                texts += prepared.text_count
                if texts >= min(BATCH_TEXTS, FIRST_BATCH_TEXTS << writes) or len(batch) >= BATCH_FILES:
                    self._write(batch, report, run, cancel, meter)
                    writes += 1
                    done += len(batch)
                    batch, texts = [], 0
                    if cancel is not None and cancel.is_set():
                        raise EmbedCancelled
            if batch:
                self._write(batch, report, run, cancel, meter)
            finished = True
        except (EmbedCancelled, ReadCancelled):
            # Nothing of the unfinished batch was written: the next run finds those files changed,
            # and the vectors embedded so far wait for it.
            self._resume = (run, set(present))
            logger.info("indexing stopped after {} of {} files", done + report.unchanged, len(present))
        finally:
            prepared_files.close()
            if ahead is not None:
                ahead.stop()
            meter.finish()
            # Also when a write fails: no file may stay "processing" for ever.
            self.catalog.clear_marks(present)
        report.deleted += self.remove(self._kept_while_away(vanished))
        if self.unshown.intersection(paths):
            self._settle_unshown(paths)
        if self.waiting is not None and self.waiting.active:
            # Notes no longer to be read (excluded, gone) wait no more; nor, once the run is
            # done, any of its notes: each is indexed or failed.
            self.waiting.drop(keys.doc_id(p) for p in [*missing, *vanished, *(present if finished else ())])
            if not self.waiting.active:
                self.waiting.discard()
        report.seconds = time.monotonic() - started
        return report

    def _keywords_ahead(self, paths: list[str], meter: ProgressMeter) -> prepass.KeywordsAhead | None:
        """For a run with many new notes (a first index): a pass that makes them searchable by
        their words long before the model reaches them; None for a small run."""
        if self.waiting is None:
            return None
        new = [(i, p) for i, p in enumerate(paths) if self.catalog.get(p) is None]
        if len(new) < prepass.MIN_NOTES:
            return None
        meter.ahead(len(paths) - len(new))  # the run's other notes: keyword search finds them already
        logger.info("reading {} new notes ahead of the model, for keyword search", len(new))
        return prepass.KeywordsAhead(self.waiting, new, self._read_for_keywords, meter).start()

    def _read_for_keywords(self, path: str) -> prepass.Read | None:
        """A note read and sectioned for the pending keyword index, or None when it cannot be
        (the model's pass records why)."""
        prepared = PreparedNote(path=path, is_new=True)
        try:
            data = read_bytes(path, self.max_file_bytes)
            prepared.file_hash, prepared.size = keys.file_hash(data), len(data)
            if self.waiting is not None and self.waiting.holds(path, prepared.file_hash):
                return prepass.Read(prepared, held=True)  # read by a run before this one: kept
            self.reader.section(prepared, parse_document(path, data, prepared.file_hash))
        except Exception:  # any failure is the model's pass to report
            return None
        return prepass.Read(prepared)

    def _away(self, scope: list[Path] | None, forget: bool, report: IndexReport) -> list[Path]:
        """The unavailable roots this run must leave alone, each reported as a failure."""
        away = []
        for root, reason in self.roots.unavailable().items():
            if scope is not None and forget and any(_in(target, [root]) for target in scope):
                continue  # named by a person: what is not there goes
            if scope is not None and not any(_in(target, [root]) or _in(root, [target]) for target in scope):
                continue
            away.append(root)
            kept = len(self.catalog.paths_under(to_text(root)))
            error = f"root unavailable ({reason}); its {kept} indexed note(s) are kept until it returns"
            report.failed.append({"file_path": to_text(root), "error": error})
        return away

    def _kept_while_away(self, paths: list[str]) -> list[str]:
        """These paths, less those in an unavailable root: their files are not gone, their drive is."""
        if not paths:
            return paths
        away = self.roots.gone()
        return [p for p in paths if not under(p, away)] if away else paths

    def _keep_unreadable(self, gone: list[str], report: IndexReport) -> list[str]:
        """A folder that cannot be read is a failure, not a delete: its notes stay as indexed."""
        kept: set[str] = set()
        for folder, reason in self.filter.unreadable.items():
            where = to_text(folder)
            notes = [p for p in gone if p == where or p.startswith(where + "/")]
            kept.update(notes)
            error = (
                f"cannot read: {reason}; its {len(notes)} indexed note(s) stay until it is readable or gone"
            )
            report.failed.append({"file_path": where, "error": error})
            logger.warning("failed {}: {}", where, error)
        return [p for p in gone if p not in kept]

    def _resumed(self, paths: list[str]) -> RunVectors | None:
        """The vectors of a run stopped to let other changes go first, once its files come back."""
        if self._resume is None or self._resume[1].isdisjoint(paths):
            return None
        run, self._resume = self._resume[0], None
        return run

    def remove(self, paths: list[str]) -> int:
        """Forget these files: catalog first (search stops showing them), then rows, then metadata."""
        self.reader.done(paths)  # read by a run that stopped, maybe never written
        paths = [p for p in paths if self.catalog.get(p) is not None]
        if not paths:
            return 0
        for path in paths:
            self.catalog.remove(path)
        self.store.delete_vectors_of_paths(paths)
        self.store.delete_metadata(paths)
        for path in paths:
            logger.info("removed {}", path)
        return len(paths)

    def repair(self) -> int:
        """After an unclean stop, or with a keyword index that lacks rows (lost, unreadable):
        delete vector rows that no indexed file version owns, and make the keyword index hold
        the rows left (a write may have stopped between the two). Milvus keeps no text, so the
        notes whose rows it lacks are read again: their vectors are Milvus's, none is embedded
        again unless it changed. Returns how many vector rows were removed."""
        kept: list[dict[str, Any]] = []
        orphans: list[dict[str, Any]] = []
        path_of = {keys.doc_id(path): path for path in self.catalog.paths()}
        for row in self.store.iter_vector_keys():
            path = row.get("file_path") or path_of.get(row["doc_id"])
            visible = None if path is None else self.catalog.visible_hash(path)
            # A row the keyword index lacks names no version: while its note is indexed, the
            # note is read again below, and its writes delete what no version of it owns.
            owned = visible is not None and row.get("file_hash", visible) == visible
            (kept if owned else orphans).append({**row, "file_path": path})
        if orphans:
            logger.warning("removing {} vector rows left by an unclean stop", len(orphans))
            self.store.delete_vectors(orphans)
        lacking = self.store.keyword_gaps(kept)
        if lacking:
            paths = sorted({key["file_path"] for key in lacking})
            logger.warning("reading {} notes again for the rows the keyword index lacks", len(paths))
            self.unshown.update(paths)
            self.index_files(paths, force=True)
        return len(orphans)

    def _settle_unshown(self, paths: list[str]) -> None:
        """After a run over these notes: which of the unshown ones the keyword index still lacks
        rows of; once none, it is marked complete."""
        self.unshown = (self.unshown - set(paths)) | self.store.notes_lacking_keywords(
            sorted(self.unshown.intersection(paths))
        )
        if self.unshown:
            logger.warning(
                "{} notes are not searchable until they can be read again (e.g. {})",
                len(self.unshown),
                min(self.unshown),
            )
        else:
            self.store.keywords_complete()

    # ---- reading and sectioning ------------------------------------------------------------

    def _prepare(
        self, paths: list[str], force: bool, report: IndexReport, vanished: list[str], meter: ProgressMeter
    ) -> Iterator[PreparedNote]:
        for path in paths:
            known = self.catalog.get(path)
            held = known.file_hash if known is not None else ""
            prepared = PreparedNote(path=path, is_new=known is None, held_hash=held)
            try:
                data = read_bytes(path, self.max_file_bytes)
            except FileVanished:
                vanished.append(path)  # deleted since the scan: the writer removes it
                meter.unchanged()
                continue
            except FileUnreadable as exc:
                if known is not None and known.status == "indexed":
                    # Permissions come and go (a folder being copied, a mount): keep what we have.
                    error = f"{exc}; its indexed version is kept until it is readable or gone"
                    report.failed.append({"file_path": path, "error": error})
                    logger.warning("failed {}: {}", path, error)
                    meter.unchanged()
                    continue
                prepared.error = str(exc)
            except DocumentError as exc:
                if known is not None and known.status == "failed" and known.error_message == str(exc):
                    report.unchanged += 1  # failed for the same reason as last time: nothing to write
                    meter.unchanged()
                    continue
                prepared.error = str(exc)
            if prepared.error:  # recorded failed, with the reason
                meter.read(0)
                yield prepared
                continue
            prepared.file_hash, prepared.size = keys.file_hash(data), len(data)
            unchanged = known is not None and known.file_hash == prepared.file_hash
            if unchanged and not force and path not in self.unshown:
                report.unchanged += 1
                meter.unchanged()
                continue
            self.catalog.mark([path], "processing")
            try:
                self.reader.read(prepared, data)
            except DocumentError as exc:
                prepared.error = str(exc)
            except Exception as exc:  # a parser bug on one strange file must not stop the run
                logger.exception("unexpected error while parsing {}", path)
                prepared.error = f"internal error while parsing: {exc!r}"
            meter.read(prepared.text_count)
            yield prepared

    # ---- writing ---------------------------------------------------------------------------

    def _write(
        self,
        batch: list[PreparedNote],
        report: IndexReport,
        run: RunVectors,
        cancel: threading.Event | None = None,
        meter: ProgressMeter | None = None,
    ) -> None:
        """Write a batch so that search sees each file's old version, then its new one."""
        meter = meter or ProgressMeter()
        vectors = self._vectors(batch, report, run, cancel, meter)
        retried = False
        try:
            written = store_notes(self.store, batch, vectors, visible=self._switch)
        except RowsRejectedError as exc:
            retried = True
            # The engine refused something one of these notes holds: the others go on without it.
            logger.warning("the index refused {} notes at once; writing them one by one: {}", len(batch), exc)
            written = store_each(self.store, batch, vectors, visible=self._switch)
        batch = [p for p in batch if p.path in written.keep]
        metadata, keep = written.metadata, written.keep
        for prepared, row in zip(batch, metadata, strict=True):
            self.catalog.put(record_from_row(row))  # again: a refused note's failure record last
            if prepared.error:
                report.failed.append({"file_path": prepared.path, "error": prepared.error})
                logger.warning("failed {}: {}", prepared.path, prepared.error)
            elif prepared.is_new:
                report.added += 1
            else:
                report.updated += 1
        meter.written(len(batch))
        self.reader.done(p.path for p in batch)
        for listener in self.listeners:
            listener(written.rows)
        # 3. the old version's rows, now unreachable
        # (after a refused batch, new notes too: the batch may have landed in part)
        updated = [p.path for p in batch if not p.is_new or retried]
        if updated:
            stale = [
                r for r in self.store.vector_keys_for_paths(updated) if r["id"] not in keep[r["file_path"]]
            ]
            self.store.delete_vectors(stale)
        # Their real rows are searched now. An index that gives up here takes the notes still
        # waiting with it: no line may say those are found by their words any more.
        if self.waiting is not None and self.waiting.active:
            self.waiting.drop((keys.doc_id(p.path) for p in batch), lost=meter.ahead_lost)

    def _switch(self, metadata: list[dict[str, Any]]) -> None:
        """The catalog names the new versions: searches show them from now on (their rows are in)."""
        for row in metadata:
            self.catalog.put(record_from_row(row))

    def _copied_vectors(
        self, batch: list[PreparedNote], known: Mapping[tuple[str, int], Any]
    ) -> dict[tuple[str, int], np.ndarray]:
        """The vectors of notes whose exact bytes an indexed note holds (a copied or moved note,
        or the note itself read again), read from that note's rows by key: a row's id follows from
        its path, the shared content and the section's text, so the lookup never scans (see
        Store.vectors_of_rows), and a row sectioned otherwise (by an older mdrag) is not found."""
        expected: dict[str, tuple[str, int]] = {}  # holder's row id -> the (section, window) it holds
        asked: list[tuple[str, str]] = []
        for p in batch:
            holder = self.catalog.holder_of(p.file_hash)
            if holder is None:
                continue
            for ordinal, (sid, windows) in enumerate(zip(p.section_ids, p.windows, strict=True)):
                for w in range(len(windows)):
                    if (sid, w) in known:
                        continue
                    row_id = keys.row_id(holder, p.file_hash, sid, ordinal, w)
                    expected[row_id] = (sid, w)
                    asked.append((holder, row_id))
        if not asked:
            return {}
        found = self.store.vectors_of_rows(asked)
        return {expected[row_id]: np.asarray(vector, dtype=np.float32) for row_id, vector in found.items()}

    def _vectors(
        self,
        batch: list[PreparedNote],
        report: IndexReport,
        run: RunVectors,
        cancel: threading.Event | None,
        meter: ProgressMeter,
    ) -> dict[tuple[str, int], np.ndarray]:
        wanted = {
            (sid, w): text
            for p in batch
            for sid, ws in zip(p.section_ids, p.windows, strict=True)
            for w, text in enumerate(ws)
        }
        vectors = {key: v for key in wanted if (v := run.get(key)) is not None}
        if run.store_may_know_more and len(vectors) < len(wanted):
            vectors.update(self._copied_vectors(batch, vectors))
        # Then each place that may hold a vector already, by section id, before the model.
        sources: list[Callable[[list[str]], Mapping[tuple[str, int], Any]]] = []
        if run.store_may_know_more:
            sources.append(self.store.vectors_for_sections)
        if self.carried is not None:
            sources.append(self.carried.lookup)  # after a layout upgrade (see milvus/carried.py)
        for lookup in sources:
            unknown = sorted({sid for sid, w in wanted if (sid, w) not in vectors})
            if not unknown:
                break
            found = lookup(unknown).items()
            vectors.update({key: np.asarray(v, dtype=np.float32) for key, v in found if key in wanted})
        missing = [key for key in wanted if key not in vectors]
        # Progress counts every note's texts, a text repeated in the batch as often as it is there.
        meter.texts_done(sum(p.text_count for p in batch) - len(missing))
        # In slices (a huge note has tens of thousands of windows), each kept in the run as it
        # is done: a stopped run loses at most one slice.
        for start in range(0, len(missing), BATCH_TEXTS):
            part = missing[start : start + BATCH_TEXTS]
            try:
                computed = self.embedder.embed(
                    [wanted[k] for k in part], cancel=cancel, done=meter.texts_done
                )
            except EmbedCancelled as stop:  # what the model did before the stop waits for the next run
                run.add({part[i]: vector for i, vector in stop.done.items()})
                raise
            embedded = dict(zip(part, computed, strict=True))
            vectors.update(embedded)
            run.add(embedded)
        run.add(vectors)
        report.sections_embedded += len({sid for sid, _ in missing})
        report.sections_reused += len({sid for sid, _ in wanted} - {sid for sid, _ in missing})
        return vectors


def newest_first(paths: list[str]) -> list[str]:
    """Paths as stored, the most recently modified first (ties keep their order; a path that
    cannot be looked at goes last, where reading it will say why)."""

    def modified(path: str) -> float:
        try:
            return os.stat(to_fs(path)).st_mtime
        except OSError:
            return float("-inf")

    return sorted(paths, key=modified, reverse=True)


def _in(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _may_be_note(path: str) -> bool:
    """False only when the file is surely not there (gone, or not a file); a file that cannot
    be looked at (a folder without search permission) is kept, and fails with the reason."""
    try:
        return stat.S_ISREG(os.stat(to_fs(path)).st_mode)
    except PermissionError:
        return True
    except OSError:
        return False

"""Indexer: brings the store in line with the files (hash, section, embed, write, delete)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

from loguru import logger

from mdrag import keys
from mdrag.answers.status import ReindexReport
from mdrag.catalog import Catalog
from mdrag.embedding.embedder import EmbedCancelled, Embedder
from mdrag.index import prepass
from mdrag.index.changes import read_changed, read_for_keywords
from mdrag.index.readahead import ReadCancelled, read_ahead
from mdrag.index.reading import NoteReader
from mdrag.index.roots import Roots, under
from mdrag.index.rows import PreparedNote
from mdrag.index.scope import away_roots, keep_unreadable, kept_while_away, may_be_note, newest_first, within
from mdrag.index.unheld import sort_out
from mdrag.index.vectors import SLICE_TEXTS, RunVectors, batch_vectors
from mdrag.index.write import write_batch
from mdrag.milvus import CarriedVectors, PendingKeywords, Store
from mdrag.notes.document import MAX_FILE_BYTES
from mdrag.notes.pathtext import to_fs, to_text
from mdrag.notes.scanner import NoteFilter
from mdrag.notes.sections import Sectioner
from mdrag.progress import ProgressMeter

# Texts per write batch, one slice for the model: it sorts a batch by length, and the larger the
# batch the less of each model batch is padding. A stop still comes within one model batch (embed
# checks `cancel`).
BATCH_TEXTS = SLICE_TEXTS
# The first batches of a run are smaller (64, 128, ... texts): a first index becomes searchable
# note by note within seconds, rather than after the first 2048 texts.
FIRST_BATCH_TEXTS = 64
BATCH_FILES = 512  # and never more files than this per batch, so each write stays bounded
READ_AHEAD = 256  # files read and sectioned ahead of the model by the reader thread
READ_AHEAD_BYTES = 32_000_000  # and at most this much of their text (the one in hand aside)
REMOVED_NAMED = 20  # a run that removes more notes logs how many, each at debug level

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
    descriptions_embedded: int = 0  # notes' frontmatter descriptions the model embedded
    seconds: float = 0.0
    # An upgrade's run: "done" once every note is in the index rebuilt for this version's layout,
    # "under way" for a part of it (a run over one folder, or one stopped); "" for any other.
    upgrade: str = ""
    roots_without_notes: list[str] = field(default_factory=list)  # a run's roots left with no note

    def to_dict(self) -> ReindexReport:
        return cast(ReindexReport, asdict(self))


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
        # An upgrade under way: begun at this open, or stopped before its end at an earlier one
        # (known by the vectors it carries; one that carries none, after a switch of back-end,
        # is no longer known as one after a restart). Its runs read notes again, not add them.
        self.upgrading = store.rebuilt_from_older or (carried is not None and carried.exists())
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
        report = IndexReport(upgrade="under way" if self.upgrading else "")
        away = away_roots(self.roots, self.catalog, scope, forget, report.failed)
        reachable = [t for t in (self.filter.roots if scope is None else scope) if not within(t, away)]
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
            gone = keep_unreadable(self.filter.unreadable, gone, report.failed)
        # Newest first: a first index of a large vault (hours on two cores) makes the notes in use
        # searchable within minutes, not at their place in the alphabet.
        files = newest_first(files)
        report = self.index_files(files, force=force, progress=progress, cancel=cancel, report=report)
        if cancel is None or not cancel.is_set():
            report.deleted += self.remove(gone)
            if scope is None:
                if self.upgrading:
                    report.upgrade = "done"  # every note is in the new layout now
                self.upgrading = False
                if self.carried is not None:
                    self.carried.discard()
            if scope is None and self.waiting is not None:
                self.waiting.discard()  # every note is indexed: none waits (nor one gone meanwhile)
            # As this run's look found them: a mistyped root is named where it was typed.
            report.roots_without_notes = [
                to_text(r) for r in self.roots.without_notes(look=False, scope=scope)
            ]
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
        missing = [p for p in paths if not may_be_note(p) or not self.filter.accepts(to_fs(p))]
        report.deleted += self.remove(kept_while_away(self.roots, missing))
        gone = set(missing)
        present = sort_out([p for p in paths if p not in gone], paths, self.catalog, report.failed)
        present = list(dict.fromkeys(present))  # read-ahead must never see one path twice
        meter = progress or ProgressMeter()
        meter.begin(len(present), held=sum(1 for p in present if self.catalog.get(p) is not None))
        done = writes = 0
        batch: list[PreparedNote] = []
        texts = 0
        run = self._resumed(present) or RunVectors(store_had_notes=len(self.catalog) > 0)
        # A reader thread reads, hashes and sections the next files while the model embeds.
        vanished: list[str] = []
        notes = read_changed(
            present,
            catalog=self.catalog,
            reader=self.reader,
            max_file_bytes=self.max_file_bytes,
            force=force,
            unshown=self.unshown,
            report=report,
            vanished=vanished,
            meter=meter,
        )
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
        report.deleted += self.remove(kept_while_away(self.roots, vanished))
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
        read = partial(
            read_for_keywords, reader=self.reader, max_file_bytes=self.max_file_bytes, waiting=self.waiting
        )
        return prepass.KeywordsAhead(self.waiting, new, read, meter).start()

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
        many = len(paths) > REMOVED_NAMED  # a folder moved out, another root served: one line, not 1,319
        if many:
            logger.info("removed {} notes (e.g. {})", len(paths), min(paths))
        for path in paths:
            logger.log("DEBUG" if many else "INFO", "removed {}", path)
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
            # Info: its cause (an unclean stop, a lost or outdated keyword index) was said at open.
            logger.info("reading {} notes again for the rows the keyword index lacks", len(paths))
            self.unshown.update(paths)
            # A note under no root known here (a command run with none configured, its daemon's
            # given on its command line) is left unshown for a run that knows its root: read
            # here, it would count as gone and lose its rows. The index stays incomplete till then.
            self.index_files([p for p in paths if self.filter.accepts(to_fs(p))], force=True)
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

    # ---- writing ---------------------------------------------------------------------------

    def _write(
        self,
        batch: list[PreparedNote],
        report: IndexReport,
        run: RunVectors,
        cancel: threading.Event | None = None,
        meter: ProgressMeter | None = None,
    ) -> None:
        """A batch's vectors found or embedded, then the batch written (see write_batch), then
        reported: searches see each file's old version, then its new one."""
        meter = meter or ProgressMeter()
        found = batch_vectors(
            batch,
            run,
            embedder=self.embedder,
            store=self.store,
            catalog=self.catalog,
            carried=self.carried,
            cancel=cancel,
            meter=meter,
        )
        report.sections_embedded += found.sections_embedded
        report.sections_reused += found.sections_reused
        report.descriptions_embedded += found.descriptions_embedded
        written = write_batch(self.store, self.catalog, batch, found.vectors)
        for note in written.notes:
            if note.error:
                report.failed.append({"file_path": note.path, "error": note.error})
                logger.warning("failed {}: {}", note.path, note.error)
            elif note.is_new:
                report.added += 1
            else:
                report.updated += 1
        meter.written(len(written.notes))
        self.reader.done(note.path for note in written.notes)
        for listener in self.listeners:
            listener(written.rows)
        # Their real rows are searched now. An index that gives up here takes the notes still
        # waiting with it: no line may say those are found by their words any more.
        if self.waiting is not None and self.waiting.active:
            self.waiting.drop((keys.doc_id(note.path) for note in written.notes), lost=meter.ahead_lost)

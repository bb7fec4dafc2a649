"""Reading: a changed note parsed and sectioned into the windows the model embeds (a large one once)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from mdrag import keys
from mdrag.embedding.embedder import Embedder
from mdrag.index.rows import PreparedNote
from mdrag.notes.document import Document, parse_document
from mdrag.notes.sections import SECTIONING_VERSION, Sectioner, embedding_inputs

# A note this large steps aside for changes saved while it is embedded (serve/writer.py's
# LARGE_NOTE_BYTES): what its reading made is kept for its next turn.
LARGE_NOTE_BYTES = 256 * 1024


class NoteReader:
    """Parses and sections notes for the indexer; a large note's work is kept until it is written.

    A large note that steps aside came back each turn to be read, parsed and sectioned again, while
    the reader thread of the turn before, left to finish by itself, still sectioned it: a 4.9 MB
    one-line note with a save every 5 s had a daemon grow from 0.5 to 5 GB. Now one reader at a
    time sections a large note, and the next turn takes what it made, by path and file hash.
    """

    def __init__(self, sectioner: Sectioner, embedder: Embedder) -> None:
        self.sectioner = sectioner
        self.embedder = embedder
        self._kept: dict[str, PreparedNote] = {}
        self._keeping = threading.Lock()  # held a moment: the writer asks it too
        self._large = threading.Lock()  # held while a reader sections a large note (seconds)

    def read(self, prepared: PreparedNote, data: bytes) -> None:
        """Fill in the note's document, sections and windows from its bytes (`prepared.file_hash`
        is theirs), or from what a stopped run made of this very version."""
        if len(data) <= LARGE_NOTE_BYTES:
            self.section(prepared, parse_document(prepared.path, data, prepared.file_hash))
            return
        with self._large:  # a reader the last turn left behind finishes first; its work is taken
            with self._keeping:
                kept = self._kept.get(prepared.path)
            if kept is not None and kept.file_hash == prepared.file_hash:
                _take(prepared, kept)
                return
            self.section(prepared, parse_document(prepared.path, data, prepared.file_hash))
            with self._keeping:
                self._kept[prepared.path] = prepared

    def done(self, paths: Iterable[str]) -> None:
        """These notes are written (or gone): what was kept of them goes. Never waits for a reader."""
        with self._keeping:
            for path in paths:
                self._kept.pop(path, None)

    def section(self, prepared: PreparedNote, document: Document) -> None:
        outline, title, inputs = embedding_inputs(self.sectioner, document)
        prepared.document, prepared.sections, prepared.title = document, outline.sections, title
        prepared.links = outline.links
        for prefix, body in inputs:
            lead, spans = self.embedder.window_spans(prefix, body)
            prepared.windows.append([f"{lead}{body[start:end]}" for start, end in spans])
            prepared.spans.append(spans)
            prepared.section_ids.append(
                keys.section_id(self.embedder.model_id, SECTIONING_VERSION, prefix, body)
            )
        prepared.description = document.description
        if prepared.description:
            prepared.description_id = keys.description_id(self.embedder.model_id, document.description)


def _take(prepared: PreparedNote, kept: PreparedNote) -> None:
    """What reading made of a version, into this run's note (its own flags: new, held hash)."""
    prepared.document, prepared.sections, prepared.title = kept.document, kept.sections, kept.title
    prepared.links, prepared.windows, prepared.spans = kept.links, kept.windows, kept.spans
    prepared.section_ids = kept.section_ids
    prepared.description, prepared.description_id = kept.description, kept.description_id

"""Note text: one indexed note's text and its resolved links, for a preview (read-only)."""

from __future__ import annotations

from mdrag import keys
from mdrag.answers.notes import NoteText, ResolvedLink
from mdrag.catalog import Catalog
from mdrag.errors import DocumentError, NotFoundError
from mdrag.milvus import PendingKeywords
from mdrag.notes.document import decode_text
from mdrag.notes.links import LinkResolver
from mdrag.notes.regular import read_regular

MAX_NOTE_BYTES = 5_000_000  # as index.max_file_mb's default: a preview of more helps nobody


def note_text(path: str, catalog: Catalog, waiting: PendingKeywords | None = None) -> NoteText:
    """The note's text as it is on disk now, whether the index holds that version (`fresh`), and
    each link it makes with the indexed note it resolves to (None when broken).

    Only an indexed note is opened, or one a first index read ahead of the model (`waiting`,
    status `pending`) and still as it was read: the operation never becomes a way to read any file,
    nor to wait on one (a FIFO, a device: see notes/regular)."""
    record = catalog.get(path)
    if record is None and (waiting is None or not waiting.holds(path)):
        raise NotFoundError(f"{path} is not an indexed note")
    try:
        data = read_regular(path, MAX_NOTE_BYTES)
        if len(data) > MAX_NOTE_BYTES:
            raise DocumentError(f"over {MAX_NOTE_BYTES / 1e6:g} MB; too large to preview")
        text = decode_text(data)
    except DocumentError as exc:
        if record is None:
            raise NotFoundError(f"{path} is not an indexed note") from None
        raise NotFoundError(f"{path}: {exc}") from None
    if record is None:
        if waiting is None or not waiting.holds(path, keys.file_hash(data)):
            raise NotFoundError(f"{path} is not an indexed note")
        return {"path": path, "text": text, "fresh": False, "status": "pending", "links": []}
    resolver = LinkResolver(catalog.paths())
    links: list[ResolvedLink] = [{**link, "path": resolver.resolve(path, link)} for link in record.links]
    return {
        "path": path,
        "text": text,
        "fresh": keys.file_hash(data) == record.file_hash,
        "status": record.status,
        "links": links,
    }

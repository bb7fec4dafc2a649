"""Document: a note's bytes, SHA-256 file_hash, timestamps and YAML frontmatter (python-frontmatter)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from frontmatter import YAMLHandler

from mdrag.errors import DocumentError
from mdrag.pathtext import to_fs

MAX_FILE_BYTES = 50 * 1024 * 1024  # a "note" larger than this is almost surely not one
_YAML = YAMLHandler()


@dataclass(frozen=True)
class Document:
    """One markdown file as read from disk, with its frontmatter separated from its body."""

    path: str
    text: str  # the whole decoded file; section positions are offsets into it
    body_offset: int  # where the markdown body starts (after any frontmatter block)
    file_hash: str
    size: int
    created_at: float
    modified_at: float
    frontmatter: dict[str, Any] = field(default_factory=dict)
    has_frontmatter: bool = False
    warning: str = ""  # e.g. malformed frontmatter: indexed as text, but worth fixing

    @property
    def body(self) -> str:
        return self.text[self.body_offset :]

    def fm_text(self, key: str) -> str:
        value = self.frontmatter.get(key)
        if value is None or isinstance(value, (dict, list)):
            return ""
        return str(value).strip()

    def fm_list(self, key: str) -> list[str]:
        """A list-valued key written either as a YAML list or as a comma-separated string."""
        value = self.frontmatter.get(key)
        if value is None:
            return []
        items = value if isinstance(value, list) else str(value).split(",")
        return [str(item).strip() for item in items if item is not None and str(item).strip()]

    @property
    def language(self) -> str:
        return self.fm_text("language") or self.fm_text("lang") or "en"

    @property
    def word_count(self) -> int:
        return len(self.body.split())


def hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes (`path` as stored, see pathtext), or a DocumentError saying why not."""
    path = to_fs(str(path))
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise DocumentError(f"file is {size} bytes, over the {MAX_FILE_BYTES} byte limit")
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise DocumentError("file disappeared before it could be read") from None
    except IsADirectoryError:
        raise DocumentError("path is a directory, not a file") from None
    except OSError as exc:
        raise DocumentError(f"cannot read file: {exc.strerror or exc}") from None


def parse_document(path: str | Path, data: bytes, file_hash: str | None = None) -> Document:
    """Decode and split a note; raises DocumentError for binary or non-UTF-8 content."""
    if b"\x00" in data[:8192]:
        raise DocumentError("binary file: contains NUL bytes, not markdown text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); re-save the file as UTF-8"
        ) from None
    try:
        stat = os.stat(to_fs(str(path)))
        created, modified = getattr(stat, "st_birthtime", stat.st_ctime), stat.st_mtime
    except OSError:
        created = modified = 0.0
    frontmatter, body_offset, has_fm, warning = split_frontmatter(text)
    return Document(
        path=str(path),
        text=text,
        body_offset=body_offset,
        file_hash=file_hash or hash_bytes(data),
        size=len(data),
        created_at=created,
        modified_at=modified,
        frontmatter=frontmatter,
        has_frontmatter=has_fm,
        warning=warning,
    )


def split_frontmatter(text: str) -> tuple[dict[str, Any], int, bool, str]:
    """(frontmatter, body offset, has frontmatter, warning) for a note's text.

    Malformed YAML never fails the note: its whole text is kept as body, so nothing the
    author wrote drops out of the index, and the warning says what to fix.
    """
    if not _YAML.detect(text):
        return {}, 0, False, ""
    try:
        raw, content = _YAML.split(text)
    except ValueError:
        return {}, 0, False, "frontmatter opened with '---' but never closed; indexed as text"
    body_offset = len(text) - len(content)
    if content.startswith("\n"):
        body_offset += 1
    try:
        loaded = _YAML.load(raw)
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        return {}, 0, False, f"malformed YAML frontmatter, indexed as text: {problem}"
    if loaded is None:
        return {}, body_offset, True, ""
    if not isinstance(loaded, dict):
        return {}, 0, False, "frontmatter is not a mapping of keys to values; indexed as text"
    # Round-trip through JSON so dates and other YAML types store cleanly in Milvus.
    safe = json.loads(json.dumps({str(k): v for k, v in loaded.items()}, default=str))
    return safe, body_offset, True, ""

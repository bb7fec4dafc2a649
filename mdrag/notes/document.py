"""Document: a note's bytes, SHA-256 file_hash, timestamps and frontmatter (notes/frontblock)."""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mdrag import keys
from mdrag.errors import DocumentError
from mdrag.notes.frontblock import block_end, split_frontmatter
from mdrag.notes.pathtext import to_fs
from mdrag.notes.regular import open_regular
from mdrag.text.canonical import canonical

MAX_FILE_BYTES = 5_000_000  # the default of `index.max_file_mb`
_WORD = re.compile(r"\S+")
MAX_ALIASES = 8  # a note's other names kept: a long list is a keyword dump, not names
ALIAS_CHARS = 120
# A description the model reads whole (it reads 256 word pieces); a longer one is cut, so a note
# with megabytes in it costs no more to embed than any other.
DESCRIPTION_CHARS = 1000
# A carriage return alone ends a line as a newline does (a classic Mac OS file, a line pasted
# from one; editors read all three endings). Read as a newline, the frontmatter, headings and
# line numbers are found as in any other note; one character for one keeps every offset into
# the text, and the hash is of the bytes, so nothing else changes.
_LONE_CR = re.compile(r"\r(?!\n)")


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
    # Where a frontmatter block that was not read ends (0: none): its lines are body text, but
    # no markup (its `---` no rule, its `title: x` over one no heading).
    unread_end: int = 0

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
    def aliases(self) -> list[str]:
        """The note's other names (frontmatter `aliases`, or Obsidian's older `alias`: a list or a
        comma-separated string), each once, at most MAX_ALIASES. A path is no name: Hugo and Docsy
        sites keep a page's old URLs under `aliases` (/about/privacy/, docs/old), so a value with
        a slash is skipped (a name such as CI/CD with it); nor is a mapping, a yes/no, or a text
        longer than ALIAS_CHARS."""
        value = self.frontmatter.get("aliases") or self.frontmatter.get("alias")
        if isinstance(value, (dict, set, bool)):
            return []
        items = value if isinstance(value, list) else str(value or "").split(",")
        names: dict[str, str] = {}
        for item in items:
            if item is None or isinstance(item, (dict, list, set, bool)):
                continue
            alias = " ".join(str(item).split())
            if alias and len(alias) <= ALIAS_CHARS and "/" not in alias and "\\" not in alias:
                names.setdefault(alias.casefold(), alias)
        return list(names.values())[:MAX_ALIASES]

    @property
    def description(self) -> str:
        """What the note says it is about in its frontmatter (`description`, else `summary`: a
        site's page, a proposal, an article), one line of at most DESCRIPTION_CHARS ("" for none)."""
        values = (self.frontmatter.get(key) for key in ("description", "summary"))
        text = next((v for v in values if isinstance(v, str) and v.strip()), "")  # not a date, a yes
        return " ".join(text[: DESCRIPTION_CHARS * 2].split())[:DESCRIPTION_CHARS].rstrip()

    @property
    def language(self) -> str:
        return self.fm_text("language") or self.fm_text("lang") or "en"

    @property
    def word_count(self) -> int:
        """The body's words, counted without a list of them (a 5 MB note's was 50 MB)."""
        return sum(1 for _ in _WORD.finditer(self.text, self.body_offset))


class FileVanished(DocumentError):
    """The file (or its folder) was removed between the scan and the read: a delete, not a failure."""


class FileUnreadable(DocumentError):
    """The file exists but may not be read (permissions): what the index holds of it is kept."""


def file_title(path: str) -> str:
    """The note's file name without its suffix, composed (`canonical`: macOS names files
    decomposed): the title of a note that has no other, matched as its text is."""
    return canonical(Path(path).stem)


def read_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes (`path` as stored, see pathtext), or a DocumentError saying why not."""
    try:
        with open_regular(to_fs(str(path))) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise DocumentError(
                    f"file is {size / 1e6:.1f} MB, over the index.max_file_mb limit of {limit / 1e6:g} MB; "
                    "raise index.max_file_mb to index it"
                )
            data = handle.read(limit + 1)  # never more than the limit, if it grew meanwhile
    except (FileNotFoundError, NotADirectoryError):
        raise FileVanished("file disappeared before it could be read") from None
    except PermissionError as exc:
        raise FileUnreadable(f"cannot read file: {exc.strerror or exc}") from None
    except OSError as exc:
        raise DocumentError(f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise DocumentError(f"file grew past the index.max_file_mb limit of {limit / 1e6:g} MB while read")
    return data


# Byte order marks, the 4-byte ones first (UTF-32-LE's begins as UTF-16-LE's does).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes) -> str:
    """A note's text: UTF-8 (with or without BOM), or UTF-16/32 when a BOM says so; a carriage
    return that ends a line alone read as a newline (_LONE_CR), and the text in Unicode's
    composed form (`canonical`: what the index matches words in). Every reader of a note's text
    reads it here, so a section's offsets hold for each of them."""
    text = canonical(_decoded(data))
    return _LONE_CR.sub("\n", text) if "\r" in text else text


def _decoded(data: bytes) -> str:
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if encoding is not None:
        try:
            return data.decode(encoding)  # the codec reads and drops the BOM
        except UnicodeDecodeError as exc:
            raise DocumentError(
                f"not valid {encoding.upper()} despite its byte order mark: {exc.reason}"
            ) from None
    if b"\x00" in data[:8192]:
        raise DocumentError("binary file: contains NUL bytes, not markdown text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); re-save the file as UTF-8"
        ) from None


def parse_document(path: str | Path, data: bytes, file_hash: str | None = None) -> Document:
    """Decode and split a note; raises DocumentError for binary or undecodable content."""
    text = decode_text(data)
    try:
        stat = os.stat(to_fs(str(path)))
        created, modified = getattr(stat, "st_birthtime", stat.st_ctime), stat.st_mtime
    except OSError:
        created = modified = 0.0
    frontmatter, body_offset, has_fm, warning = split_frontmatter(text)
    unread_end = block_end(text) if warning and not has_fm else 0
    return Document(
        path=str(path),
        text=text,
        body_offset=body_offset,
        file_hash=file_hash or keys.file_hash(data),
        size=len(data),
        created_at=created,
        modified_at=modified,
        frontmatter=frontmatter,
        has_frontmatter=has_fm,
        warning=warning,
        unread_end=unread_end,
    )

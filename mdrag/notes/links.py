"""Links: [[wikilinks]] and relative markdown links between notes, found when indexing, resolved on asking."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from markdown_it.token import Token

from mdrag.answers.notes import Link
from mdrag.notes.inline import code_spans
from mdrag.notes.scanner import NOTE_SUFFIXES
from mdrag.text.canonical import canonical

# [[target]], [[target#heading]], [[target|alias]], [[target#heading|alias]]; ![[embeds]] count too.
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
MAX_LINKS = 500  # per note: a generated index page must not make one metadata row huge
MAX_TARGET_CHARS = 1000


def wikilinks_as_text(text: str) -> str:
    """The text with each [[wikilink]] as Obsidian shows it: its alias, else its target and
    heading ("Note > Heading")."""
    if "[[" not in text:
        return text

    def shown(link: re.Match[str]) -> str:
        target, heading, alias = (part.strip() if part else "" for part in link.groups())
        return alias or " > ".join(part for part in (target, heading) if part)

    return _WIKILINK.sub(shown, text)


def extract_links(tokens: Iterable[Token], first_line: int) -> list[Link]:
    """The links a note's body makes, in order (the first MAX_LINKS); `first_line` is the 1-based
    file line of the body. Linear in the text: each link's line is counted on from the last's."""
    links: list[Link] = []
    for token in tokens:
        if token.type != "inline" or token.map is None:
            continue  # code blocks are never inline tokens, so their [[...]] are not links
        content = _without_code(token.content)  # blanked, not removed: offsets still give lines
        lines = _Lines(content, first_line + token.map[0])
        for match in _WIKILINK.finditer(content):
            target, anchor, alias = (g.strip() if g else "" for g in match.groups())
            target = target.rstrip("\\")  # [[X\|alias]]: the escaped pipe of a link inside a table
            if (target or anchor) and _names_a_note(target):
                links.append(_link("wikilink", target, anchor, alias, lines.at(match.start())))
        lines = _Lines(content, first_line + token.map[0])
        cursor, exhausted = 0, False
        for child in token.children or []:
            if child.type == "link_open":
                # Where this link's target sits; once no "](" is left, none is looked for again
                # (a page of reference links would scan to its end from each).
                found = -1 if exhausted else content.find("](", cursor)
                exhausted = found == -1
                cursor = max(found, cursor) + 1
                href = str(child.attrs.get("href", ""))
                parts = urlsplit(href)
                if parts.scheme or parts.netloc or not parts.path or not _is_note(unquote(parts.path)):
                    continue  # web links, mailto:, same-page #anchors, images and files are not notes
                links.append(
                    _link("markdown", unquote(parts.path), unquote(parts.fragment), "", lines.at(cursor))
                )
        if len(links) >= MAX_LINKS:
            break
    return links[:MAX_LINKS]


def _without_code(content: str) -> str:
    """The text with each code span's characters but newlines blanked: no [[...]] in code is a link."""
    spans = code_spans(content)
    if not spans:
        return content
    parts, last = [], 0
    for start, end in spans:
        parts.append(content[last:start])
        parts.append(re.sub(r"[^\n]", " ", content[start:end]))
        last = end
    parts.append(content[last:])
    return "".join(parts)


class _Lines:
    """The file line of offsets into a text, asked in increasing order: each count goes on from the last."""

    def __init__(self, text: str, first_line: int) -> None:
        self.text, self.offset, self.line = text, 0, first_line

    def at(self, offset: int) -> int:
        if offset > self.offset:
            self.line += self.text.count("\n", self.offset, offset)
            self.offset = offset
        return self.line


# What a wiki-link names that is a file, not a note: the attachments Obsidian shows (images,
# audio, video, PDF, canvas and base files) and office documents, archives and data files. Any
# other suffix is part of a note's name, as Obsidian reads it: [[Node.js]] is Node.js.md,
# [[ASP.NET]] ASP.NET.md, [[Drawing 2024.excalidraw]] the Excalidraw plugin's .excalidraw.md.
ATTACHMENT_SUFFIXES = frozenset(
    "avif bmp gif jpeg jpg png svg webp heic ico tif tiff "
    "3gp flac m4a mp3 ogg opus wav webm mkv mov mp4 ogv avi "
    "pdf canvas base doc docx odt ods odp ppt pptx rtf xls xlsx csv tsv txt json xml html htm "
    "zip gz tgz tar 7z rar epub".split()
)


def _names_a_note(target: str) -> bool:
    """A wiki-link's target names a note: no folder, and no attachment's suffix."""
    suffix = _suffix(target)
    return suffix is not None and suffix not in ATTACHMENT_SUFFIXES


def _is_note(target: str) -> bool:
    """A markdown link's path to a note: a markdown file, or a name without a suffix (or with
    digits: v1.2); not a folder or another file (a link to script.js is to the script)."""
    suffix = _suffix(target)
    return suffix is not None and (not suffix or f".{suffix}" in NOTE_SUFFIXES or not suffix.isalpha())


def _suffix(target: str) -> str | None:
    """The target's suffix, lowered, without its dot ("" for none); None for a folder."""
    if target.endswith(("/", "\\")):
        return None
    return PurePosixPath(target.replace("\\", "/")).suffix.lower()[1:]


def _link(kind: str, target: str, anchor: str, alias: str, line: int) -> Link:
    clip = MAX_TARGET_CHARS
    return {
        "kind": kind,
        "target": target[:clip],
        "anchor": anchor[:clip],
        "alias": alias[:clip],
        "line": line,
    }


class LinkResolver:
    """Resolves link targets to indexed notes: wikilinks by file name, markdown links by path."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = set(paths)
        self._by_stem: dict[str, list[str]] = {}
        # A link is matched composed and case folded (`file_name_key`): typed "Crème" in a note, it finds
        # the file macOS named decomposed; each path is also found by its composed spelling.
        self._composed = {canonical(path): path for path in sorted(self.paths, reverse=True)}
        for path in sorted(self.paths):
            self._by_stem.setdefault(file_name_key(PurePosixPath(path).stem), []).append(path)

    def resolve(self, source: str, link: Link) -> str | None:
        target = link["target"].replace("\\", "/")  # a note written on Windows
        if not target:  # [[#heading]]: a link within the note itself
            return source
        if link["kind"] == "markdown":
            return self._by_path(source, target)
        if target.startswith(("./", "../")):
            return self._by_path(source, target)
        return self._by_name(source, target)

    def _by_path(self, source: str, target: str) -> str | None:
        base = posixpath.dirname(source)
        joined = posixpath.normpath(posixpath.join(base, target))  # an absolute target stays absolute
        for candidate in (joined, *(joined + suffix for suffix in NOTE_SUFFIXES)):
            if candidate in self.paths:
                return candidate
            if (found := self._composed.get(canonical(candidate))) is not None:
                return found
        return None

    def _by_name(self, source: str, target: str) -> str | None:
        """Obsidian's rule: the note of that name, the nearest one when several share it."""
        wanted = PurePosixPath(_without_suffix(target))
        found = [
            p
            for p in self._by_stem.get(file_name_key(wanted.name), [])
            if _ends_with(PurePosixPath(p).with_suffix(""), wanted)
        ]
        if not found:
            return None
        here = posixpath.dirname(source)
        return min(found, key=lambda p: (posixpath.dirname(p) != here, len(p), p))


def _without_suffix(target: str) -> str:
    lowered = target.lower()
    for suffix in NOTE_SUFFIXES:
        if lowered.endswith(suffix):
            return target[: -len(suffix)]
    return target


def link_names(link: Link) -> str:
    """The file name (no suffix, case folded) a link can resolve to: a cheap test before resolving."""
    return file_name_key(_without_suffix(PurePosixPath(link["target"].replace("\\", "/")).name))


def file_name_key(text: str) -> str:
    """A file name as a link matches it: composed, case folded."""
    return canonical(text).casefold()


def _ends_with(path: PurePosixPath, tail: PurePosixPath) -> bool:
    parts, want = [file_name_key(p) for p in path.parts], [file_name_key(p) for p in tail.parts]
    return parts[-len(want) :] == want

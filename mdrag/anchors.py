"""Anchors: GitHub-style heading slugs, so a hit links to `path#heading-slug`."""

from __future__ import annotations

import re

_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<[^>]+>|[*_`~]")
_NOT_SLUG = re.compile(r"[^\w\- ]", re.UNICODE)


def plain_heading(text: str) -> str:
    """A heading's inline markdown reduced to the text a reader sees: links keep their label."""
    return _MARKUP.sub(lambda m: m.group(1) or "", text).strip()


def github_slug(heading: str) -> str:
    """GitHub's rule: lower case, drop punctuation but hyphens and underscores, spaces to hyphens."""
    return _NOT_SLUG.sub("", plain_heading(heading).lower()).replace(" ", "-")


class Slugger:
    """Slugs for one document's headings in order; a repeated slug gets -1, -2, … as on GitHub."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def slug(self, heading: str) -> str:
        base = github_slug(heading)
        slug = base
        while slug in self._seen:
            self._seen[base] += 1
            slug = f"{base}-{self._seen[base]}"
        self._seen[slug] = 0
        return slug

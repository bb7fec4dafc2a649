"""Anchors: GitHub-style heading slugs, so a hit links to `path#heading-slug`."""

from __future__ import annotations

import re

_NOT_SLUG = re.compile(r"[^\w\- ]", re.UNICODE)


def github_slug(heading: str) -> str:
    """GitHub's rule on a heading's rendered text (no markup): lower case, drop punctuation but
    hyphens and underscores, each space to a hyphen."""
    return _NOT_SLUG.sub("", heading.strip().lower()).replace(" ", "-")


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

    def claim(self, anchor: str) -> str:
        """An id the author gave (`{#id}`): used as it is, and never handed out again as a slug."""
        self._seen.setdefault(anchor, 0)
        return anchor

"""Described: each candidate's cosine to the frontmatter description of its note (its `description`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from mdrag.retrieval.candidate import Candidate

DescriptionVectors = Callable[[Sequence[str]], dict[str, np.ndarray]]


def attach_descriptions(rows: Iterable[Candidate], query: np.ndarray, read: DescriptionVectors) -> None:
    """Set each row's `description`: how close the query is to what its note says it is about
    (a site's page, a proposal: "Deploy a Hugo site to Netlify"), 0 for a note without a
    description. One read of the candidates' notes, `read(paths)` (Store.description_vectors)."""
    rows = list(rows)
    found = read(sorted({row["file_path"] for row in rows}))
    for row in rows:
        vector = found.get(row["file_path"])
        if vector is None or vector.shape != query.shape:  # none, or another model's
            row["description"] = 0.0
        else:
            row["description"] = float(np.dot(query, vector))

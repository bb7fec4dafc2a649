"""Related: a note's outgoing links, its backlinks and its semantic neighbours, each labelled."""

from __future__ import annotations

from pathlib import PurePosixPath

from mdrag.answers.notes import Backlink, OutgoingLink, RelatedAnswer, RelatedNote, SimilarNote
from mdrag.catalog import Catalog
from mdrag.errors import NotFoundError
from mdrag.notes.links import LinkResolver, file_name_key, link_names
from mdrag.retrieval.similarity import Similarity


def related_notes(path: str, catalog: Catalog, similarity: Similarity, k: int = 10) -> RelatedAnswer:
    """Links out (broken ones flagged), links in, and the k most similar notes, for one note."""
    record = catalog.get(path)
    if record is None:
        raise NotFoundError(f"{path} is not an indexed note")
    resolver = LinkResolver(catalog.paths())
    outgoing: list[OutgoingLink] = []
    for link in record.links:
        resolved = resolver.resolve(path, link)
        outgoing.append({**link, "path": resolved, "broken": resolved is None})
    backlinks: list[Backlink] = []
    name = file_name_key(PurePosixPath(path).stem)
    for other in catalog.records():
        if other.file_path == path:
            continue
        for link in other.links:
            # Only a link naming this file can resolve to it: the cheap test spares resolving the rest.
            if link_names(link) == name and resolver.resolve(other.file_path, link) == path:
                backlinks.append({**link, "path": other.file_path})
    # A note with no text (only frontmatter, or just created) has links but nothing to compare.
    has_text = record.section_count > 0 and catalog.visible_hash(path) is not None
    similar = similarity.similar(similarity.of_note(path), k) if has_text else []
    return {
        "note": path,
        "outgoing": outgoing,
        "backlinks": backlinks,
        "similar": similar,
        "related": _labelled(path, outgoing, backlinks, similar),
        "broken_links": [link for link in outgoing if link["broken"]],
    }


def _labelled(
    path: str, outgoing: list[OutgoingLink], backlinks: list[Backlink], similar: list[SimilarNote]
) -> list[RelatedNote]:
    """One entry per other note, naming every way it relates: links to, linked from, similar."""
    entries: dict[str, RelatedNote] = {}

    def entry(other: str) -> RelatedNote:
        return entries.setdefault(other, {"path": other, "relations": [], "score": None, "tier": None})

    for link in outgoing:
        target = link["path"]
        if target and target != path and "links to" not in entry(target)["relations"]:
            entry(target)["relations"].append("links to")
    for backlink in backlinks:
        if "linked from" not in entry(backlink["path"])["relations"]:
            entry(backlink["path"])["relations"].append("linked from")
    for note in similar:
        item = entry(note["path"])
        item["relations"].append("similar")
        item["score"], item["tier"] = note["score"], note["tier"]
    return sorted(entries.values(), key=lambda e: (-len(e["relations"]), -(e["score"] or 0), e["path"]))

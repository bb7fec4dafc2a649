"""The catalog's holders: which indexed note has a file's exact bytes, as versions come and go."""

from __future__ import annotations

from mdrag.catalog import Catalog, FileRecord


def _record(path: str, file_hash: str, status: str = "indexed", sections: int = 2) -> FileRecord:
    return FileRecord(file_path=path, file_hash=file_hash, status=status, section_count=sections)


def test_an_indexed_note_with_sections_holds_its_bytes_and_nothing_else_does() -> None:
    catalog = Catalog({"/n/a.md": _record("/n/a.md", "h1")})
    catalog.put(_record("/n/failed.md", "h2", status="failed"))
    catalog.put(_record("/n/empty.md", "h3", sections=0))
    assert catalog.holder_of("h1") == "/n/a.md"
    assert catalog.holder_of("h2") is None  # a failed note has no rows
    assert catalog.holder_of("h3") is None  # nor has a note without sections
    assert catalog.holder_of("unknown") is None


def test_a_holder_that_changes_or_goes_hands_its_bytes_to_another_copy() -> None:
    catalog = Catalog()
    catalog.put(_record("/n/a.md", "h1"))
    catalog.put(_record("/n/copy/a.md", "h1"))
    catalog.put(_record("/n/a.md", "h2"))  # a.md edited: its rows now hold other bytes
    assert catalog.holder_of("h1") == "/n/copy/a.md"
    assert catalog.holder_of("h2") == "/n/a.md"
    catalog.remove("/n/copy/a.md")
    assert catalog.holder_of("h1") is None
    catalog.put(_record("/n/a.md", "h2", status="processing"))  # its rows are being replaced
    assert catalog.holder_of("h2") is None


def test_a_reset_catalog_knows_only_the_holders_it_was_given() -> None:
    catalog = Catalog({"/n/a.md": _record("/n/a.md", "h1")})
    catalog.reset({"/n/b.md": _record("/n/b.md", "h2")})
    assert (catalog.holder_of("h1"), catalog.holder_of("h2")) == (None, "/n/b.md")


def test_the_index_has_sections_while_some_note_holds_rows() -> None:
    catalog = Catalog({"/n/failed.md": _record("/n/failed.md", "h0", status="failed")})
    catalog.put(_record("/n/empty.md", "h1", sections=0))
    assert not catalog.has_sections()  # a failed note and one without sections hold no rows
    catalog.put(_record("/n/a.md", "h2"))
    catalog.put(_record("/n/copy.md", "h2"))
    assert catalog.has_sections()
    catalog.remove("/n/a.md")
    assert catalog.has_sections()  # the copy still holds them
    catalog.put(_record("/n/copy.md", "h3", status="failed"))
    assert not catalog.has_sections()
    catalog.reset({"/n/b.md": _record("/n/b.md", "h4")})
    assert catalog.has_sections()


def test_the_last_write_is_kept_as_notes_are_put_and_read_again_on_reset() -> None:
    def at(path: str, when: float) -> FileRecord:
        return FileRecord(file_path=path, file_hash="h-" + path, status="indexed", indexed_at=when)

    assert Catalog().last_indexed_at() == 0.0
    catalog = Catalog({"/n/a.md": at("/n/a.md", 10.0), "/n/b.md": at("/n/b.md", 30.0)})
    assert catalog.last_indexed_at() == 30.0
    catalog.put(at("/n/c.md", 20.0))
    assert catalog.last_indexed_at() == 30.0
    catalog.put(at("/n/a.md", 40.0))
    assert catalog.last_indexed_at() == 40.0
    catalog.remove("/n/a.md")
    assert catalog.last_indexed_at() == 40.0  # a removal is a change too: the time stays
    catalog.reset({"/n/d.md": at("/n/d.md", 5.0)})
    assert catalog.last_indexed_at() == 5.0

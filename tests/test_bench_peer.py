"""bench.peer's pure parts: memsearch's commands and output, the edits, the ratios and the table."""

from __future__ import annotations

from pathlib import Path

from bench import harness, peer


def _result() -> dict:
    mdrag = {
        "backend": "onnx",
        "cold_from": "bench.cold, same run",
        "cold_s": 200.0,
        "sections_embedded": 900,
        "sections_reused": 100,
        "noop_s": {"median": 1.0, "min": 0.9, "max": 1.2, "n": 3},
        "edit_s": 2.0,
        "edit_sections_embedded": 3,
        "search_s": {"median": 1.5, "min": 1.4, "max": 1.6, "n": 3},
    }
    memsearch = {
        "cold_s": 400.0,
        "chunks": 2000,
        "noop_s": {"median": 10.0, "min": 9.0, "max": 11.0, "n": 3},
        "edit_s": 12.0,
        "edit_chunks_embedded": 40,
        "search_s": {"median": 6.0, "min": 5.0, "max": 7.0, "n": 3},
        "chunking": {"chunks": 2000, "over_256_tokens": 500},
        "versions": {"memsearch": "0.4.23", "sentence-transformers": "6.2.0", "torch": "2.13.0+cpu"},
    }
    return {
        "files": 300,
        "bytes": 4_000_000,
        "mdrag": mdrag,
        "memsearch": memsearch,
        **peer.compare(300, 4_000_000, mdrag, memsearch),
    }


def test_ratios_are_memsearch_over_mdrag_and_kb_per_s_is_bytes_over_the_cold_wall() -> None:
    result = _result()
    assert result["kb_per_s"] == {"mdrag": 20.0, "memsearch": 10.0}
    assert result["memsearch_over_mdrag"] == {"cold_s": 2.0, "noop_s": 10.0, "edit_s": 6.0, "search_s": 4.0}


def test_summary_and_table_show_every_figure_with_its_ratio() -> None:
    result = _result()
    text = peer.summary(result)
    assert "cold index, KB/s" in text and "x2.0" in text and "x10.0" in text
    assert "500 of its 2000 chunks" in text
    table = peer.table(result, {"date": "2026-01-01 00:00 UTC", "cores": 2})
    assert "| no-op re-index | 1.0 s | 10.0 s | x10.0 |" in table
    assert "| search process, no daemon | 1.5 s | 6.0 s | x4.0 |" in table
    assert "memsearch 0.4.23" in table and "onnx back-end" in table


def test_memsearch_runs_on_the_work_dirs_notes_with_the_bundled_model_and_its_own_db(tmp_path: Path) -> None:
    work = harness.Work(tmp_path)
    side = peer.Peer(work, tmp_path / "venv")
    index = side.index_command()
    assert index[0] == str(tmp_path / "venv" / "bin" / "memsearch")
    assert index[1:3] == ["index", str(work.notes)]
    options = dict(zip(index[3::2], index[4::2], strict=True))
    assert options == {
        "--provider": "local",
        "--model": peer.model_path(),
        "--milvus-uri": str(tmp_path / "peer" / "milvus.db"),
    }
    assert Path(peer.model_path(), "modules.json").exists()  # a sentence-transformers directory
    assert side.search_command("q")[1:3] == ["search", "q"]
    env = side.env()
    assert env["HOME"] == str(tmp_path / "peer") and env["HF_HUB_OFFLINE"] == "1"


def test_the_chunk_count_comes_from_memsearchs_closing_line() -> None:
    assert peer.chunks_indexed("loading\nIndexed 42 chunks.\n") == 42
    assert peer.chunks_indexed("Indexed 0 chunks.") == 0
    assert peer.chunks_indexed("something else") == -1


def test_the_top_line_goes_below_front_matter() -> None:
    assert peer.insert_top("---\ntitle: x\n---\n# Head\n", "new\n") == "---\ntitle: x\n---\nnew\n# Head\n"
    assert peer.insert_top("# Head\n", "new\n") == "new\n# Head\n"


def test_the_edits_are_measured_then_undone_and_reindexed(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nbody\n")
    before = {p: p.read_text() for p in tmp_path.glob("*.md")}
    seen: list[dict[Path, str]] = []

    def reindex() -> float:
        seen.append({p: p.read_text() for p in tmp_path.glob("*.md")})
        return 1.5

    assert peer.edited(tmp_path, reindex) == 1.5
    appended, topped = peer.edit_pair(tmp_path)
    changed = {p for p in before if seen[0][p] != before[p]}
    assert changed == {appended, topped} and appended != topped
    assert seen[0][appended].endswith(peer.PARAGRAPH) and seen[0][topped].startswith(peer.TOP_LINE)
    assert seen[1] == before and {p: p.read_text() for p in before} == before

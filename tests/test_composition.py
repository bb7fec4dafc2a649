"""One composition root: every indexer of a daemon, a rebuild's too, is built with the configured limits."""

from __future__ import annotations

import json

import pytest
from daemon_process import DaemonProcess, mdrag_cli


@pytest.mark.slow
def test_a_daemon_rebuild_honours_index_max_file_mb(tmp_path):
    """A rebuild's indexer once came from a second constructor without `index.max_file_mb`: a note
    refused as too large by the live index was indexed by `reindex --rebuild` through the daemon."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "small.md").write_text("# Herons\n\nA heron stands in the shallows at dawn.\n")
    big = notes / "big.md"
    big.write_text("# Tides\n\n" + "Soundings of the northern estuary at low water, by the pier. " * 400)
    assert big.stat().st_size > 20_000  # over the limit below: 0.01 MB, 10,000 bytes
    daemon = DaemonProcess(notes, tmp_path / "state", {"MDRAG_INDEX_MAX_FILE_MB": "0.01"}).start()
    try:
        daemon.wait_fresh()

        def refused() -> dict[str, str]:
            return {f["file_path"]: f["error"] for f in daemon.status()["failed"]}

        assert "over the index.max_file_mb limit" in refused()[str(big)]
        rebuilt = mdrag_cli(daemon.env, "reindex", "--rebuild", "--json")
        assert rebuilt.returncode == 0, rebuilt.stderr
        report = json.loads(rebuilt.stdout)
        assert [f["file_path"] for f in report["failed"]] == [str(big)], report
        assert "over the index.max_file_mb limit" in refused()[str(big)]
        hits = daemon.search("estuary soundings pier", threshold=0)
        assert str(big) not in {hit["file_path"] for hit in hits}
    finally:
        daemon.close()

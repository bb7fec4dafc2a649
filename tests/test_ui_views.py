"""The page's views over a stand-in route: indexing progress and results so far, failures, errors."""

from __future__ import annotations

import asyncio
from typing import Any

from mdrag.client.paths import Paths
from mdrag.config import Config
from mdrag.errors import QueryError
from mdrag.params.search import SearchParams
from mdrag.ui.app import Page, search_params

INDEXING = {
    "state": "embedding",
    "notes_done": 412,
    "notes_total": 994,
    "done": 5210,
    "total": 12400,
    "unit": "texts",
    "eta_s": 170.0,
    "rate": 30.0,
}
HIT = {
    "file_path": "/n/a.md",
    "section_heading": "A",
    "heading_level": 1,
    "chunk_index": 0,
    "confidence_score": 0.81,
    "section_text": "# A\n\nthe <lighthouse>",
    "start_line": 1,
    "end_line": 3,
    "snippet": {"text": "the <lighthouse>", "start_line": 3, "end_line": 3, "highlights": [[4, 16]]},
    "heading_path": "A",
    "metadata": {"title": "A <note>"},
}


class FakeRoute:
    """Answers as the daemon would, from canned responses."""

    paths = Paths()

    def __init__(self, response: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.response = response
        self.error = error
        self.asked: list[SearchParams] = []

    def search(self, params: SearchParams, wait_fresh: float | None = None) -> dict[str, Any]:
        self.asked.append(params)
        if self.error:
            raise self.error
        assert self.response is not None
        return self.response

    def status(self) -> dict[str, Any]:
        return {
            "daemon": {
                "pid": 7,
                "state": "indexing",
                "queue_depth": 3,
                "indexing": INDEXING,
                "index_full": "12 MB free on /s",
                "unwatched_folders": 4,
            },
            "roots": ["/n"],
            "unavailable_roots": [{"root": "/usb/notes", "reason": "missing", "since": 0, "notes_kept": 24}],
            "roots_without_notes": ["/home/me/Downloads"],
            "unshown": {"notes": 2, "example": "/usb/notes/a.md"},
            "documents": {"indexed": 5, "failed": 1},
            "sections": 40,
            "failed": [{"file_path": "/n/bad.md", "error": "binary file: contains NUL bytes"}],
            "warnings": [],
            "model": "m",
            "store": {"uri": "/s/milvus.db"},
        }

    def call(self, op: str, **params: Any) -> Any:
        return {
            "gaps": {
                "gaps": [
                    {
                        "query": "fishing <licence>",
                        "count": 2,
                        "status": "open",
                        "possibly_addressed_by": None,
                    }
                ]
            },
            "duplicates": {
                "groups": [{"notes": ["/n/a.md", "/n/b.md"], "best_score": 95}],
                "total_groups": 83,
            },
        }[op]


def fragment(route: FakeRoute, **query: str) -> str:
    page = Page(route, Config())  # type: ignore[arg-type]
    return page.templates.get_template("results.html").render(**page.answer(query))


def test_while_indexing_the_page_shows_progress_eta_and_the_results_so_far():
    html = fragment(
        FakeRoute(
            {
                "query": "q",
                "results": [HIT],
                "closest": [],
                "confidence": {"level": "medium"},
                "execution_time_ms": 12.0,
                "indexing": INDEXING,
            }
        ),
        q="lighthouse",
    )
    assert "indexing: 412 of 994 notes done, about 3 min left; results so far:" in html
    assert 'data-indexing="1"' in html  # the page's script asks again until indexing is done
    assert "<mark>&lt;lighthouse&gt;</mark>" in html and "A &lt;note&gt;" in html
    assert "0.810 · medium confidence" in html and "1 result, medium confidence, in 12 ms" in html


def test_a_snippets_links_show_as_their_words_and_a_mark_on_a_links_target_goes_with_it():
    text = "extend [[Reference/API/Modal|Modal]] and **call** [`open`](Modal/open)"
    marks = [
        [text.index("API/Modal") + 4, text.index("API/Modal") + 9],
        [text.index("Modal]]"), text.index("Modal]]") + 5],
    ]
    hit = {**HIT, "snippet": {**HIT["snippet"], "text": text, "highlights": marks}}
    answer = {"query": "q", "results": [hit], "closest": [], "confidence": {"level": "medium"}}
    html = fragment(FakeRoute({**answer, "execution_time_ms": 12.0}), q="modal")
    assert "extend <mark>Modal</mark> and call open" in html and "Reference/API" not in html


def test_with_nothing_found_while_indexing_the_page_says_why():
    message = "nothing found in the 412 of 994 notes indexed so far; the rest are still being indexed (about 3 min left)"
    html = fragment(
        FakeRoute(
            {
                "query": "q",
                "results": [],
                "closest": [],
                "confidence": {"level": "none"},
                "execution_time_ms": 5.0,
                "indexing": INDEXING,
                "message": message,
            }
        ),
        q="x",
    )
    assert f'<p class="nothing">{message}</p>' in html


def test_the_forms_filters_become_the_clis_search_parameters():
    params = search_params(
        {"q": " backup ", "mode": "keyword", "tags": "runbook, pg", "threshold": "0.5", "k": "3"}
    )
    assert params == {
        "query": "backup",
        "explain": True,
        "mode": "keyword",
        "tags": ["runbook", "pg"],
        "threshold": 0.5,
        "top_k": 3,
    }
    assert "mode" not in search_params({"q": "x", "mode": "<script>"})


def test_a_filter_that_is_not_a_number_is_a_400_naming_it_never_a_500():
    route = FakeRoute({"query": "x", "results": [], "execution_time_ms": 1.0, "message": "nothing"})
    page = Page(route, Config())  # type: ignore[arg-type]
    for field, text, named in (
        ("k", "10a", "top_k"),
        ("k", "3.5", "top_k"),
        ("k", "1e9", "top_k"),
        ("k", "-1", "top_k"),
        ("threshold", "0.5x", "threshold"),
        ("threshold", "nan", "threshold"),
        ("threshold", "-0.1", "threshold"),
    ):
        values = page.answer({"q": "x", field: text})
        assert values["status"] == 400 and named in values["error"], (field, text, values)
    assert not route.asked  # refused before the daemon is asked
    assert page.answer({"q": "x", "k": "5", "threshold": "0.5"})["status"] == 200


def test_a_refused_search_shows_the_reason_escaped():
    html = fragment(FakeRoute(error=QueryError("query is too long <b>")), q="x" * 10)
    assert '<p class="error">Error: query is too long &lt;b&gt;</p>' in html


def test_the_status_view_lists_failures_roots_away_or_without_notes_a_full_disk_progress_gaps_and_duplicates():
    page = Page(FakeRoute(), Config())  # type: ignore[arg-type]
    response = asyncio.run(page.status(None))  # type: ignore[arg-type]
    html = bytes(response.body).decode()
    assert "n/bad.md</span>: binary file: contains NUL bytes" in html
    assert "indexing 412/994 notes, 5210 of about 12400 passages embedded, ~3 min left" in html
    assert "fishing &lt;licence&gt;" in html and "95" in html and "6 (failed 1, indexed 5)" in html
    # Every group counted, though the page lists the closest few.
    assert (
        "Duplicate groups (83)" in html
        and "The 1 closest; <code>mdrag duplicates</code> lists them all" in html
    )
    # What the machine around the daemon is doing: a drive away, a full disk, watches run out.
    assert "unavailable: /usb/notes (missing); its 24 note(s) are kept until it returns" in html
    assert "no notes: /home/me/Downloads (no .md or .markdown file of it is indexed" in html
    assert "full: 12 MB free on /s" in html and "4 folder(s) past the inotify watch limit" in html
    assert "2 note(s) whose search rows were lost, until they can be read again" in html


def test_a_search_as_you_type_records_no_knowledge_gap_but_a_submitted_one_may():
    route = FakeRoute({"query": "how d", "results": [], "execution_time_ms": 3.0, "message": "nothing"})
    page = Page(route, Config())  # type: ignore[arg-type]
    page.answer({"q": "how d"}, typing=True)  # each keystroke's prefix, fetched by the script
    page.answer({"q": "how do I renew a fishing licence"})  # the form, submitted
    assert route.asked[0].record_gap is False
    assert route.asked[1].record_gap is True

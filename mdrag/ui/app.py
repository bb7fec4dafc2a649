"""App: the page's routes (search, results, preview, similar, related, status, open) over an index Route.

Every answer is HTML rendered here, escaped by Jinja's autoescape: the plain form works without
JavaScript, and the page's script only fetches the same results fragment as the user types.
Every operation is one the CLI has, asked of the daemon through the same Route; nothing here reads
a note the index does not hold. Links are relative, so that they carry the page's key (guard.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TypedDict, cast

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from mdrag.answers.notes import (
    DuplicateGroup,
    DuplicatesAnswer,
    Gap,
    GapsAnswer,
    NoteText,
    RelatedAnswer,
    SimilarAnswer,
)
from mdrag.answers.status import StatusAnswer, is_starting
from mdrag.client.route import Route as IndexRoute  # not starlette's Route
from mdrag.config import Config
from mdrag.errors import MdragError, NotFoundError, QueryError, ServerNotRunningError
from mdrag.notes.opener import editor_argv, run_editor, uris
from mdrag.params.scope import Scope
from mdrag.params.search import SEARCH_MODES, SearchParams, search_defaults
from mdrag.progress import progress_line, search_banner
from mdrag.retrieval.confidence import confidence_level, explain_lines, nothing_line, results_line
from mdrag.retrieval.excerpt import plain, without_comments
from mdrag.ui.guard import Guard
from mdrag.ui.render import marked_snippet, note_href, render_note

HERE = Path(__file__).resolve().parent
# The scope's fields on the form: (its input's name, label, placeholder, width), in order.
SCOPE_INPUTS = (("tags", "Tags", "runbook, postgres", 16), ("path", "Path", "notes/runbooks", 18))
DUPLICATE_GROUPS_SHOWN = 20


def search_params(query: dict[str, Any]) -> dict[str, Any]:
    """The CLI's search flags from the form's fields; empty ones are left to the config. A number
    that does not parse is passed on as its text, for SearchParams.parse to refuse by name. A
    path is left as typed, as the CLI's --path is: the page reads it with its route's paths."""
    params: dict[str, Any] = {"query": (query.get("q") or "").strip(), "explain": True}
    if query.get("mode") in SEARCH_MODES:
        params["mode"] = query["mode"]
    params.update(form_scope(query).to_request())
    for field, key, kind in (("threshold", "threshold", float), ("k", "top_k", int)):
        text = (query.get(field) or "").strip()
        if text:
            try:
                params[key] = kind(text)
            except ValueError:
                params[key] = text
    return params


def form_scope(query: dict[str, Any]) -> Scope:
    """The search's scope from the form (SCOPE_INPUTS): tags apart by commas or spaces, a path as
    typed."""
    tags = [t.strip() for t in (query.get("tags") or "").replace(",", " ").split() if t.strip()]
    path = (query.get("path") or "").strip()
    return Scope.parse({"tags": tags or None, "path_prefix": path or None})


def http_status(exc: MdragError) -> int:
    """A refused request is the asker's mistake (400) or names what the index lacks (404); any other
    failure is the daemon's (not running, busy, failing): the page itself is fine (503)."""
    if isinstance(exc, QueryError):
        return 400
    if isinstance(exc, NotFoundError):
        return 404
    return 503


class ScanFailed(TypedDict):
    """The status page's duplicates when the scan could not run: none, and why."""

    groups: list[DuplicateGroup]
    error: str


class StatusValues(TypedDict):
    """What the status page shows: the index, its open gaps and its duplicate groups."""

    report: StatusAnswer
    gaps: list[Gap]
    duplicates: DuplicatesAnswer | ScanFailed


class DaemonStarting(Exception):
    """The daemon is still starting: its status says what it loads, not yet what the index holds."""


class Page:
    """The page's views, holding the index route (its paths: how the page shows and reads a
    path) and the config (for the editor command)."""

    def __init__(self, route: IndexRoute, config: Config) -> None:
        self.route = route
        self.config = config
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self.templates.globals.update(
            shown=route.paths.shown,
            note_href=note_href,
            level=lambda score: confidence_level(score, 1),
            explain_lines=explain_lines,
            snippet_html=lambda hit: Markup(marked_snippet(*_snippet(hit))),
        )

    def render(self, name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.templates.get_template(name).render(**values), status_code=status_code)

    def answer(self, query: dict[str, Any], typing: bool = False) -> dict[str, Any]:
        """The values a results fragment shows: the hits, or why none, and indexing progress.
        `typing`: a search as the user types, whose unanswered prefixes are no knowledge gaps.
        `status`: the answer's HTTP status (400 for a filter that is not a number, say)."""
        if not (query.get("q") or "").strip():
            return {"response": None, "error": None, "status": 200}
        params = search_params(query)
        if typing:
            params["record_gap"] = False
        try:
            if params.get("path_prefix"):  # as typed on the form, read against the daemon's roots
                if not self.route.paths.known:  # a page started before its daemon: ask them first
                    self.route.call("ping")
                params["path_prefix"] = self.route.paths.typed(params["path_prefix"])
            response = self.route.search(SearchParams.parse(params, search_defaults(self.config)))
        except MdragError as exc:
            return {"response": None, "error": str(exc), "status": http_status(exc)}
        indexing = response.get("indexing")
        shown = self.route.paths.shown_folder  # a path filter, said as the page shows paths
        return {
            "response": response,
            "error": None,
            "status": 200,
            "summary": results_line(response) if response["results"] else nothing_line(response, shown),
            "banner": search_banner(indexing) if indexing and response["results"] else "",
            "indexing": bool(indexing),
        }

    async def home(self, request: Request) -> Response:
        query = dict(request.query_params)
        started = time.perf_counter()
        values = await _threaded(self.answer, query)
        if not values["response"] and not values["error"]:
            values["error"] = await _threaded(self._daemon_missing)  # said before anything is asked
        return self.render(
            "search.html",
            status_code=values["status"],
            form=query,
            modes=SEARCH_MODES,
            scope_inputs=SCOPE_INPUTS,
            scope_given=any(query.get(name) for name, *_ in SCOPE_INPUTS),
            served_ms=(time.perf_counter() - started) * 1000,
            **values,
        )

    async def results(self, request: Request) -> Response:
        values = await _threaded(self.answer, dict(request.query_params), True)
        return self.render("results.html", status_code=values["status"], **values)

    def _daemon_missing(self) -> str | None:
        """Why no search can be answered now (no daemon runs), or None."""
        try:
            self.route.call("ping")
        except ServerNotRunningError as exc:
            return str(exc)
        except MdragError:
            return None  # there, only busy or failing: a search says how
        return None

    async def note(self, request: Request) -> Response:
        path = request.query_params.get("path") or ""
        line = _int(request.query_params.get("line"))
        end = _int(request.query_params.get("end"))
        try:
            note: NoteText = await _threaded(self.route.call, "note", note=path)
        except MdragError as exc:
            return self.render("error.html", status_code=http_status(exc), message=str(exc))
        # Off the event loop: a long note takes a while to render, and other requests go on meanwhile.
        body, toc = await _threaded(render_note, note["text"], note["links"], line, end or line)
        return self.render(
            "note.html",
            note=note,
            body=Markup(body),
            toc=toc,
            line=line or 1,
            links=uris(note["path"]),
            opened=request.query_params.get("opened"),
        )

    async def similar(self, request: Request) -> Response:
        return await self._about_note(request, "similar")

    async def related(self, request: Request) -> Response:
        return await self._about_note(request, "related")

    async def _about_note(self, request: Request, op: str) -> Response:
        """A note's similar or related notes (the operation of that name), or why not."""
        path = request.query_params.get("note") or ""
        try:
            result: SimilarAnswer | RelatedAnswer = await _threaded(self.route.call, op, note=path, k=10)
        except MdragError as exc:
            return self.render("error.html", status_code=http_status(exc), message=str(exc))
        return self.render(f"{op}.html", result=result)

    async def status(self, request: Request) -> Response:
        def gather() -> StatusValues:
            report = self.route.status()
            if is_starting(report):  # the gaps and duplicates would wait for the start: say so now
                raise DaemonStarting(report["daemon"]["loading"])
            open_gaps: GapsAnswer = self.route.call("gaps", status="open")
            duplicates: DuplicatesAnswer | ScanFailed
            try:
                duplicates = self.route.call("duplicates", min_score=90, limit=DUPLICATE_GROUPS_SHOWN)
            except MdragError as exc:  # the index may be unavailable for a scan; the rest still shows
                duplicates = {"groups": [], "error": str(exc)}
            # Not starting: the whole answer (is_starting narrows only the other way).
            return {"report": cast(StatusAnswer, report), "gaps": open_gaps["gaps"], "duplicates": duplicates}

        try:
            values: StatusValues = await _threaded(gather)
        except DaemonStarting as exc:
            message = f"The daemon is starting ({exc}); this page shows the index once it is open."
            return self.render("error.html", status_code=503, message=message)
        except MdragError as exc:
            return self.render("error.html", status_code=503, message=str(exc))
        daemon = values["report"].get("daemon")
        progress = daemon.get("indexing") if daemon else None
        return self.render("status.html", progress=progress_line(progress) if progress else "", **values)

    async def open(self, request: Request) -> Response:
        """Open an indexed note in the configured editor: one argv, the path one argument of it."""
        form = await request.form()
        path = str(form.get("path") or "")
        line = _int(str(form.get("line") or "")) or 1
        try:
            note = await _threaded(self.route.call, "note", note=path)  # only an indexed note
            argv = editor_argv(note["path"], line, self.config.open_command, terminal=False)
            run_editor(argv, wait=False)
        except MdragError as exc:
            return self.render(
                "error.html", status_code=http_status(exc), message=f"cannot open {path}: {exc}"
            )
        except OSError as exc:  # the editor command could not start
            return self.render("error.html", status_code=404, message=f"cannot open {path}: {exc}")
        back = note_href(note["path"], line).replace("#match", "") + "&opened=1#match"
        return RedirectResponse(back, status_code=303)


def _snippet(hit: dict[str, Any]) -> tuple[str, list[tuple[int, int]]]:
    """The hit's snippet as a reader sees it rendered: no comments, links as their shown words."""
    part = hit.get("snippet") or {"text": hit.get("section_text", ""), "highlights": []}
    text, spans = plain(*without_comments(part["text"], [(a, b) for a, b in part["highlights"]]))
    return text, [(a, b) for a, b in spans if a < b]  # a mark on a link's target goes with it


def _int(text: str | None) -> int | None:
    try:
        return max(1, int(text)) if text else None
    except ValueError:
        return None


async def _threaded(function: Any, *args: Any, **kwargs: Any) -> Any:
    """A blocking call on the index route off the event loop (a socket round trip, or a search run here)."""
    return await run_in_threadpool(function, *args, **kwargs)


def build_app(route: IndexRoute, config: Config, key: str, port: int) -> Guard:
    """The page behind its guard, under this run's key."""
    page = Page(route, config)
    app = Starlette(
        routes=[
            Route("/", page.home),
            Route("/results", page.results),
            Route("/note", page.note),
            Route("/similar", page.similar),
            Route("/related", page.related),
            Route("/status", page.status),
            Route("/open", page.open, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
    )
    return Guard(app, key, port)

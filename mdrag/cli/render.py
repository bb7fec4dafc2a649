"""Render: an answer (hits, status, a reindex report, an editor's command) as the lines the terminal shows.

Every line goes out through output.say (each part's text cleaned); paths are shown as the route
that answered reads them (client.paths.Paths), from their root's name.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING, cast

from mdrag.cli.output import Link, Styled, say
from mdrag.progress import progress_line, search_banner
from mdrag.retrieval.confidence import EVIDENCE_WORDS, explain_lines, nothing_line, related_line, results_line
from mdrag.retrieval.excerpt import excerpt, marked
from mdrag.termtext import visible

if TYPE_CHECKING:
    # the wire's shapes, for the type checker: building ~40 TypedDicts costs each search process ~3 ms
    from mdrag.answers.search import ClosestNote, Hit, SearchAnswer
    from mdrag.answers.status import DaemonStatus, ReindexReport, StartingAnswer, StatusAnswer
    from mdrag.client.paths import Paths


def reindex_report(report: ReindexReport, paths: Paths) -> None:
    """A run's counts on one line, then each file that failed and why."""
    from mdrag.answers.status import report_line  # here, as for `status`: a search never needs it

    say(report_line(report))
    for failure in report["failed"]:
        say(f"  failed {paths.shown(failure['file_path'])}: {failure['error']}")
    for root in report.get("roots_without_notes") or []:
        say(no_notes_line(root, "  "))


def no_notes_line(root: str, indent: str) -> Styled:
    """A root from which the index holds no note: most often a mistyped path."""
    return Styled(
        f"{indent}NO NOTES: {root} (no .md or .markdown file of it is indexed; is it the folder you meant?)",
        fg="yellow",
    )


def search_answer(response: SearchAnswer, paths: Paths) -> None:
    """The hits (below a banner while the daemon indexes); with nothing to give, the reason and
    the notes nearest go to stderr, so stdout stays empty."""
    if not response["results"]:
        with contextlib.redirect_stdout(sys.stderr):
            hits(response, paths)
        return
    indexing = response.get("indexing")
    if indexing:  # beside the hits; with nothing to give, the reason says how far indexing is
        say(Styled(search_banner(indexing), fg="yellow"))
    hits(response, paths)


def hits(response: SearchAnswer, paths: Paths) -> None:
    """The answer's hits and the line that sums them up, or why there is none and what came close."""
    results = response["results"]
    if not results:
        say(nothing_line(response, paths.shown_folder))
        _outside_roots(response.get("search_parameters", {}).get("path_prefix"), paths)
        related = response.get("related") or []
        for hit in related:  # close under the bar: hits to look at, not an answer
            _hit(hit, "yellow", paths)
        if related:
            say(f"({related_line(response)})")
        else:
            _closest(response.get("closest") or [], paths)
        _dropped(response, paths)
        return
    for hit in results:
        _hit(hit, "green", paths)
    say(f"({results_line(response)})")
    _dropped(response, paths)


def _outside_roots(folder: str | None, paths: Paths) -> None:
    """A --path under no root (`runbooks` for `notes/runbooks`): which names a path starts with."""
    if folder and paths.known and not paths.holds(folder):
        roots = ", ".join(sorted(paths.shown_folder(root) for root in paths.roots))
        say(f"({paths.shown_folder(folder)} is under no root: a --path starts with a root's name: {roots})")


def _hit(hit: Hit, colour: str, paths: Paths) -> None:
    heading = hit["heading_path"] or hit["metadata"].get("title", "")
    # Editors open `path:line`; a terminal that draws OSC 8 links opens the note on a click.
    say(
        Styled(f"{hit['confidence_score']:.3f}", fg=colour),
        "  ",
        Link(f"{paths.shown(hit['file_path'])}:{hit['start_line']}-{hit['end_line']}", hit["file_path"]),
        Styled(f"  {heading}" if heading else "", fg="cyan"),
        Styled("  (found by its words; not indexed for meaning yet)" if _waiting(hit) else "", dim=True),
    )
    explain = hit.get("explain")
    for line in explain_lines(explain) if explain else []:
        say("       " + line)
    say("       ", *snippet_parts(hit))


def _waiting(hit: Hit) -> bool:
    return bool(hit["metadata"].get("waiting"))  # absent from an older daemon's hits


def snippet_parts(hit: Hit) -> list[str | Styled]:
    """The window that matched, on one line around the query's words, marked bold on a terminal."""
    shown_part = hit.get("snippet")
    if shown_part is None:  # a daemon from before snippets: the section, under its heading line
        text = hit["section_text"]
        shown_part = {"text": text.partition("\n")[2] if text.startswith("#") else text, "highlights": []}
    text, spans = excerpt(shown_part["text"], [(a, b) for a, b in shown_part["highlights"]])
    return marked(text, spans, lambda word: Styled(word, bold=True, fg="yellow"))


def _closest(closest: list[ClosestNote], paths: Paths) -> None:
    """Never a bare "nothing": the nearest notes, so a user sees what the index does hold."""
    for note in closest:
        heading = f"  {note['heading_path']}" if note["heading_path"] else ""
        say(
            Styled(f"{note['score']:.3f}", fg="yellow"),
            "  ",
            Link(paths.shown(note["path"]), note["path"]),
            Styled(heading, fg="cyan"),
        )


def _dropped(response: SearchAnswer, paths: Paths) -> None:
    explain = response.get("explain")
    if not explain:
        return
    dropped = explain["dropped_by_threshold"]
    say(f"below the threshold {explain['threshold']}: {len(dropped)} candidates")
    for c in dropped[:10]:
        lines = f":{c['start_line']}-{c['end_line']}" if c.get("start_line") else ""
        heading = f"  {c['heading_path']}" if c.get("heading_path") else ""
        say(
            f"  {c['score']:.3f} (similarity {c['similarity']})  {paths.shown(c['file_path'])}{lines}"
            f"{heading}  (score rank {c['score_rank']})"
        )
    say("evidence, in words:")
    for words in EVIDENCE_WORDS:
        say(f"  {words}")


def editor_command(argv: list[str]) -> None:
    """The editor's command, one word a line (`open --print`), each word's controls as `?`."""
    say("\n".join(visible(word, keep="") for word in argv))


def status(report: StatusAnswer | StartingAnswer, paths: Paths) -> None:
    """What the index holds, or, while the daemon starts, what it is loading."""
    from mdrag.answers.status import is_starting  # here: only `status` needs the answers module

    if is_starting(report):
        starting = report["daemon"]
        say(f"daemon:    starting (pid {starting['pid']}, up {_duration(starting['uptime_s'])})")
        say(f"state:     {starting['loading']}; what the index holds is shown once it is open")
        return
    index_status(cast("StatusAnswer", report), paths)  # not starting: the whole answer


def index_status(report: StatusAnswer, paths: Paths) -> None:
    """The daemon's state, the roots (and those away), counts, the store, failures and warnings."""
    daemon = report.get("daemon")
    if daemon:
        say(f"daemon:    running (pid {daemon['pid']}, up {_duration(daemon['uptime_s'])})")
        say(f"state:     {_state(daemon)}")
        say(f"queue:     {daemon['queue_depth']} pending")
        indexing = daemon.get("indexing")
        if indexing:
            say(f"progress:  {progress_line(indexing)}")
    else:
        say("daemon:    not running (read the index directly)")
    say(f"roots:     {', '.join(report['roots']) or '(none configured)'}")
    for away in report.get("unavailable_roots") or []:
        say(
            Styled(
                f"           UNAVAILABLE: {away['root']} ({away['reason']}); "
                f"its {away['notes_kept']} note(s) are kept until it returns",
                fg="yellow",
            )
        )
    for root in report.get("roots_without_notes") or []:
        say(no_notes_line(root, "           "))
    unshown = report.get("unshown")
    if unshown:
        say(
            Styled(
                f"           NOT SHOWN: {unshown['notes']} note(s) whose search rows were lost, until "
                f"they can be read again (e.g. {paths.shown(unshown['example'])})",
                fg="yellow",
            )
        )
    docs = report["documents"]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(docs.items()))
    say(f"documents: {sum(docs.values())}" + (f" ({counts})" if counts else ""))
    say(f"sections:  {report['sections']}")
    if report.get("open_gaps"):
        say(f"gaps:      {report['open_gaps']} open (`mdrag gaps` lists them)")
    last = report.get("last_indexed_at")
    say(f"last indexed: {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(last)) if last else 'never'}")
    say(f"model:     {report['model']}")
    store = report["store"]
    shards = store.get("shards", 1)
    say(f"store:     {store['uri']}" + (f" ({shards} shards)" if shards > 1 else ""))
    if daemon and not daemon.get("store_available", True):
        say(Styled(f"           UNAVAILABLE: {daemon['store_error']} (changes are queued)", fg="red"))
    if daemon and daemon.get("index_full"):
        say(Styled(f"           FULL: {daemon['index_full']}", fg="red"))
    if report["failed"]:
        say(f"failed files ({len(report['failed'])}):")
        for failure in report["failed"]:
            say(f"  {paths.shown(failure['file_path'])}: {failure['error']}")
    if report.get("warnings"):
        say(f"warnings ({len(report['warnings'])}):")
        for warning in report["warnings"]:
            say(f"  {paths.shown(warning['file_path'])}: {warning['warning']}")


def _state(daemon: DaemonStatus) -> str:
    """`reconciling` from the first answer until the start-up reconcile is done (a script waiting
    for `watching` then finds every note), with the indexing progress when there is one."""
    state = str(daemon.get("state", "unknown"))
    progress = daemon.get("progress")
    if isinstance(progress, dict) and progress.get("total"):
        state += f", {progress.get('done', 0)} of {progress['total']} done"
        if progress.get("eta_s") is not None:
            state += f", about {_duration(progress['eta_s'])} left"
    return state


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"

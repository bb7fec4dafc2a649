"""Status answers: indexing progress, the index's and the daemon's state, a reindex's report, a ping."""

from __future__ import annotations

from typing import TypedDict, TypeGuard


class ProgressSnapshot(TypedDict):
    """How far an indexing run is (mdrag.progress.Progress.to_dict)."""

    state: str  # "scanning", "indexing" or "done"
    notes_done: int
    notes_total: int
    done: int
    total: int
    unit: str
    rate: float | None
    eta_s: float | None
    started_at: float
    keyword_notes: int  # notes keyword search finds: those done, and those read ahead of the model
    notes_held: int  # the run's notes the index held when it began (they answer meanwhile)
    kept: int  # of `done`, texts whose vectors were found (the index, a copy, an older layout's)


class FailedNote(TypedDict):
    file_path: str
    error: str


class WarnedNote(TypedDict):
    file_path: str
    warning: str


class UnavailableRoot(TypedDict):
    root: str
    reason: str
    since: float | None
    notes_kept: int


class StoreStatus(TypedDict):
    uri: str
    shards: int


class UnshownNotes(TypedDict):
    """Notes whose rows the keyword index lost and that could not be read again yet (their root
    away): left out of every search until a run reads them."""

    notes: int
    example: str


class IndexStatus(TypedDict):
    """What the index holds (Service.status), whoever opened it."""

    version: str
    documents: dict[str, int]  # status ("indexed", "failed") -> notes
    sections: int
    failed: list[FailedNote]
    warnings: list[WarnedNote]
    last_indexed_at: float | None
    model: str
    store: StoreStatus
    roots: list[str]
    unavailable_roots: list[UnavailableRoot]
    roots_without_notes: list[str]  # available roots the index holds no note of
    unshown: UnshownNotes | None
    open_gaps: int | None


class Reopen(TypedDict):
    """One reopen of a Milvus Lite index: when it ended, why, how long it took, and how long
    it held requests back (new servers load beside the running ones, which answer meanwhile)."""

    at: float
    rows_written: int
    seconds: float
    requests_held_s: float


class DaemonStatus(TypedDict):
    """The daemon's own state: its store, its writer, its queue."""

    store_available: bool
    store_error: str | None
    index_full: str | None  # no room to write: changes wait, searches go on
    pid: int
    uptime_s: float
    state: str
    socket: str
    index_reopens: list[Reopen]
    unwatched_folders: int
    indexing: ProgressSnapshot | None
    queue_depth: int
    last_change_applied_at: float | None


class StatusAnswer(IndexStatus):
    """`status`: the index, and the daemon's state (None when the command opened the index itself)."""

    daemon: DaemonStatus | None


class StartingDaemon(TypedDict):
    """The daemon while it starts: what it is doing, before it can say what the index holds."""

    state: str  # "loading"
    loading: str  # what: "opening the index", "loading the model and the vectors of N sections", ...
    pid: int
    uptime_s: float
    socket: str


class StartingAnswer(TypedDict):
    """`status` while the daemon starts: answered at once, whatever the index's size."""

    daemon: StartingDaemon
    starting: bool  # always True: what tells this answer from a StatusAnswer


def is_starting(answer: StatusAnswer | StartingAnswer) -> TypeGuard[StartingAnswer]:
    """A status asked while the daemon starts (it says what loads, not what the index holds)."""
    return answer.get("starting") is True


class ReindexReport(TypedDict):
    """What one indexing run did (index.indexer.IndexReport.to_dict); `reindex --json` prints it."""

    added: int
    updated: int
    unchanged: int
    deleted: int
    failed: list[dict[str, str]]
    sections_embedded: int
    sections_reused: int
    descriptions_embedded: int  # notes' frontmatter descriptions embedded (a daemon before 12: none)
    seconds: float
    upgrade: str  # an upgrade's run: "done", "under way" (a part of it), or "" (none)
    roots_without_notes: list[str]  # the run's roots from which the index holds no note after it


def report_line(report: ReindexReport) -> str:
    """A run's counts on one line: "added 2, updated 1, unchanged 40, deleted 0, failed 0; 9
    sections embedded in 1.2s". An upgrade's notes were in the index before it: they are said to
    be read again (with those a stopped run of it had read already), with the sections it kept,
    not as notes added; whether it is done, or only a part of it."""
    upgrade = report.get("upgrade")
    embedded, described = report["sections_embedded"], report.get("descriptions_embedded", 0)
    sections = f"{embedded} section{'' if embedded == 1 else 's'}"
    if described:  # the model's other work: an upgrade to layout 12 embeds these alone
        sections += f" and {described} description{'' if described == 1 else 's'}"
    sections += " embedded"
    if not upgrade:
        return (
            f"added {report['added']}, updated {report['updated']}, unchanged {report['unchanged']}, "
            f"deleted {report['deleted']}, failed {len(report['failed'])}; "
            f"{sections} in {report['seconds']:.1f}s"
        )
    read = report["added"] + report["updated"] + report["unchanged"]
    state = "rebuilt" if upgrade == "done" else "being rebuilt"
    return (
        f"index {state} for this version of mdrag: {read} note{'' if read == 1 else 's'} read again"
        f"{' so far' if upgrade != 'done' else ''}, deleted {report['deleted']}, failed "
        f"{len(report['failed'])}; {sections}, "
        f"{report['sections_reused']} kept, in {report['seconds']:.1f}s"
    )


class Pong(TypedDict):
    pong: bool
    pid: int
    state: str
    roots: list[str]

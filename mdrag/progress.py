"""Progress: how far an indexing run is (notes and texts embedded of those known), its rate and ETA."""

from __future__ import annotations

import math
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from mdrag.answers.status import ProgressSnapshot


# The rate is measured over this many recent seconds of embedding, so a run whose texts grow
# longer (the model sorts nothing across batches) or a machine that gets busy moves the ETA.
RATE_WINDOW_S = 60.0
READ_SAMPLE_S = 0.1  # the reader's pace is sampled at most this often (it may read 10k notes a second)
# No time left is promised before the model has embedded for this long: its first batches say
# little of its pace (a first index said "~14 min left" of a run that took 51 s).
RATE_MIN_S = 3.0


@dataclass(frozen=True)
class Progress:
    """One look at a run: what the daemon's status, a search's `indexing` and the bar show.

    `done`/`total` count texts (section windows, what the model embeds: the work that takes the
    time); `total` counts the notes read, by the model's reader or ahead of it by the keywords pass,
    and estimates the notes not read yet from them.
    """

    state: str  # "scanning" (listing the files), "indexing", or "done"
    notes_done: int  # notes whose current version is searchable (indexed, failed or unchanged)
    notes_total: int
    done: int  # texts embedded or found already embedded
    total: int  # texts known, plus an estimate for the notes not read yet
    unit: str  # "texts"
    rate: float | None  # texts per second, over the last minute of embedding
    # seconds left: at that rate, or at the reader's pace while it checks more notes than are
    # left to embed (a restart's check of notes that mostly did not change); None without a rate
    eta_s: float | None
    started_at: float  # wall-clock time the run began
    # notes keyword search finds: those done, and those read ahead of the model (index/prepass.py)
    keyword_notes: int = 0
    # the run's notes the index held when it began: their last version answers meanwhile
    notes_held: int = 0
    # of `done`, the texts whose vectors were found, not embedded: from the index, a copied note,
    # or an older layout's (an upgrade embeds only what it sections otherwise)
    kept: int = 0

    @property
    def pending(self) -> bool:
        return self.state != "done"

    def to_dict(self) -> ProgressSnapshot:
        data = cast("ProgressSnapshot", asdict(self))
        data["rate"] = None if self.rate is None else round(self.rate, 1)
        data["eta_s"] = None if self.eta_s is None else round(self.eta_s)
        return data


OnProgress = Callable[["ProgressSnapshot"], None]  # told of Progress.to_dict(), as a client is
LISTENER_INTERVAL_S = 0.2  # a listener (a terminal's bar) is told at most this often


class ProgressMeter:
    """Counts one run's work as the reader, the model and the writer report it; thread-safe.

    The reader thread reports each note read (its texts), the keywords pass each note it read
    ahead of the reader, the writer each model batch embedded and each batch of notes written;
    anyone may take a `snapshot()` at any time.
    """

    def __init__(
        self, listener: OnProgress | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._listener = listener
        self._told_at = float("-inf")
        self._lock = threading.Lock()
        self.started_at = time.time()
        self._state = "scanning"
        self._notes_total = 0
        self._notes_held = 0
        self._notes_read = 0  # read and sectioned, or found unchanged
        self._notes_unchanged = 0
        self._notes_written = 0
        self._texts_known = 0
        self._texts_done = 0
        self._texts_kept = 0
        self._samples: list[tuple[float, int]] = []  # (time, texts done) at each model batch
        self._read_samples: deque[tuple[float, int]] = deque()  # (time, notes read), READ_SAMPLE_S apart
        self._keywords_ahead = -1  # notes searchable by their words ahead of the model; -1: no pass
        # Texts of the notes the keywords pass sectioned before the reader reached them, by their
        # position in the run (-1: not counted), so the total need not guess them: the notes read
        # first (the newest) are no sample of the rest, and a guess from them was off sixfold.
        self._sized = array("i")
        self._sized_notes = 0
        self._sized_texts = 0

    def ahead(self, notes: int) -> None:
        """`notes` more notes are searchable by their words before the model reaches them (the
        first call gives the run's notes keyword search already found: those indexed before)."""
        with self._lock:
            self._keywords_ahead = max(self._keywords_ahead, 0) + notes
        self._tell()

    def ahead_lost(self) -> None:
        """The notes read ahead can no longer be found by their words (the pending index was
        given up): only what the model has written counts from here."""
        with self._lock:
            self._keywords_ahead = -1
        self._tell()

    def sized(self, position: int, texts: int) -> None:
        """The keywords pass sectioned the run's note at `position` into `texts` texts (ignored
        once the reader has read that note: it counted it itself)."""
        with self._lock:
            if position < self._notes_read or position >= self._notes_total:
                return
            if not self._sized:
                self._sized = array("i", [-1]) * self._notes_total  # 4 bytes a note
            if self._sized[position] < 0:
                self._sized[position] = texts
                self._sized_notes += 1
                self._sized_texts += texts

    def begin(self, notes_total: int, held: int = 0) -> None:
        """The files are listed: `notes_total` notes to look at, `held` of them in the index already."""
        with self._lock:
            self._state = "indexing"
            self._notes_total = notes_total
            self._notes_held = min(held, notes_total)
            # The rate runs from the first batch's end, not from here: that batch bears the model's
            # start-up (loaded on first use), which put "~32 min left" on a run of 2 minutes.
            self._samples = []
            self._read_samples = deque([(self._clock(), self._notes_read)])
        self._tell()

    def read(self, texts: int) -> None:
        """A note was read and sectioned into `texts` texts to embed."""
        with self._lock:
            self._reach_next()
            self._texts_known += texts

    def unchanged(self) -> None:
        """A note was found as it is in the index: nothing to embed."""
        with self._lock:
            self._reach_next()
            self._notes_unchanged += 1

    def _reach_next(self) -> None:
        """The reader reached its next note (it reads them in the run's order): its count is the
        reader's now, not the pass's."""
        position = self._notes_read
        self._notes_read += 1
        now = self._clock()
        if not self._read_samples or now - self._read_samples[-1][0] >= READ_SAMPLE_S:
            self._read_samples.append((now, self._notes_read))
            while len(self._read_samples) > 2 and now - self._read_samples[1][0] > RATE_WINDOW_S:
                self._read_samples.popleft()
        if position < len(self._sized) and self._sized[position] >= 0:
            self._sized_notes -= 1
            self._sized_texts -= self._sized[position]
            self._sized[position] = -1

    def texts_done(self, count: int, kept: bool = False) -> None:
        """`count` texts were embedded, or `kept`: their vectors were found, not embedded (they
        count as done, at the same pace)."""
        with self._lock:  # one count under one lock: a snapshot never sees more kept than done
            self._texts_done += count
            self._texts_kept += count if kept else 0
            now = self._clock()
            if not self._samples:  # till the model's first batch the reader waits on it: no pace
                self._read_samples = deque([(now, self._notes_read)])
            self._samples.append((now, self._texts_done))
            while len(self._samples) > 2 and now - self._samples[1][0] > RATE_WINDOW_S:
                self._samples.pop(0)
        self._tell()

    def written(self, notes: int) -> None:
        """`notes` notes were written: search sees them now."""
        with self._lock:
            self._notes_written += notes
        self._tell()

    def finish(self) -> None:
        with self._lock:
            self._state = "done"
        self._tell(force=True)

    def _tell(self, force: bool = False) -> None:
        if self._listener is None:
            return
        now = self._clock()
        if force or now - self._told_at >= LISTENER_INTERVAL_S:
            self._told_at = now
            self._listener(self.snapshot().to_dict())

    def snapshot(self) -> Progress:
        with self._lock:
            notes_done = min(self._notes_written + self._notes_unchanged, self._notes_total)
            if self._state == "done":
                notes_done = self._notes_total
            known = self._texts_known + self._sized_texts
            total = max(known, self._texts_done)
            unread = self._notes_total - self._notes_read - self._sized_notes
            changed_read = self._notes_read - self._notes_unchanged + self._sized_notes
            if unread > 0 and changed_read > 0:
                # The notes nobody has read yet are assumed to be like those read so far.
                total += math.ceil(unread * known / changed_read)
            measured = len(self._samples) > 1 and self._samples[-1][0] - self._samples[0][0] >= RATE_MIN_S
            rate = _rate(self._samples) if measured else None
            left = max(total - self._texts_done, 0)
            eta = self._eta(left, rate)
            if self._state == "done":
                eta = 0.0
            keyword_notes = max(notes_done, min(self._keywords_ahead, self._notes_total))
            return Progress(
                state=self._state,
                notes_done=notes_done,
                notes_total=self._notes_total,
                done=self._texts_done,
                total=total,
                unit="texts",
                rate=rate,
                eta_s=eta,
                started_at=self.started_at,
                keyword_notes=keyword_notes,
                notes_held=self._notes_held,
                kept=self._texts_kept,
            )

    def _eta(self, texts_left: int, rate: float | None) -> float | None:
        """The longer of the model's time for the texts left and the reader's for the notes it
        has not read; the reader's alone when it has found nothing to embed (a restart's check),
        and none while there is text to embed but no rate of embedding yet (the reader races
        ahead while the model loads, so its pace then says nothing of the run's)."""
        unread = self._notes_total - self._notes_read
        # The pace runs to now: a reader stuck on one note slows it, and its time left grows.
        now = (self._clock(), self._notes_read)
        pace = _rate([self._read_samples[0], now]) if self._read_samples else None
        reading = 0.0 if unread <= 0 else None if pace is None else unread / pace
        if texts_left == 0:
            return reading
        if rate is None:
            return None
        return max(texts_left / rate, reading or 0.0)


def _rate(samples: Sequence[tuple[float, int]]) -> float | None:
    """Units a second between the first and last of (time, count) samples; None without a rise."""
    if len(samples) < 2:
        return None
    (t0, n0), (t1, n1) = samples[0], samples[-1]
    if t1 - t0 <= 0 or n1 <= n0:
        return None
    return (n1 - n0) / (t1 - t0)


def eta_text(seconds: float | None) -> str:
    """'about 3 min left', 'about 40 s left', or 'estimating the time left' without a rate yet."""
    if seconds is None:
        return "estimating the time left"
    if seconds < 60:
        return f"about {max(5, 5 * math.ceil(seconds / 5))} s left"
    if seconds < 3600:
        return f"about {math.ceil(seconds / 60)} min left"
    hours, rest = divmod(math.ceil(seconds / 60), 60)
    return f"about {hours} h {rest:02d} min left"


def short_eta(seconds: float | None) -> str:
    """'~3 min left' for status and log lines."""
    text = eta_text(seconds)
    return text.replace("about ", "~") if seconds is not None else "ETA unknown yet"


def progress_line(progress: ProgressSnapshot | Progress) -> str:
    """One line for status, the daemon's log and systemd: 'indexing 412/994 notes, 5210 of about
    12400 passages embedded, ~3 min left' (or 'listing the notes' before the files are counted).
    A passage is what the model embeds (a section, or a window of a long one); their total is
    estimated from the notes read so far until every note is read, so it is "about". Where some
    were found rather than embedded (an upgrade keeps most), the line says how many of each:
    '453 of about 3211 passages ready (411 kept, 42 embedded)'."""
    p = progress if isinstance(progress, dict) else progress.to_dict()
    if p["state"] == "scanning":
        return "indexing: listing the notes"
    about = "" if p["state"] == "done" else "about "
    kept = p.get("kept", 0)
    done = f"ready ({kept} kept, {p['done'] - kept} embedded)" if kept else "embedded"
    return (
        f"indexing {p['notes_done']}/{p['notes_total']} notes{_by_words(p)}, "
        f"{p['done']} of {about}{p['total']} passages {done}, {short_eta(p['eta_s'])}"
    )


def _by_words(p: ProgressSnapshot) -> str:
    """' (all 994 searchable by their words)' while keyword search is ahead of the model."""
    ahead = p.get("keyword_notes", 0)
    if ahead <= p["notes_done"]:
        return ""
    return f" ({'all ' if ahead == p['notes_total'] else ''}{ahead} searchable by their words)"


def _all_held(p: ProgressSnapshot) -> bool:
    """Whether every note of the run was in the index when it began (a restart's check for what
    changed while mdrag was stopped, a --force): each answers meanwhile, in its last version."""
    return p["notes_total"] > 0 and p.get("notes_held", 0) >= p["notes_total"]


def search_banner(progress: ProgressSnapshot) -> str:
    """What a search says while the index is being built: 'indexing: 412 of 994 notes done,
    about 3 min left; results so far:'."""
    if progress["state"] == "scanning":
        return "indexing: listing the notes; results so far:"
    if _all_held(progress):
        return (
            f"updating the index: {progress['notes_done']} of {progress['notes_total']} notes done, "
            f"{eta_text(progress['eta_s'])}; every note answers meanwhile, as last indexed:"
        )
    return (
        f"indexing: {progress['notes_done']} of {progress['notes_total']} notes done"
        f"{_by_words(progress)}, {eta_text(progress['eta_s'])}; results so far:"
    )


def early_message(progress: ProgressSnapshot, by_words: bool = True, closest: bool = False) -> str:
    """Why a search during an index answered nothing: the notes may not be indexed yet (and, for
    a search that reads words, which notes it searched by their words ahead of the model).
    `closest`: it shows the closest notes all the same, so it found something, just nothing
    confident ("no confident answer in the 412 of 994 notes indexed so far ...")."""
    lead = "no confident answer" if closest else "nothing found"
    if progress["state"] == "scanning":
        return f"{lead} yet: the notes are still being listed for indexing"
    if _all_held(progress):
        return (
            f"{lead} in the {progress['notes_total']} notes indexed; the index is being updated "
            f"({progress['notes_done']} done, {eta_text(progress['eta_s'])})"
        )
    return (
        f"{lead} in the {progress['notes_done']} of {progress['notes_total']} notes "
        f"indexed so far{_by_words(progress) if by_words else ''}; "
        f"the rest are still being indexed ({eta_text(progress['eta_s'])})"
    )

"""Search params: a search request's fields, validated once into SearchParams, and their defaults."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast, get_args

from mdrag.errors import QueryError
from mdrag.params.fields import MAX_QUERY_CHARS, Field, check_text
from mdrag.params.scope import Scope
from mdrag.text.canonical import canonical

if TYPE_CHECKING:
    from mdrag.config import Config

SELECTION_CHARS = (10, 5000)  # a passage used as the query: a sentence to a few paragraphs
MAX_WAIT_FRESH_S = 300.0
SearchMode = Literal["hybrid", "dense", "keyword"]  # the one list: click, the page and MCP read it
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)

SEARCH_FIELDS: dict[str, Field] = {
    "query": Field("string"),  # its length after trimming: SearchParams.parse
    "selection": Field("string"),
    "top_k": Field("whole", 1, 100),
    "threshold": Field("number", 0, 1),
    "mode": Field("choice", choices=SEARCH_MODES),
    **Scope.FIELDS,
    "explain": Field("flag"),
    "record_gap": Field("flag"),
    "wait_fresh": Field("number", 0, MAX_WAIT_FRESH_S),
}


class SearchRequest(TypedDict, total=False):
    """A search request's fields as they cross the socket (what `SearchParams.parse` reads)."""

    query: str
    selection: str
    top_k: int
    threshold: float
    mode: str
    tags: list[str]
    path_prefix: str
    explain: bool
    record_gap: bool
    wait_fresh: float


@dataclass(frozen=True)
class SearchParams:
    """A validated search request; the CLI, the socket and the library all build one."""

    query: str
    top_k: int = 10
    threshold: float = 0.7
    mode: SearchMode = "hybrid"
    scope: Scope = field(default_factory=Scope)
    explain: bool = False
    passage: bool = False  # the query is a selected passage (10-5000 characters), not a question
    record_gap: bool = True  # False: not a question yet (the page's as-you-type), never a gap
    # The fields the request named; the others came from the defaults it was parsed with, and a
    # request sent on (to the daemon) leaves them to the daemon's own defaults.
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def parse(cls, raw: dict[str, Any], defaults: SearchParams | None = None) -> SearchParams:
        """Validate a request's fields, filling what it leaves out from `defaults`."""
        base = defaults or cls(query="-")
        for name, spec in SEARCH_FIELDS.items():  # each field by its kind, as the socket does
            if raw.get(name) is not None and name not in ("query", "selection", *Scope.FIELDS):
                spec.check(name, raw[name])
        scope = Scope.parse(raw)
        selection = raw.get("selection")
        if selection is not None:
            low, high = SELECTION_CHARS
            if not isinstance(selection, str) or not low <= len(selection.strip()) <= high:
                raise QueryError(f"a selection must be {low}-{high} characters after trimming spaces")
            raw = {**raw, "query": selection}
        query = raw.get("query")
        if selection is None and (
            not isinstance(query, str) or not 1 <= len(query.strip()) <= MAX_QUERY_CHARS
        ):
            raise QueryError(f"query must be 1-{MAX_QUERY_CHARS} characters after trimming spaces")
        assert isinstance(query, str)
        check_text(query, "query")
        top_k = raw.get("top_k")
        top_k = base.top_k if top_k is None else top_k
        threshold = raw.get("threshold")
        threshold = base.threshold if threshold is None else threshold
        mode = raw.get("mode") or base.mode
        if mode not in SEARCH_MODES:
            raise QueryError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        explain = raw.get("explain") is True
        return cls(
            canonical(query.strip()),  # matched as the notes' words are (their text is composed)
            top_k,
            float(threshold),
            cast(SearchMode, mode),
            scope,
            explain,
            passage=selection is not None,
            record_gap=raw.get("record_gap") is not False,
            given=base.given | frozenset(name for name in _FIELDS if raw.get(name) not in (None, "")),
        )

    def to_request(self) -> SearchRequest:
        """The request these parameters came from, as the socket carries it: the fields it named
        (a passage as its `selection`), so that the daemon fills the rest from its own config."""
        request: SearchRequest = {"selection": self.query} if self.passage else {"query": self.query}
        given = self.given
        if "top_k" in given:
            request["top_k"] = self.top_k
        if "threshold" in given:
            request["threshold"] = self.threshold
        if "mode" in given:
            request["mode"] = self.mode
        request.update(cast(SearchRequest, self.scope.to_request()))
        if self.explain:
            request["explain"] = True
        if not self.record_gap:
            request["record_gap"] = False
        return request


def search_defaults(config: Config) -> SearchParams:
    """What a search leaves out, from the config (top_k, threshold, mode). Those the config sets
    apart from mdrag's own defaults (its file, an MDRAG_SEARCH_* variable) count as given: a
    client sends them, so the settings of the shell a search runs in hold through a daemon, whose
    config fills only what neither the flags nor the client's config say."""
    built_in = {f.name: f.default for f in fields(config)}
    chosen = {name: attr for name, attr in _CONFIG_KEYS.items() if getattr(config, attr) != built_in[attr]}
    return SearchParams(
        query="-",
        top_k=config.search_top_k,
        threshold=config.search_threshold,
        mode=cast(SearchMode, config.search_mode),
        given=frozenset(chosen),
    )


_FIELDS = ("top_k", "threshold", "mode")  # those a request may leave to the defaults
_CONFIG_KEYS = {"top_k": "search_top_k", "threshold": "search_threshold", "mode": "search_mode"}

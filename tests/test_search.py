"""Searching the real index: validation, threshold, filters, modes, one hit per section."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mdrag.errors import QueryError
from mdrag.params.search import SearchParams
from tests.conftest import write

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "notes"

NOTES = {
    "baking/bread.md": "---\ntags: [baking, food]\n---\n# Sourdough\n\nFeed the starter daily.\n\n## Proofing\n\nLet the dough rise for five hours.\n",
    "tech/git.md": "---\ntags: git, tools\n---\n# Git\n\nCreate a feature branch for every change and rebase before merging.\n",
    "tech/postgres.md": "---\ntags: [databases]\n---\n# Postgres\n\nRestore a dump with pg_restore into an empty database.\n",
}


@pytest.fixture()
def service(make_service, notes):
    for rel, text in NOTES.items():
        write(notes / rel, text)
    built = make_service([notes])
    built.reindex()
    return built


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"query": "   "}, "1-1000 characters"),
        ({"query": "x" * 1001}, "1-1000 characters"),
        ({"query": "ok", "top_k": 0}, "top_k"),
        ({"query": "ok", "top_k": 101}, "top_k"),
        ({"query": "ok", "threshold": 1.01}, "threshold"),
        ({"query": "ok", "threshold": "high"}, "threshold"),
        ({"query": "ok", "mode": "fuzzy"}, "mode"),
    ],
)
def test_invalid_search_parameters_get_a_clear_error(params, message):
    with pytest.raises(QueryError, match=message):
        SearchParams.parse(params)


def test_results_carry_every_documented_field_best_first(service):
    response = service.search({"query": "how long should dough rise", "threshold": 0, "mode": "dense"})
    assert set(response) >= {"query", "results", "search_parameters", "execution_time_ms"}
    assert set(response["search_parameters"]) >= {"top_k", "threshold", "metric"}
    hit = response["results"][0]
    assert set(hit) >= {
        "file_path",
        "section_heading",
        "heading_level",
        "chunk_index",
        "confidence_score",
        "section_text",
        "start_line",
        "metadata",
    }
    assert hit["section_heading"] == "Proofing"
    scores = [h["confidence_score"] for h in response["results"]]
    assert scores == sorted(scores, reverse=True)


def test_threshold_keeps_only_hits_at_or_above_it_and_says_how_close_the_best_came(service):
    response = service.search({"query": "quantum chromodynamics lattice gauge theory", "threshold": 0.9})
    assert response["results"] == []
    # The reason, when known, says more than the bar: these words are in no note at all.
    assert response["message"] == (
        "no confident answer in your notes: no note mentions quantum, chromodynamics, lattice, gauge or theory"
    )
    held = service.search({"query": "let the dough rise", "threshold": 1.0})
    assert held["results"] == [] and held["confidence"]["reason"] == ""
    assert held["message"] == "no confident answer in your notes: no section scored 1 or more"
    # An off-topic query's best may round to 0.0: it is still said (not None), and under the bar.
    assert response["best_candidate_score"] is not None and 0 <= response["best_candidate_score"] < 0.9
    assert response["confidence"]["outcome"] == "none" and response["related"] == []
    loose = service.search({"query": "how long should dough rise", "threshold": 0.3})
    assert loose["results"] and all(h["confidence_score"] >= 0.3 for h in loose["results"])


def test_tag_filter_matches_any_of_several_tags(service, notes):
    response = service.search({"query": "anything", "threshold": 0, "tags": ["git", "databases"]})
    assert {h["file_path"] for h in response["results"]} == {
        str(notes / "tech/git.md"),
        str(notes / "tech/postgres.md"),
    }


def test_path_prefix_filter_keeps_notes_under_that_folder(service, notes):
    response = service.search({"query": "anything", "threshold": 0, "path_prefix": str(notes / "baking")})
    assert {h["file_path"] for h in response["results"]} == {str(notes / "baking/bread.md")}


@pytest.mark.parametrize(
    ("folder", "sent"),
    [("baking", "the notes within"), ("tech", "the notes left out"), ("", "no list")],
)
def test_a_folder_filter_finds_exactly_the_unfiltered_hits_inside_it_however_its_scope_is_sent(
    service, notes, monkeypatch, folder, sent
):
    """A scope of few notes is sent as their doc_ids, of most notes as the others' (a long list
    costs the engine its parsing), of every note as none: each must give the same hits."""
    store, scopes = service.searcher.store, []
    original = store.search_dense

    def recording(vector, limit, scope=None):
        scopes.append(scope)
        return original(vector, limit, scope)

    monkeypatch.setattr(store, "search_dense", recording)
    query = {"query": "how long should dough rise", "threshold": 0, "mode": "dense", "top_k": 100}
    everything = service.search(query)["results"]
    prefix = str(notes / folder) if folder else str(notes)
    inside = [(h["file_path"], h["chunk_index"]) for h in everything if h["file_path"].startswith(prefix)]
    found = service.search({**query, "path_prefix": prefix})["results"]
    assert [(h["file_path"], h["chunk_index"]) for h in found] == inside
    scope = scopes[-1]
    assert {None: "no list", False: "the notes within", True: "the notes left out"}[
        scope and scope.outside
    ] == sent


def test_a_scope_is_sent_as_the_shorter_list_of_doc_ids():
    from mdrag.keys import doc_id
    from mdrag.milvus import note_scope

    every = [f"n/{i}.md" for i in range(10)]
    assert note_scope(every, every) is None
    few = note_scope(every[:5], every)
    assert few is not None and not few.outside and few.doc_ids == [doc_id(p) for p in every[:5]]
    most = note_scope(every[:8], every)
    assert most is not None and most.outside and most.doc_ids == [doc_id(p) for p in every[8:]]
    assert most.expression(most.doc_ids[:1]) == f'doc_id not in ["{most.doc_ids[0]}"]'
    assert few.expression(few.doc_ids[:1]) == f'doc_id in ["{few.doc_ids[0]}"]'
    # As many notes as there are, but not every one of them: still a scope.
    other = note_scope([*every[1:], "elsewhere.md"], every)
    assert other is not None and other.outside and other.doc_ids == [doc_id(every[0])]


def test_a_smaller_k_asks_for_as_many_candidates_so_every_hit_keeps_its_score(service, monkeypatch):
    """A hit's ranks, agreement and lead come from the candidates: -k 3 must not see fewer than
    a default search does (over the EIPs it turned a 0.462 hit into 0.417)."""
    store, asked = service.searcher.store, []
    for name in ("search_dense", "keyword_hits"):
        original = getattr(store, name)

        def recording(query, limit, *rest, _original=original):
            asked.append(limit)
            return _original(query, limit, *rest)

        monkeypatch.setattr(store, name, recording)
    for mode in ("dense", "keyword", "hybrid"):
        scores = {}
        for k in (1, 3, 10):
            params = {"query": "dough rising time", "top_k": k, "threshold": 0, "mode": mode}
            scores[k] = [hit["confidence_score"] for hit in service.search(params)["results"]]
        assert scores[1] == scores[10][:1] and scores[3] == scores[10][:3], mode
    assert len(set(asked)) == 1, asked


def test_a_filter_that_leaves_no_note_says_so_rather_than_blame_the_index(service, notes):
    params = {"query": "dough", "tags": ["no-such-tag"], "path_prefix": str(notes / "nowhere")}
    response = service.search(params)
    assert response["results"] == [] and response["closest"] == []
    assert response["message"] == (
        f"no confident answer in your notes: no note tagged no-such-tag is under {notes / 'nowhere'}"
    )
    only_tags = service.search({"query": "dough", "tags": ["no-such-tag", "nor-this"]})
    assert only_tags["message"].endswith(": no note is tagged no-such-tag or nor-this")
    nowhere = service.search({"query": "dough", "path_prefix": str(notes / "nowhere")})
    assert nowhere["message"].endswith(f": no note is under {notes / 'nowhere'}")
    keyword = service.search({"query": "dough", "tags": ["no-such-tag"], "mode": "keyword"})
    assert keyword["message"].endswith(": no note is tagged no-such-tag")


def test_the_folder_a_filter_names_is_said_as_hits_are_shown_not_as_the_daemon_holds_it(service, notes):
    from mdrag.client.paths import Paths
    from mdrag.retrieval.confidence import nothing_line

    shown = Paths([str(notes)]).shown_folder
    for params, said in [
        ({"path_prefix": str(notes / "nowhere")}, f"no note is under {notes.name}/nowhere"),
        (
            {"path_prefix": str(notes / "nowhere"), "tags": ["x"]},
            f"no note tagged x is under {notes.name}/nowhere",
        ),
        (
            {"path_prefix": str(notes), "tags": ["x"], "mode": "keyword"},
            f"no note tagged x is under {notes.name}",
        ),
    ]:
        line = nothing_line(service.search({"query": "zzyzx", **params}), shown)
        assert said in line and str(notes) not in line, line


def test_a_filter_whose_notes_have_no_text_to_search_is_not_said_to_hold_none(make_service, notes):
    """A note of frontmatter alone has no section, so nothing is found among its tag's notes:
    saying no note is tagged so would deny a note that is there."""
    write(notes / "todo.md", "---\ntags: [someday]\n---\n")
    service = make_service([notes])
    service.reindex()
    for mode in ("dense", "keyword", "hybrid"):
        response = service.search({"query": "dough", "tags": ["someday"], "mode": mode})
        assert response["message"].endswith(": nothing matched among the notes tagged someday"), mode


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_every_mode_finds_the_obvious_note(service, notes, mode):
    response = service.search({"query": "pg_restore a database dump", "threshold": 0, "mode": mode})
    assert response["results"][0]["file_path"] == str(notes / "tech/postgres.md")
    # A Milvus server without BM25 too: the keyword index is mdrag's own.
    assert response["search_parameters"]["mode"] == mode


def test_top_k_limits_the_number_of_hits(service):
    assert len(service.search({"query": "notes", "threshold": 0, "top_k": 2})["results"]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_a_note_is_found_by_an_alias_its_text_never_says(make_service, notes, mode):
    write(
        notes / "home/boiler.md",
        "---\naliases: [Vaillant ecoTEC]\n---\n# Boiler\n\nBleed the radiators each autumn.\n",
    )
    write(notes / "home/kettle.md", "# Kettle\n\nDescale it with vinegar every month.\n")
    write(
        notes / "site/about.md", "---\naliases: [/vaillant/ecotec/]\n---\n# About\n\nWho writes this site.\n"
    )
    service = make_service([notes])
    service.reindex()
    found = service.search({"query": "vaillant ecotec", "mode": mode, "threshold": 0.0})["results"]
    assert Path(found[0]["file_path"]).name == "boiler.md", [h["file_path"] for h in found]
    assert found[0]["heading_path"] == "Boiler"  # what a hit shows: the title, not the aliases


@pytest.fixture()
def examples(make_service, tmp_path):
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root)
    built = make_service([root])
    built.reindex()
    return built, root


@pytest.mark.slow
def test_a_typo_no_note_holds_is_named_with_the_word_the_best_notes_hold_one_slip_away(examples):
    service, _ = examples
    response = service.search({"query": "how do I restore a databse bakcup"})
    reason = response["confidence"]["reason"]
    assert reason == "no note mentions databse or bakcup (did you mean database or backup?)", reason
    closest = [note["path"] for note in response["closest"]]
    assert any("restore" in Path(path).name for path in closest), closest  # the suggestion's source


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_search_for_an_exact_term_finds_the_note_holding_it_at_the_default_threshold(examples, mode):
    service, root = examples
    response = service.search({"query": "pg_restore", "mode": mode})
    assert response["results"], response["message"]
    assert response["results"][0]["file_path"] == str(root / "postgresql-backup-and-restore.md")
    assert response["confidence"]["level"] in ("medium", "high")


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_hits_come_best_score_first_each_with_its_raw_similarity(service, mode):
    response = service.search(
        {"query": "restore a database dump", "threshold": 0, "mode": mode, "explain": True}
    )
    hits = response["results"]
    assert hits
    scores = [h["confidence_score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= score <= 1 for score in scores)
    for hit in hits:
        assert -1 <= hit["similarity"] <= 1
        assert hit["explain"]["similarity"] == hit["similarity"]
        assert hit["explain"]["score"] == hit["confidence_score"]
    assert response["confidence"]["best_score"] == scores[0]


def test_the_threshold_reads_the_score_in_every_mode(service):
    for mode in ("dense", "keyword", "hybrid"):
        everything = service.search({"query": "dough, branch or database", "threshold": 0, "mode": mode})[
            "results"
        ]
        distinct = sorted({h["confidence_score"] for h in everything})
        assert len(distinct) >= 2
        # Between two shown scores: the shown ones are rounded, so a cut on one is ambiguous.
        middle = len(distinct) // 2
        cut = (distinct[middle - 1] + distinct[middle]) / 2
        kept = service.search({"query": "dough, branch or database", "threshold": cut, "mode": mode})[
            "results"
        ]
        assert [h["confidence_score"] for h in kept] == [
            h["confidence_score"] for h in everything if h["confidence_score"] >= cut
        ]


def test_when_nothing_passes_the_closest_notes_come_with_their_scores(service, notes):
    response = service.search({"query": "quantum chromodynamics lattice gauge theory"})
    assert response["results"] == [] and response["confidence"]["level"] == "none"
    closest = response["closest"]
    assert 1 <= len(closest) <= 3
    assert len({c["path"] for c in closest}) == len(closest)  # one entry per note
    assert all(c["path"].startswith(str(notes)) and c["score"] < 0.7 for c in closest)
    assert [c["score"] for c in closest] == sorted((c["score"] for c in closest), reverse=True)
    assert {"heading_path", "similarity", "source"} <= set(closest[0])


def test_a_search_with_hits_has_no_closest_list(service):
    response = service.search({"query": "rise dough", "threshold": 0})
    assert response["results"] and response["closest"] == []


def test_the_context_pack_names_the_closest_notes_when_nothing_passes(service):
    pack = service.context({"query": "quantum chromodynamics lattice gauge theory", "threshold": 0.99})
    assert pack["context"] == "" and pack["sources"] == []
    assert pack["confidence"]["level"] == "none"
    assert pack["closest"] and all({"path", "heading_path", "score"} <= set(c) for c in pack["closest"])


def test_a_search_that_keeps_nothing_shows_the_hits_close_under_the_bar_as_possibly_related(service):
    best = service.search({"query": "dough rising time", "threshold": 0.0})["results"][0]["confidence_score"]
    bar = min(best + 0.1, 1.0)
    response = service.search({"query": "dough rising time", "threshold": bar})
    assert response["results"] == []
    assert response["confidence"]["outcome"] == "related"
    related = response["related"]
    assert related and all(bar - 0.2 <= h["confidence_score"] < bar for h in related)
    assert related[0]["confidence_score"] == best and response["closest"]  # closest too, for a pack


def test_a_question_naming_something_no_note_mentions_says_so_and_is_no_confident_answer(service):
    response = service.search({"query": "a feature branch for Kubernetes"})
    assert response["results"] == [] and response["confidence"]["outcome"] != "answer"
    assert response["confidence"]["reason"] == "no note mentions kubernetes"
    assert "no note mentions kubernetes" in response["message"]


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_a_query_of_words_no_note_holds_says_which_in_every_mode(service, mode):
    # A keyword search finds nothing at all to score for such a query: it still says why.
    response = service.search({"query": "kubernetes helm", "mode": mode})
    assert response["results"] == [] and response["confidence"]["outcome"] != "answer"
    assert response["confidence"]["reason"] == "no note mentions kubernetes or helm", mode
    assert response["message"].endswith("no note mentions kubernetes or helm")


def test_a_word_only_notes_outside_the_filters_hold_is_one_no_note_mentions_among_those_asked(service, notes):
    response = service.search({"query": "rebase the feature branch", "tags": ["baking"]})
    assert response["results"] == []
    reason = "no note mentions rebase, feature or branch among the notes tagged baking"
    assert response["confidence"]["reason"] == reason
    baking = str(notes / "baking")
    response = service.search({"query": "rebase the feature branch", "path_prefix": baking})
    assert response["confidence"]["reason"] == f"no note mentions rebase, feature or branch under {baking}"
    assert (
        service.search({"query": "rebase the feature branch", "tags": ["git"]})["confidence"]["reason"] == ""
    )


def test_while_notes_are_still_being_indexed_a_word_no_note_holds_is_said_of_those_indexed_so_far(service):
    """A word no indexed note holds may be in a note not read yet: the reason says "so far"."""
    from mdrag.answers.search import Live

    indexing = {
        "state": "indexing",
        "notes_done": 3,
        "notes_total": 9,
        "done": 30,
        "total": 90,
        "unit": "text",
        "rate": 10.0,
        "eta_s": 6.0,
        "started_at": 0.0,
    }
    live = Live({"queue_depth": 6, "last_change_applied_at": None}, indexing)
    response = service.search({"query": "a feature branch for Kubernetes"}, live)
    assert response["confidence"]["reason"] == "no note indexed so far mentions kubernetes"
    # it shows the closest notes: something found, nothing confident
    assert response["closest"] and response["message"].startswith(
        "no confident answer in the 3 of 9 notes indexed so far"
    )
    pack = service.context({"query": "a feature branch for Kubernetes"}, live)
    assert pack["confidence"]["reason"] == "no note indexed so far mentions kubernetes"
    # A saved change still queued may hold it too; with nothing queued, the notes do not.
    queued = Live({"queue_depth": 1, "last_change_applied_at": None})
    assert service.search({"query": "kubernetes"}, queued)["confidence"]["reason"] == (
        "no note indexed so far mentions kubernetes"
    )
    settled = Live({"queue_depth": 0, "last_change_applied_at": None})
    assert (
        service.search({"query": "kubernetes"}, settled)["confidence"]["reason"]
        == "no note mentions kubernetes"
    )


def test_a_word_no_note_holds_lowers_a_question_but_not_a_passage(service):
    from mdrag.retrieval import relevance

    asked = "feed the sourdough starter daily"
    plain = service.search({"query": asked, "threshold": 0.0, "explain": True})["results"][0]
    odd = service.search({"query": asked + " zorblaxian", "threshold": 0.0, "explain": True})["results"][0]
    assert plain["explain"]["evidence"]["vault_words"] == 1.0
    assert odd["explain"]["evidence"]["vault_words"] == 0.0
    # The word alone costs the answer what the fit gave it (on the logit scale, where a score
    # near 1 still shows it): the same evidence with the word held would answer more surely.
    odd_evidence = list(odd["explain"]["evidence"].values())
    held = dict(odd["explain"]["evidence"], vault_words=1.0)
    gain = relevance.answer_logit(list(held.values()), "hybrid") - relevance.answer_logit(
        odd_evidence, "hybrid"
    )
    # The odds of an answer fall by more than a third.
    assert gain == pytest.approx(relevance.DECISION["hybrid"]["vault_words"]) and gain > 0.5
    passage = service.search(
        {"selection": "A passage about " + asked + " zorblaxian.", "threshold": 0.0, "explain": True}
    )["results"]
    assert passage and all(h["explain"]["evidence"]["vault_words"] == 1.0 for h in passage)


@pytest.mark.slow
def test_a_page_found_by_its_breadcrumb_shows_the_section_a_person_reads(make_service, notes):
    # The shape of a generated API page in an Obsidian vault: titled by its file name, an alias,
    # a "do not edit" comment and a breadcrumb before its first heading.
    write(
        notes / "Reference/Plugin/addRibbonIcon.md",
        '---\naliases: "Plugin.addRibbonIcon"\n---\n\n<!-- Do not edit this file. -->\n\n'
        "[`Plugin`](Plugin) › [`addRibbonIcon`](Plugin/addRibbonIcon)\n\n"
        "## Plugin.addRibbonIcon() method\n\nAdds a ribbon icon to the left bar.\n\n"
        "**Signature:**\n\n```typescript\naddRibbonIcon(icon: IconName, title: string): HTMLElement;\n```\n",
    )
    write(notes / "Plugins/Ribbon actions.md", "Users can pin actions to the ribbon on the left.\n")
    service = make_service([notes])
    service.reindex()

    found = service.search({"query": "addRibbonIcon", "threshold": 0.0, "explain": True})["results"]

    first = found[0]
    assert first["explain"]["score_rank"] == 1  # the ranks of the names whose score it shows
    assert Path(first["file_path"]).name == "addRibbonIcon.md", [h["file_path"] for h in found]
    assert first["section_heading"] == "Plugin.addRibbonIcon() method"
    assert "Adds a ribbon icon" in first["snippet"]["text"]
    assert first["start_line"] == 9  # where `mdrag open` goes: the method, not the breadcrumb
    assert [Path(h["file_path"]).name for h in found].count("addRibbonIcon.md") == 1
    two = service.search({"query": "addRibbonIcon", "threshold": 0.0, "top_k": 2})["results"]
    assert [Path(h["file_path"]).name for h in two] == ["addRibbonIcon.md", "Ribbon actions.md"]
    # What the order is fitted on (bench.fit dump) is each section as scored: the names first.
    params = SearchParams.parse({"query": "addRibbonIcon", "threshold": 0.0}, service.search_defaults())
    scored = service.searcher.search(params, as_scored=True).results
    assert (scored[0].start_line, scored[0].section_heading) == (5, "")  # the comment, the breadcrumb

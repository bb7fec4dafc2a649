"""Configuration: the example file, the lookup order, overrides and validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdrag.config import KEYS, Config, env_name, load_config
from mdrag.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parent.parent / "config" / "mdrag.example.yaml"


def test_example_config_loads_and_documents_every_key(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    config = load_config(EXAMPLE)
    text = EXAMPLE.read_text()
    for key in KEYS:
        leaf = key.split(".")[-1]
        assert f"{leaf}:" in text, f"{key} is not documented in the example config"
    assert config.search_top_k == 10 and config.search_threshold == 0.7
    assert config.sections_max_tokens == 1000 and config.embedding_model == "all-MiniLM-L6-v2"


def test_defaults_put_the_lite_database_under_xdg_data_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing-here"))
    monkeypatch.delenv("MDRAG_CONFIG", raising=False)
    config = load_config()
    assert config.milvus_uri == str(tmp_path / "data" / "mdrag" / "milvus.db")


def test_socket_path_falls_back_to_tmp_without_xdg_runtime_dir(monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert Config().server_socket_path.startswith("/tmp/mdrag-")


def test_file_then_environment_then_flags_take_precedence(monkeypatch, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("search:\n  top_k: 5\n  threshold: 0.5\n")
    monkeypatch.setenv("MDRAG_CONFIG", str(path))
    monkeypatch.setenv("MDRAG_SEARCH_THRESHOLD", "0.4")
    config = load_config()
    assert (config.search_top_k, config.search_threshold) == (5, 0.4)
    assert config.with_overrides(search_top_k=7).search_top_k == 7


def test_the_search_settings_a_client_sets_are_sent_and_the_rest_left_to_the_daemon(monkeypatch, tmp_path):
    """A search through a daemon holds the settings of the shell and config file it runs with
    (MDRAG_SEARCH_TOP_K=2); what they leave at mdrag's defaults, the daemon's config fills."""
    from mdrag.params.search import SearchParams, search_defaults

    monkeypatch.delenv("MDRAG_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing-here"))
    plain = SearchParams.parse({"query": "q"}, search_defaults(load_config()))
    assert plain.to_request() == {"query": "q"}
    path = tmp_path / "c.yaml"
    path.write_text("search:\n  mode: keyword\n")
    monkeypatch.setenv("MDRAG_CONFIG", str(path))
    monkeypatch.setenv("MDRAG_SEARCH_TOP_K", "2")
    asked = SearchParams.parse({"query": "q", "threshold": 0.5}, search_defaults(load_config()))
    assert asked.to_request() == {"query": "q", "top_k": 2, "threshold": 0.5, "mode": "keyword"}


def test_explicit_config_path_wins_over_the_environment(monkeypatch, tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("search:\n  top_k: 3\n")
    second.write_text("search:\n  top_k: 4\n")
    monkeypatch.setenv("MDRAG_CONFIG", str(first))
    assert load_config(second).search_top_k == 4


@pytest.mark.parametrize(
    ("yaml_text", "key"),
    [
        ("milvus:\n  uri: 'not a uri'\n", "milvus.uri"),
        ("milvus:\n  uri: 'ftp://x'\n", "milvus.uri"),
        ("embedding:\n  model: '   '\n", "embedding.model"),
        ("search:\n  top_k: 0\n", "search.top_k"),
        ("search:\n  top_k: 101\n", "search.top_k"),
        ("search:\n  threshold: 1.5\n", "search.threshold"),
        ("search:\n  threshold: -0.1\n", "search.threshold"),
        ("search:\n  mode: fuzzy\n", "search.mode"),
    ],
)
def test_invalid_values_name_the_key_and_the_file(tmp_path, yaml_text, key):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert key in str(caught.value) and str(path) in str(caught.value)


def test_unknown_key_is_rejected_with_the_known_ones_listed(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("serach:\n  top_k: 3\n")
    with pytest.raises(ConfigError, match=r"unknown key 'serach\.top_k'"):
        load_config(path)


def test_a_root_that_does_not_exist_is_loaded_and_named_as_missing(tmp_path):
    """An unmounted drive must not stop every command: serve and reindex refuse it, reads warn."""
    path = tmp_path / "roots.yaml"
    path.write_text(f"roots: ['/definitely/not/here', '{tmp_path}']\n")
    assert load_config(path).missing_roots() == ["/definitely/not/here"]


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("MDRAG_SEARCH_TOPK", "did you mean MDRAG_SEARCH_TOP_K?"),
        ("MDRAG_MILVUS_URL", "did you mean MDRAG_MILVUS_URI?"),
        ("MDRAG_ROOT", "did you mean MDRAG_ROOTS?"),
        ("MDRAG_COLOUR", ""),
    ],
)
def test_an_unknown_environment_variable_is_warned_about_and_the_config_still_loads(
    monkeypatch, capsys, name, hint
):
    monkeypatch.setenv(name, "3")
    assert load_config().search_top_k == Config().search_top_k
    err = capsys.readouterr().err
    assert f"warning: environment variable {name} is not an mdrag setting, ignored" in err
    assert hint in err


def test_an_unknown_environment_variable_is_warned_about_once_a_process(monkeypatch, capsys):
    monkeypatch.setenv("MDRAG_ONCE_ONLY", "1")
    load_config()
    load_config()
    assert capsys.readouterr().err.count("MDRAG_ONCE_ONLY") == 1


def test_a_known_environment_variable_with_a_bad_value_is_still_an_error(monkeypatch):
    monkeypatch.setenv("MDRAG_SEARCH_TOP_K", "x")
    with pytest.raises(ConfigError, match="MDRAG_SEARCH_TOP_K"):
        load_config()


def test_other_environment_variables_are_left_alone(monkeypatch):
    monkeypatch.setenv("MDRAGGED", "1")
    monkeypatch.setenv("MDRAG_TEST_ANYTHING", "1")
    monkeypatch.setenv("MDRAG_SEARCH_TOP_K", "3")
    assert load_config().search_top_k == 3


def test_environment_roots_split_on_the_path_separator(monkeypatch, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv(env_name("roots"), f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    monkeypatch.setenv("MDRAG_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("{}\n")
    assert load_config().roots == (str(tmp_path / "a"), str(tmp_path / "b"))


def test_bad_environment_value_names_the_variable(monkeypatch, tmp_path):
    (tmp_path / "empty.yaml").write_text("{}\n")
    monkeypatch.setenv("MDRAG_SEARCH_TOP_K", "many")
    with pytest.raises(ConfigError, match=r"MDRAG_SEARCH_TOP_K: search\.top_k"):
        load_config(tmp_path / "empty.yaml")


def test_the_maximum_wait_follows_a_longer_debounce_unless_set_and_is_refused_below_it(tmp_path):
    assert Config().watch_max_wait_ms == 5000
    longer = tmp_path / "longer.yaml"
    longer.write_text("watch:\n  debounce_ms: 8000\n")
    assert load_config(longer).watch_max_wait_ms == 8000
    both = tmp_path / "both.yaml"
    both.write_text("watch:\n  debounce_ms: 8000\n  max_wait_ms: 6000\n")
    with pytest.raises(ConfigError, match=r"watch.max_wait_ms: must be at least watch.debounce_ms \(8000\)"):
        load_config(both)


def test_a_test_that_undoes_its_patches_still_keeps_mdrags_state_inside_it(tmp_path, monkeypatch):
    """The suite's own isolation (conftest.private_data_home) survives `monkeypatch.undo()`, which
    upgrade tests call between the old and the new index."""
    from mdrag.config import default_data_dir

    monkeypatch.undo()
    assert default_data_dir().is_relative_to(tmp_path)

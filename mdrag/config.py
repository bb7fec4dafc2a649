"""Configuration: one YAML file, then MDRAG_* environment variables, then flags; validated once."""

from __future__ import annotations

import functools
import os
import shlex
import sys
import urllib.parse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from mdrag.errors import ConfigError
from mdrag.files import configcache, trust

SEARCH_MODES = ("hybrid", "dense", "keyword")
EMBEDDING_BACKENDS = (
    "torch",
    "onnx",
    "onnx-int8",
)  # as mdrag.embedding.embedder.BACKENDS, without importing it
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL")
# What an `open.command` template may fill in (notes/opener.py fills them).
FIELDS = ("path", "line", "uri", "obsidian_uri")


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "mdrag"


def default_milvus_uri() -> str:
    return str(default_data_dir() / "milvus.db")


def default_socket_path() -> str:
    # In $XDG_RUNTIME_DIR when usable, else /tmp/mdrag-UID (made 0700): one rule for every process.
    return trust.default_socket_path()


def default_cache_dir() -> Path:
    """mdrag's own under $XDG_CACHE_HOME: what can be made again (the ONNX export, parsed configs)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "mdrag"


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "mdrag" / "config.yaml"


@dataclass(frozen=True)
class Config:
    """Every setting mdrag reads; dotted YAML keys map onto the flat attribute names below."""

    roots: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    milvus_uri: str = field(default_factory=default_milvus_uri)
    milvus_token: str = ""
    milvus_reopen_after_rows: int = 5000
    milvus_reopen_quiet_s: float = 30.0
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_device: str = "cpu"
    embedding_batch_size: int = 64
    embedding_backend: str = "onnx-int8"
    sections_max_tokens: int = 1000
    index_max_file_mb: float = 5.0
    search_top_k: int = 10
    search_threshold: float = 0.7
    search_mode: str = "hybrid"
    server_socket_path: str = field(default_factory=default_socket_path)
    watch_debounce_ms: int = 500
    watch_max_wait_ms: int = 5000  # or watch_debounce_ms when that is longer and this is not set
    watch_sweep_interval_s: float = 600.0
    log_level: str = "INFO"
    log_progress_interval_s: float = 10.0
    # How a hit opens in the user's editor: a command template ({path}, {line}, {uri},
    # {obsidian_uri}); empty means $VISUAL, else $EDITOR, else the system's opener (notes/opener.py).
    open_command: str = ""
    source: str = "defaults"  # where the values came from, for error messages

    @property
    def data_dir(self) -> Path:
        """Where mdrag keeps its own state (the knowledge beside the index)."""
        if is_lite_uri(self.milvus_uri):
            return Path(self.milvus_uri).expanduser().resolve().parent
        return default_data_dir()

    def missing_roots(self) -> list[str]:
        """Roots that are not a directory now: serve and reindex refuse them, reads warn."""
        return [root for root in self.roots if not Path(root).expanduser().is_dir()]

    def with_overrides(self, **values: Any) -> Config:
        """A copy with flag values applied (None means "not given") and validated again."""
        given = {k: v for k, v in values.items() if v is not None}
        if not given:
            return self
        raw = {k: getattr(self, k) for k in _ATTRS}
        raw.update(given)
        return _build(raw, dict.fromkeys(given, "command line"), self.source)


# Dotted YAML key -> attribute name, in the order the example file documents them.
KEYS: dict[str, str] = {
    "roots": "roots",
    "exclude": "exclude",
    "milvus.uri": "milvus_uri",
    "milvus.token": "milvus_token",
    "milvus.reopen_after_rows": "milvus_reopen_after_rows",
    "milvus.reopen_quiet_s": "milvus_reopen_quiet_s",
    "embedding.model": "embedding_model",
    "embedding.device": "embedding_device",
    "embedding.batch_size": "embedding_batch_size",
    "embedding.backend": "embedding_backend",
    "sections.max_tokens": "sections_max_tokens",
    "index.max_file_mb": "index_max_file_mb",
    "search.top_k": "search_top_k",
    "search.threshold": "search_threshold",
    "search.mode": "search_mode",
    "server.socket_path": "server_socket_path",
    "watch.debounce_ms": "watch_debounce_ms",
    "watch.max_wait_ms": "watch_max_wait_ms",
    "watch.sweep_interval_s": "watch_sweep_interval_s",
    "log.level": "log_level",
    "log.progress_interval_s": "log_progress_interval_s",
    "open.command": "open_command",
}
_ATTRS = {f.name for f in fields(Config)} - {"source"}
_KEY_OF = {attr: key for key, attr in KEYS.items()}


def env_name(key: str) -> str:
    """`search.top_k` -> `MDRAG_SEARCH_TOP_K`."""
    return "MDRAG_" + key.upper().replace(".", "_")


# MDRAG_* variables that are not settings: the config file's path, and the test suite's switches.
OTHER_ENV_VARS = ("MDRAG_CONFIG", "MDRAG_EVAL_WORK")  # the second is read by bench.eval
TEST_ENV_PREFIX = "MDRAG_TEST_"


def check_env_names(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """An unknown MDRAG_* variable is warned about once on stderr, and the command goes on.

    Another tool may set a name of ours (MDRAG_HOME, say): stopping every command for it would
    break mdrag for a reason its user cannot see, so it is warned about as git does with unknown
    GIT_* variables. A known variable with a bad value is still an error (its value is read).
    """
    known = [env_name(key) for key in KEYS] + list(OTHER_ENV_VARS)
    for name in sorted(environ):
        if not name.startswith("MDRAG_") or name in known or name.startswith(TEST_ENV_PREFIX):
            continue
        _warn_unknown_env_name(name, tuple(known))


@functools.cache  # once a process: a daemon or the page loads its config more than once
def _warn_unknown_env_name(name: str, known: tuple[str, ...]) -> None:
    import difflib  # here: only an unknown name needs it

    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    print(f"warning: environment variable {name} is not an mdrag setting, ignored{hint}", file=sys.stderr)


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Find and load the configuration: --config PATH, $MDRAG_CONFIG, the user file, defaults."""
    check_env_names()
    explicit = path or os.environ.get("MDRAG_CONFIG")
    chosen = Path(explicit).expanduser() if explicit else default_config_path()
    raw: dict[str, Any] = {}
    origin: dict[str, str] = {}
    source = "defaults"
    if explicit or chosen.exists():
        if not chosen.is_file():
            raise ConfigError(f"config file {chosen} does not exist")
        source = str(chosen)
        raw, origin = _read_yaml(chosen)
    for key, attr in KEYS.items():
        name = env_name(key)
        if name in os.environ:
            raw[attr] = _from_env(attr, os.environ[name])
            origin[attr] = f"environment variable {name}"
    return _build(raw, origin, source)


class _NotYaml(Exception):
    """The YAML parser's complaint about a config file, carried out of configcache."""


def _parse_yaml(text: str) -> Any:
    # here: ~15 ms of a command's start, paid only when the config file changed since it was
    # last parsed (configcache keeps what it holds)
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise _NotYaml(str(exc)) from exc


def _read_yaml(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        data = configcache.parsed(path, _parse_yaml, default_cache_dir() / "config") or {}
    except (OSError, UnicodeDecodeError, _NotYaml) as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config file must be a mapping of keys to values")
    raw: dict[str, Any] = {}
    for key, value in _flatten(data).items():
        if key not in KEYS:
            raise ConfigError(f"{path}: unknown key '{key}' (known: {', '.join(KEYS)})")
        raw[KEYS[key]] = value
    return raw, {attr: str(path) for attr in raw}


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted not in KEYS:
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def _from_env(attr: str, value: str) -> Any:
    if attr in ("roots", "exclude"):
        return [part for part in value.split(os.pathsep) if part.strip()]
    return value


def _build(raw: dict[str, Any], origin: dict[str, str], source: str) -> Config:
    values: dict[str, Any] = {}
    for attr, value in raw.items():
        where = origin.get(attr, source)
        values[attr] = _coerce(attr, value, where)
    config = replace(Config(), **values, source=source)
    if "watch_max_wait_ms" not in values and config.watch_max_wait_ms < config.watch_debounce_ms:
        # A debounce set longer than the default maximum wait: the wait follows it.
        config = replace(config, watch_max_wait_ms=config.watch_debounce_ms)
    _validate(config, origin)
    return config


def _fail(attr: str, where: str, problem: str) -> ConfigError:
    return ConfigError(f"{where}: {_KEY_OF[attr]}: {problem}")


def _coerce(attr: str, value: Any, where: str) -> Any:
    default = getattr(Config(), attr)
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise _fail(attr, where, f"expected a list, got {value!r}")
        items = []
        for item in value:
            if not isinstance(item, str) or not item.strip():
                raise _fail(attr, where, f"every entry must be a non-empty string, got {item!r}")
            items.append(item.strip())
        return tuple(items)
    if isinstance(default, bool) or value is None:
        raise _fail(attr, where, "a value is required")
    if isinstance(default, int):
        try:
            return int(str(value).strip())
        except ValueError:
            raise _fail(attr, where, f"expected a whole number, got {value!r}") from None
    if isinstance(default, float):
        try:
            return float(str(value).strip())
        except ValueError:
            raise _fail(attr, where, f"expected a number, got {value!r}") from None
    text = str(value).strip()
    if not text and attr not in ("milvus_token", "open_command"):
        raise _fail(attr, where, "must not be empty")
    return text


def is_lite_uri(uri: str) -> bool:
    """A file path means Milvus Lite; a URL (http://, tcp://, ...) means a Milvus server."""
    return "://" not in uri


def _validate(config: Config, origin: dict[str, str]) -> None:
    def where(attr: str) -> str:
        return origin.get(attr, config.source)

    uri = config.milvus_uri
    if not is_lite_uri(uri):
        parsed = urllib.parse.urlparse(uri)
        if parsed.scheme not in ("http", "https", "tcp", "grpc") or not parsed.hostname:
            raise _fail(
                "milvus_uri",
                where("milvus_uri"),
                f"{uri!r} is not a Milvus server URL such as http://localhost:19530",
            )
    elif not uri.endswith(".db") or any(c in uri for c in "\n\r\0"):
        raise _fail(
            "milvus_uri",
            where("milvus_uri"),
            f"{uri!r} is neither a Milvus Lite database path ending in .db "
            "nor a server URL such as http://localhost:19530",
        )
    if config.milvus_reopen_after_rows < 0:
        raise _fail("milvus_reopen_after_rows", where("milvus_reopen_after_rows"), "must be >= 0 (0 = never)")
    if config.milvus_reopen_quiet_s < 0:
        raise _fail("milvus_reopen_quiet_s", where("milvus_reopen_quiet_s"), "must be >= 0")
    if not 1 <= config.search_top_k <= 100:
        raise _fail("search_top_k", where("search_top_k"), f"must be 1-100, got {config.search_top_k}")
    if not 0.0 <= config.search_threshold <= 1.0:
        raise _fail(
            "search_threshold",
            where("search_threshold"),
            f"must be between 0 and 1, got {config.search_threshold}",
        )
    if config.search_mode not in SEARCH_MODES:
        raise _fail("search_mode", where("search_mode"), f"must be one of {', '.join(SEARCH_MODES)}")
    if not 50 <= config.sections_max_tokens <= 100_000:
        raise _fail(
            "sections_max_tokens",
            where("sections_max_tokens"),
            f"must be 50-100000, got {config.sections_max_tokens}",
        )
    if not 0 < config.index_max_file_mb <= 1024:
        raise _fail("index_max_file_mb", where("index_max_file_mb"), "must be above 0 and at most 1024")
    if not 1 <= config.embedding_batch_size <= 4096:
        raise _fail("embedding_batch_size", where("embedding_batch_size"), "must be 1-4096")
    if config.embedding_backend not in EMBEDDING_BACKENDS:
        raise _fail(
            "embedding_backend", where("embedding_backend"), f"must be one of {', '.join(EMBEDDING_BACKENDS)}"
        )
    if not 0 <= config.watch_debounce_ms <= 60_000:
        raise _fail("watch_debounce_ms", where("watch_debounce_ms"), "must be 0-60000")
    if not 0 < config.watch_max_wait_ms <= 600_000:
        raise _fail("watch_max_wait_ms", where("watch_max_wait_ms"), "must be 1-600000")
    if config.watch_max_wait_ms < config.watch_debounce_ms:
        raise _fail(
            "watch_max_wait_ms",
            where("watch_max_wait_ms"),
            f"must be at least watch.debounce_ms ({config.watch_debounce_ms})",
        )
    if config.watch_sweep_interval_s < 0:
        raise _fail("watch_sweep_interval_s", where("watch_sweep_interval_s"), "must be >= 0 (0 = off)")
    if config.log_level.upper() not in LOG_LEVELS:
        raise _fail("log_level", where("log_level"), f"must be one of {', '.join(LOG_LEVELS)}")
    if not 0.5 <= config.log_progress_interval_s <= 3600:
        raise _fail("log_progress_interval_s", where("log_progress_interval_s"), "must be 0.5-3600 seconds")
    if config.open_command:
        problem = check_template(config.open_command)
        if problem:
            raise _fail("open_command", where("open_command"), problem)
    if len(config.server_socket_path.encode()) > 100:
        raise _fail(
            "server_socket_path",
            where("server_socket_path"),
            "is longer than 100 bytes; unix sockets allow about 107, choose a shorter path",
        )


def check_template(template: str) -> str | None:
    """What is wrong with an `open.command` template, or None: it must split like a shell line
    and name the note ({path}, {uri} or {obsidian_uri}); {line} may go with them."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        return f"cannot split {template!r} into words: {exc}"
    if not words:
        return "is empty"
    for word in words:
        try:
            word.format_map(dict.fromkeys(FIELDS, ""))
        except (KeyError, IndexError, ValueError) as exc:
            return f"{word!r}: only {{path}}, {{line}}, {{uri}} and {{obsidian_uri}} may be filled in ({exc})"
    if not any(f"{{{name}}}" in word for word in words for name in ("path", "uri", "obsidian_uri")):
        return "must name {path} (e.g. code --goto {path}:{line}), {uri} or {obsidian_uri}"
    return None

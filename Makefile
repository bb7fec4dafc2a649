# mdrag: every target installs what it needs into .venv first.
VENV    := .venv
PY      := $(VENV)/bin/python
MDRAG   := $(VENV)/bin/mdrag
NOTES   ?= examples/notes
# Where pip finds the CPU build of torch. Empty: the default index (on these machines it
# resolves to a local CPU wheel). Elsewhere: TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
RUN_DIR := .run

.PHONY: install install-run run check test lint clean eval bench compose-tool browser-tool

# What the tests and tools need: the development extras, and mdrag editable (the daemon processes
# the tests start import the checkout's code).
install: $(VENV)/.installed-dev
# What `make run` needs: the runtime dependencies and mdrag installed as a user gets it (no
# editable finder paid by every `mdrag` process at start), refreshed whenever its sources change.
install-run: $(VENV)/.installed-run

SOURCES := $(shell find mdrag -type f \( -name '*.py' -o -name '*.html' -o -name '*.js' -o -name '*.css' \))

$(VENV)/.torch:
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned to the CPU build: otherwise pip pulls gigabytes of CUDA packages.
	$(PY) -m pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	touch $@

# Each kind of install replaces the other's mdrag, so it takes the other's stamp away.
$(VENV)/.installed-dev: pyproject.toml $(VENV)/.torch
	$(PY) -m pip install --quiet -e ".[dev]"
	rm -f $(VENV)/.installed-run
	touch $@

$(VENV)/.installed-run: pyproject.toml $(SOURCES) $(VENV)/.torch
	$(PY) -m pip install --quiet .
	rm -rf build $(VENV)/.installed-dev
	touch $@

# The main job on the embedded default (Milvus Lite, bundled model): the daemon over NOTES,
# with the index and socket where every mdrag command looks by default (~/.local/share/mdrag,
# $XDG_RUNTIME_DIR/mdrag), so the second terminal's commands find it, also once it has stopped.
run: install-run
	$(MDRAG) serve --root $(NOTES)

# The edit-test loop: lint, then unit and in-process tests only (no real model, Milvus, daemon or
# Python subprocess; tests/tiers.py marks those slow by what they use), within a minute: in three
# workers, as `make test`, since many of them wait on a socket, a thread or a timer.
check: lint compose-tool
	$(PY) -m pytest -q -n 3 -m "not slow and not server"

# CI: lint, then every test (the real model, Milvus Lite and server, daemon processes), in three
# pytest-xdist workers: the suite mostly waits on the processes it starts (tests/conftest.py keeps
# the Milvus server's tests, and a module's tests sharing a daemon, in one worker).
test: lint compose-tool browser-tool
	$(PY) -m pytest -q -n 3 --durations=25

# The compose file is validated by Debian's docker-compose (no Docker engine needed).
compose-tool:
	@command -v docker-compose >/dev/null || { [ "$$(id -u)" = 0 ] && \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/dev/null; }; }; } || \
	  echo "docker-compose is missing (apt-get install docker-compose); the compose test will fail"

# The page's tests drive Debian's headless Chromium through chromedriver (selenium, from .[dev]).
browser-tool:
	@{ command -v chromium >/dev/null && command -v chromedriver >/dev/null; } || { [ "$$(id -u)" = 0 ] && \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null; }; }; } || \
	  echo "chromium or chromedriver is missing (apt-get install chromium chromium-driver); the page's browser tests will fail"

# Each mypy run keeps a cache of its own: the two option sets in one cache invalidated each
# other's entries, and every lint took 86 s where a warm one takes 3 s.
lint: install
	$(VENV)/bin/ruff check mdrag tests bench
	$(VENV)/bin/ruff format --check mdrag tests bench
	$(VENV)/bin/mypy --strict --cache-dir .mypy_cache/strict mdrag
	$(VENV)/bin/mypy --cache-dir .mypy_cache/bench bench

clean:
	rm -rf $(VENV) $(RUN_DIR) .pytest_cache .mypy_cache .ruff_cache

# Retrieval quality and answerability on SciFact, bench/data/natural and the judged vaults
# (bench/data/vaults), all modes; each corpus is indexed once into .eval-work/ (MDRAG_EVAL_WORK)
# and reused while it is unchanged. Then every vault's candidate evidence is dumped: the ways to
# score are compared on the sealed split (bench.vaultfit), and the order and the answer decision
# are fitted leave-one-vault-out and printed beside the RRF baseline (bench.orderfit, bench.lovo).
JUDGED := powershell eips tldr otel hugo obsidian-dev obsidian-hub
VAULTS := $(JUDGED) natural  # natural: another writer's questions, never fitted on
eval: install
	$(PY) -m bench.eval $(EVAL_ARGS)
	$(PY) -m bench.baseline_parts --sets $(JUDGED) --out .eval-work/parts.json
	$(PY) -m bench.baseline bench/results/eval.json --parts .eval-work/parts.json --out bench/results/baseline.json
	for v in $(VAULTS) scifact; do $(PY) -m bench.fit dump --set $$v --out .eval-work/dump-$$v.jsonl || exit 1; done
	$(PY) -m bench.vaultfit $(foreach v,$(VAULTS),.eval-work/dump-$(v).jsonl) --out bench/results/vaults.json
	$(PY) -m bench.orderfit $(foreach v,$(JUDGED) scifact,.eval-work/dump-$(v).jsonl)
	$(PY) -m bench.lovo $(foreach v,$(JUDGED),.eval-work/dump-$(v).jsonl) --out bench/results/lovo.json
	$(PY) -m bench.report

# Speed and memory on the PowerShell reference (3,088 notes): cold index against the encode
# ceiling, no-op rescan, freshness, socket queries at 100k sections, daemon RSS, searches while
# indexing, then the quality gate (bench.quality, from make eval's cached indexes); about an hour
# on 2 cores. BENCH_ARGS="--files 200" for a quick subset run; BENCH_ARGS="--peer" also
# runs memsearch on the same notes (its own venv under the work dir, --peer-venv DIR to keep one;
# minutes more) and prints both tools' cold index, rescan, edit re-index and search as ratios.
bench: install
	$(PY) -m bench $(BENCH_ARGS)

# kb-mcp: `make run` (set up + index the bundled docs + sample search), `make test`, `make bench`
# (`make bench-quick` or `BENCH_QUICK=1 make bench`: every step once on tiny corpora, < 1 min;
# `make bench STEPS="million clients50"`: only those steps, opt-in ones included).
# `make run` installs only what running needs (`make install`: the project, no extras);
# `make test`, `lint` and `bench` add the dev extras to the same venv (`make install-dev`).
# One stamp each: `make run` then `make test` installs only the extras; `make test` alone both.
# Test tiers (docs/architecture.md, "Tests"); `make test` runs all of them, as CI does:
#   test-unit         tests/unit: the core on in-memory fakes, no model, no server (seconds)
#   test-integration  tests/integration, contract, cli, property: real adapters in process
#                     (SQLite, LanceDB, PostgreSQL, the model, parsers; the CLI via CliRunner)
#   test-e2e          tests/e2e: the real kb-mcp process over stdio and HTTP, and a browser
# PYTEST_ARGS passes options through, e.g. `make test-unit PYTEST_ARGS="-x -k search"`.
# `make test`, test-integration and test-e2e run in one worker process per core and one more
# (pytest-xdist, each test file whole on one worker: the extra one fills the time the others
# wait on servers, browsers and PostgreSQL; decision 0038); TEST_WORKERS=0 runs them in this
# one process instead.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-stamp
DEV_STAMP := $(VENV)/.dev-stamp
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt
EXAMPLE_KB ?= docs
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')
PARALLEL := -n $(TEST_WORKERS) --dist loadfile

.PHONY: install install-dev run test test-unit test-integration test-e2e lint config-docs bench bench-quick clean

$(RUN_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP)
	$(PIP) -e '.[dev]'
	touch $(DEV_STAMP)

install: $(RUN_STAMP)

install-dev: $(DEV_STAMP)

run: $(RUN_STAMP)
	$(BIN)/kb-mcp index --kb-path $(EXAMPLE_KB)
	$(BIN)/kb-mcp status --kb-path $(EXAMPLE_KB)
	$(BIN)/kb-mcp search "which documents are offered as resources" --kb-path $(EXAMPLE_KB) --limit 3 --format text
	@echo "Next, your own folder: $(BIN)/kb-mcp init --kb-path /path/to/notes (README.md, \"Use it\")"

test: $(DEV_STAMP)
	$(BIN)/python -m pytest $(PARALLEL) $(PYTEST_ARGS)

test-unit: $(DEV_STAMP)
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

test-integration: $(DEV_STAMP)
	$(BIN)/python -m pytest tests/integration tests/contract tests/cli tests/property $(PARALLEL) $(PYTEST_ARGS)

test-e2e: $(DEV_STAMP)
	$(BIN)/python -m pytest tests/e2e $(PARALLEL) $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check kbmcp_core kbmcp_adapters kbmcp_cli tests benchmarks
	$(BIN)/mypy

# The key and trust tables of docs/configuration.md, from the settings schema (decision 0050).
config-docs: $(DEV_STAMP)
	$(BIN)/python -m kbmcp_core.settings_docs docs/configuration.md

bench: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.run $(if $(BENCH_QUICK),--quick) $(foreach s,$(STEPS),--only $(s))

bench-quick: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.run --quick

clean:
	rm -rf $(VENV) build dist *.egg-info $(EXAMPLE_KB)/.kb-mcp

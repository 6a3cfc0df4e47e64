# kb-mcp: `make run` (set up + index the bundled docs + sample search), `make test`, `make bench`
# (`make bench-quick` or `BENCH_QUICK=1 make bench`: every step once on tiny corpora, < 1 min).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXAMPLE_KB ?= docs

.PHONY: install run test lint bench bench-quick clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/kb-mcp index --kb-path $(EXAMPLE_KB)
	$(BIN)/kb-mcp status --kb-path $(EXAMPLE_KB)
	$(BIN)/kb-mcp search "which documents are offered as resources" --kb-path $(EXAMPLE_KB) --limit 3 --format text

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check kbmcp_core kbmcp_adapters kbmcp_cli tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run $(if $(BENCH_QUICK),--quick)

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.run --quick

clean:
	rm -rf $(VENV) build dist *.egg-info $(EXAMPLE_KB)/.kb-mcp

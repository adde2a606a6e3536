# ddb-traffic-auditor: `make demo` and `make test` are the two set-up commands.
# Each creates (or reuses) .venv and installs what it needs.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev

.PHONY: venv test lint typecheck unit demo bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest -q

test: lint typecheck unit

demo: venv
	$(BIN)/ddb-audit demo --out audit-demo

bench: venv
	$(BIN)/python -m benchmarks.ingest

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache audit-demo benchmarks/.data

# Each target that needs the environment depends on .venv/.installed, so a fresh clone can run
# `make daemon` or `make test` directly: the first run creates .venv and installs the project.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: daemon serve index test test-portable lint format typecheck bench migration clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,semantic]"
	touch $(STAMP)

daemon: $(STAMP)  ## run the background service on the configured vault (the demo vault by default)
	$(BIN)/weaver daemon

serve: $(STAMP)  ## serve MCP over stdio
	$(BIN)/weaver serve

index: $(STAMP)  ## bring the cache up to date once and print a summary
	$(BIN)/weaver index

test: $(STAMP)  ## the whole test suite, with branch coverage and its floor (pyproject.toml)
	$(BIN)/pytest -n auto --cov --cov-report=term:skip-covered

test-portable: $(STAMP)  ## the suite on the paths Windows takes: no fcntl, msvcrt locks, signal handlers
	PYTHONPATH=$(CURDIR)/tests/portable $(BIN)/pytest -n auto -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

typecheck: $(STAMP)  ## mypy strict over weaver (built-in workflows and migrations included) and tests
	$(BIN)/mypy
	$(BIN)/mypy --platform win32 weaver  # the branches only Windows and macOS take
	$(BIN)/mypy --platform darwin weaver

bench: $(STAMP)  ## performance figures against a floor measured in the same run
	$(BIN)/python -m tests.benchmarks $(ARGS)

migration: $(STAMP)  ## make migration m="what changed"
	@test -n "$(m)" || (echo 'usage: make migration m="what changed"' >&2; exit 2)
	rm -f .weaver-migration-scratch.db
	$(BIN)/alembic upgrade head
	$(BIN)/alembic revision --autogenerate -m "$(m)"
	rm -f .weaver-migration-scratch.db

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

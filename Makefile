# The two commands of the README: `make demo` and `make test`.
# Each creates .venv and installs the package from a clean clone by itself.
# `make bench` (not part of `make test`) runs the benchmark suite in its own
# .venv-bench and rewrites docs/benchmarks.md and docs/img/.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The benchmark environment: memstore with its neural extra plus the peer and
# matplotlib (benchmarks/requirements.txt), never memstore dependencies.
BENCH_VENV      ?= .venv-bench
BENCH_STAMP     := $(BENCH_VENV)/.installed
BENCH_SIZES     ?= 10000,100000
BENCH_EMBEDDERS ?= hashing
BENCH_ARGS      ?=

.PHONY: install demo test lint typecheck clean bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,neural]'
	touch $(STAMP)

install: $(STAMP)

# Starts the embedded PostgreSQL (or uses MEMSTORE_DATABASE_URL), migrates a
# private embedded database, and prints the store's status.
demo: $(STAMP)
	$(BIN)/memstore demo

lint: $(STAMP)
	$(BIN)/ruff check memstore tests migrations

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest

$(BENCH_STAMP): pyproject.toml benchmarks/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[neural]' -r benchmarks/requirements.txt
	touch $(BENCH_STAMP)

# Every benchmark on one server (embedded, or MEMSTORE_DATABASE_URL); JSON and
# logs in build/bench/. 10k and 100k take about an hour on 2 busy cores; add
# 1000000 to BENCH_SIZES for the opt-in 1M point (see docs/benchmarks.md).
bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python benchmarks/suite.py --sizes $(BENCH_SIZES) \
		--embedders $(BENCH_EMBEDDERS) $(BENCH_ARGS) \
		--command "make bench BENCH_SIZES=$(BENCH_SIZES) BENCH_EMBEDDERS=$(BENCH_EMBEDDERS) $(BENCH_ARGS)"

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .mypy_cache .ruff_cache dist build

# The two commands of the README: `make demo` and `make test`.
# Each creates .venv and installs the package from a clean clone by itself.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint typecheck clean

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

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist build

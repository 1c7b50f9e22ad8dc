# The two set-up commands of README.md: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

$(BIN)/slidewise: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

.PHONY: install demo test test-fast test-spark lint
install: $(BIN)/slidewise

demo: install
	$(BIN)/slidewise demo --engine spark

# The suite CI runs: everything, Spark integration tests on local[2] included
# (Java 17 needed; 20-35 minutes on 2 cores).
test: install
	$(BIN)/python -m pytest -q src tests

# Everything but the Spark integration tests (no JVM; a few minutes).
test-fast: install
	$(BIN)/python -m pytest -q src tests -m "not spark"

# Only the Spark integration tests.
test-spark: install
	$(BIN)/python -m pytest -q tests/spark -m spark

# ruff over the package and the tests, mypy over the pure layers (model, plan, optimizer,
# archive, errors) and the query manager, import-linter over the import graph (the layers of docs/architecture.md); all
# configured in pyproject.toml. CI runs it before the tests.
lint: install
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The two set-up commands of README.md: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

$(BIN)/slidewise: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

.PHONY: install demo test test-spark
install: $(BIN)/slidewise

demo: install
	$(BIN)/slidewise demo

# The suite CI runs: everything but the Spark integration tests (no JVM needed).
test: install
	$(BIN)/python -m pytest -q src tests -m "not spark"

# Spark integration tests on local[2] (needs Java 17; several minutes).
test-spark: install
	$(BIN)/python -m pytest -q tests/spark -m spark

# The two set-up commands of README.md: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

$(BIN)/slidewise: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

.PHONY: install demo test
install: $(BIN)/slidewise

demo: install
	$(BIN)/slidewise demo

test: install
	$(BIN)/python -m pytest -q src tests

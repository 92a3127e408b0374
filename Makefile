# Two entry points for a fresh machine (see README): `make reproduce` and `make test`.
# Everything is installed into .venv from this project's own pyproject.toml.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: reproduce demo test lint install install-bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

# the benchmark extra (asv, numexpr) for asv_benches/
install-bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'

# the paper's experiments at quick sizes, every fusion mode and format, into results/
reproduce: $(STAMP)
	$(BIN)/fusedml reproduce --quick --out results

# a shorter tour: the patterns and the estimators' fit times under every fusion mode
demo: $(STAMP)
	$(BIN)/fusedml demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# one test worker per core: the suite is bound by numba compiling kernels, one at a time per process
test: lint
	$(BIN)/python -m pytest -q -n auto

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info results

# Two entry points for a fresh machine (see README): `make reproduce` and `make test`.
# Everything is installed into .venv from this project's own pyproject.toml.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: reproduce demo test lint install install-bench bench bench-smoke bench-site clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

# the benchmark extra (asv, numexpr) for asv_benches/
install-bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'

# asv (asv_benches/README.md): the regular profile on this checkout's installed package, results
# stored for HEAD (then `asv publish`); history runs over commits use asv's virtualenv mode
bench: install-bench
	$(BIN)/asv machine --yes > /dev/null
	FUSEDML_BENCH_PROFILE=regular $(BIN)/asv run --python=same --show-stderr \
		--set-commit-hash $$(git rev-parse HEAD)

# CI's: the suite's consistency (every module imported), then part of the fast profile once in
# a new kernel cache (about 2 minutes here): the cellwise micro-benchmark and every cold-start,
# optimizer and compression benchmark (the other micro-benchmarks compile every format x mode for
# 3 more minutes, the estimators' for 10 more: `make bench-smoke SMOKE=` runs everything)
SMOKE ?= -b '^(micro\.Cell|coldstart|optimizer|compression)\.' -b '^overhead\.CallOverhead'
bench-smoke: install-bench
	$(BIN)/asv machine --yes > /dev/null
	$(BIN)/asv check --python=same
	FUSEDML_BENCH_PROFILE=fast FUSEDML_CACHE_DIR=$$(mktemp -d) \
		$(BIN)/asv run --python=same --quick --show-stderr --durations 5 $(SMOKE)

# the site of every stored result (.asv/html), and a screenshot of one benchmark's graph page
BENCH_GRAPH ?= micro.Cell.time_evaluate
bench-site: install-bench
	$(BIN)/asv publish
	command -v chromium > /dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(BIN)/python asv_benches/site_screenshot.py $(BENCH_GRAPH) --log --out .asv/$(BENCH_GRAPH).png

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

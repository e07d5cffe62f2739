# bufsim: two commands, `make reproduce` and `make test`.
# The first use of any target creates .venv and installs bufsim into it from
# PyPI; editing pyproject.toml triggers a reinstall.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

# `make reproduce QUICK=1` runs the notebooks in quick mode;
# `make reproduce NOTEBOOKS="00 01"` runs only those (stems or prefixes).
QUICK ?=
# `make reproduce NOTEBOOKS=01 PARAMS='-p old_blocks_time_ms "[0, 1000, 3000]"'` runs them at
# your settings (papermill's -p, checked first; outputs under build/custom/, figures/ kept);
# `make reproduce JOBS=1` runs one notebook at a time (default: one per core);
# `make reproduce NO_CACHE=1` replays everything (see bufsim/cache.py).
NOTEBOOKS ?=
PARAMS ?=
JOBS ?=
NO_CACHE ?=

# One numba cache folder, the same from make, papermill and a JupyterLab kernel:
# bufsim/_numba_cache.py names it after a hash of the sources that use numba
# (bufsim/__init__.py applies the same rule when NUMBA_CACHE_DIR is unset).
export NUMBA_CACHE_DIR := $(shell $(PYTHON) bufsim/_numba_cache.py)
export BUFSIM_ROOT := $(CURDIR)

.DEFAULT_GOAL := help
.PHONY: help venv test test-slow reproduce docs bench clean distclean mariadb chromium

help:
	@echo "make reproduce   execute every notebook (build/notebooks/, figures/, build/summary.md)"
	@echo "make test        run the default test tier (pytest, not slow)"
	@echo "make docs        build the docs site into build/docs/ (with build/notebooks/ as make reproduce left them)"
	@echo "make test-slow   run every test tier, slow ones included (installs the bench extra)"
	@echo "make bench       run benchmarks/run.py (installs the bench extra)"
	@echo "make mariadb     install mariadb-server from Debian's packages if missing (no service started)"
	@echo "make chromium    install chromium and chromedriver from Debian's packages if missing"
	@echo "make clean       remove build outputs and caches (keeps .venv and figures/)"
	@echo "make distclean   clean, and remove .venv"

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[notebooks,test,docs]'
	touch $@

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -e '.[notebooks,test,docs,bench]'
	touch $@

# Debian's chromium for the browser test where we are root (else that test is skipped);
# the tests run on every core (pytest-xdist; `make test TEST_JOBS=0` runs them in one process).
# .ci/run calls `HYPOTHESIS_PROFILE=ci make test`: every property test at the example count
# it was written with, plus the full-size runs moved out of the default tier (marked slow and ci)
# tests/_warm.py first compiles the replay kernels once, on every core, into NUMBA_CACHE_DIR
# (a few seconds when they are there already): the workers and notebook kernels then load them
# instead of compiling them in the middle of the run, or waiting idle for another's compile
TEST_JOBS ?= auto
test: $(STAMP)
	@scripts/chromium.sh --if-root || echo "(the browser test will be skipped)"
	$(PY) -m tests._warm
	$(PY) -m pytest -n $(TEST_JOBS) $(if $(filter ci,$(HYPOTHESIS_PROFILE)),-m 'not slow or ci')

# the full suite: the default tier plus the tests marked slow
test-slow: $(BENCH_STAMP)
	$(PY) -m tests._warm
	$(PY) -m pytest -n $(TEST_JOBS) -m 'slow or not slow'

reproduce: $(STAMP)
	$(PY) -m bufsim notebooks run $(if $(QUICK),--quick) $(if $(JOBS),--jobs $(JOBS)) $(if $(NO_CACHE),--no-cache) $(PARAMS) $(NOTEBOOKS)

# the docs site: Sphinx, warnings as errors, internal links checked (scripts/build_docs.py)
docs: $(STAMP)
	$(PY) scripts/build_docs.py

bench: $(BENCH_STAMP)
	$(PY) benchmarks/run.py

# the live tier (tests marked live, notebook 07) starts its own private mariadbd
mariadb:
	scripts/mariadb-server.sh

# Debian's chromium and chromedriver for the browser test
chromium:
	scripts/chromium.sh

# build/ holds the result cache too (build/cache/, see bufsim/cache.py)
clean:
	rm -rf build .numba_cache .pytest_cache .hypothesis
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)

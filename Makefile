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
NOTEBOOKS ?=

# One numba cache folder, the same from make, papermill and a JupyterLab kernel:
# bufsim/_numba_cache.py names it after a hash of the sources that use numba
# (bufsim/__init__.py applies the same rule when NUMBA_CACHE_DIR is unset).
export NUMBA_CACHE_DIR := $(shell $(PYTHON) bufsim/_numba_cache.py)
export BUFSIM_ROOT := $(CURDIR)

.DEFAULT_GOAL := help
.PHONY: help venv test test-slow reproduce docs bench clean distclean mariadb

help:
	@echo "make reproduce   execute every notebook (build/notebooks/, figures/, build/summary.md)"
	@echo "make test        run the default test tier (pytest, not slow)"
	@echo "make docs        build the docs site into build/docs/ (with build/notebooks/ as make reproduce left them)"
	@echo "make test-slow   run every test tier, slow ones included (installs the bench extra)"
	@echo "make bench       run benchmarks/run.py (installs the bench extra)"
	@echo "make mariadb     install mariadb-server from Debian's packages if missing (no service started)"
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

test: $(STAMP)
	$(PY) -m pytest

# the full suite: the default tier plus the tests marked slow
test-slow: $(BENCH_STAMP)
	$(PY) -m pytest -m 'slow or not slow'

reproduce: $(STAMP)
	$(PY) -m bufsim notebooks run $(if $(QUICK),--quick) $(NOTEBOOKS)

# the docs site: Sphinx, warnings as errors, internal links checked (scripts/build_docs.py)
docs: $(STAMP)
	$(PY) scripts/build_docs.py

bench: $(BENCH_STAMP)
	$(PY) benchmarks/run.py

# the live tier (tests marked live, notebook 07) starts its own private mariadbd
mariadb:
	scripts/mariadb-server.sh

clean:
	rm -rf build .numba_cache .pytest_cache .hypothesis
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)

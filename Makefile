# dpsco-companion. Every target bootstraps .venv from pyproject.toml (re-installed when it changes),
# so `make book` and `make test` are all the set-up a fresh machine needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-16)
JOBS   ?= 2
PROFILE ?= paper
NB     ?=
export PYTHONHASHSEED := 0
export MPLBACKEND := Agg
# One BLAS thread per process: sweeps already use both cores through joblib, and oversubscribed
# BLAS threads made notebook kernels up to 30x slower under load.
export OMP_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export MKL_NUM_THREADS := 1

.PHONY: venv book test reproduce bench lint clean help

help:
	@echo "make book       execute every notebook (paper profile) and build the HTML book in _build/html"
	@echo "make test       lint, unit + statistical tests, every notebook at smoke, a book build check"
	@echo "make reproduce  NB='01 05' PROFILE=paper|smoke: rerun chosen notebooks (all when NB is empty)"
	@echo "make bench      performance suite -> benchmarks/results.json"
	@echo "make clean      remove _build, results and the result cache"

$(STAMP): pyproject.toml
	@rm -f $(VENV)/.installed-*
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[book,test,dist]'
	@touch $@

venv: $(STAMP)

book: venv
	$(BIN)/dpsco reproduce --profile paper --jobs $(JOBS)
	$(BIN)/dpsco build

reproduce: venv
	$(BIN)/dpsco reproduce $(NB) --profile $(PROFILE) --jobs $(JOBS)

lint: venv
	$(BIN)/ruff check dpsco_lib tests $(wildcard benchmarks)

# pytest exits 5 when it collected no test: that is a failure here, never a silent pass.
PYTEST_NO_TESTS = { code=$$?; [ $$code -eq 5 ] && echo "pytest collected no tests: failing the run"; exit $$code; }

test: venv lint
	$(BIN)/python -m pytest -n $(JOBS) -m "not book" tests || $(PYTEST_NO_TESTS)
	$(BIN)/python -m pytest -m book tests || $(PYTEST_NO_TESTS)

bench: venv
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf _build results .dpsco_cache .pytest_cache

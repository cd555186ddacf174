# perflab: `make reproduce` runs the whole pipeline; `make test` runs the test suite.
# Both install what they need first: Debian packages (as root), a venv, the Jupyter kernel.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
# jobs Snakemake runs at once (default: every core of the machine). Campaigns still measure one at a time: each
# takes the machine-wide measurement lock (perflab.hosts.measurelock) and a second one waits for it; only the
# analyses, tables and checks run beside each other. CORES=1 for one job at a time.
CORES ?= $(shell nproc 2>/dev/null || echo 1)
# processes of the test suite (pytest-xdist): a lab module's tests run in one of them, one after the other
TEST_WORKERS ?= 2
SNAKEMAKE := snakemake --cores $(CORES) --printshellcmds --rerun-incomplete

.PHONY: reproduce test lint install deps venv lock bench help rerun clean-outputs lab-up lab-down jupyter unlock

reproduce: install unlock ## install everything and run the whole pipeline on the embedded lab (CORES jobs at once, default nproc)
	$(SNAKEMAKE)
	@echo "Labs kept up so that a campaign can resume:"; perflab lab list

test: install lint ## install everything, lint, and run the test suite (in TEST_WORKERS processes, each lab module's tests in one)
	pytest -n $(TEST_WORKERS) --dist loadgroup -m "not alone"
	pytest -m alone

lint: install ## ruff and mypy over the code (configured in pyproject.toml)
	ruff check .
	mypy lib/perflab

install: deps venv

deps:
	bash scripts/install-debian.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e ".[test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name perflab --display-name "Python (perflab)" >/dev/null
	touch $@

lock: ## refresh requirements.lock from pyproject.toml in a fresh venv (then commit it)
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --upgrade pip
	.lock-venv/bin/python -m pip install --quiet -e ".[test]"
	{ echo "# Pinned versions of every Python package perflab installs (from pyproject.toml, extras [test])."; \
	  echo "# Refresh: make lock (a fresh venv, pip install -e .[test], pip freeze). make install uses this file."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^perflab'; } > requirements.lock
	rm -rf .lock-venv

rerun: install unlock ## measure CAMPAIGN again: its old raw data is moved aside, never deleted
	@test -n "$(CAMPAIGN)" || { echo "usage: make rerun CAMPAIGN=<campaign id>"; exit 2; }
	@if [ -d data/raw/$(CAMPAIGN) ]; then mkdir -p data/superseded && \
	  mv data/raw/$(CAMPAIGN) data/superseded/$(CAMPAIGN)-$$(date -u +%Y%m%dT%H%M%SZ) && \
	  echo "moved data/raw/$(CAMPAIGN) to data/superseded/"; fi
	$(SNAKEMAKE)

# The pipeline writes only under these paths (.gitignore's "Pipeline outputs" and LaTeX by-products); raw data stays.
OUTPUT_DIRS := data/processed paper/figures paper/tables paper/macros paper/sections
LATEX_LEFTOVERS := aux log out toc lof lot bbl bcf blg fls fdb_latexmk run.xml synctex.gz

clean-outputs: ## remove everything the pipeline regenerates (raw data stays)
	rm -rf reports logs paper/main.pdf
	find $(OUTPUT_DIRS) -mindepth 1 -not -name .gitkeep -delete
	find paper -type f \( $(foreach e,$(LATEX_LEFTOVERS),-name '*.$(e)' -o) -false \) -delete

# Snakemake locks the project (.snakemake/locks/) while it runs; a killed run leaves the lock behind
# and the next run stops with "Directory cannot be locked". `snakemake --unlock` removes it, which is
# only safe when no snakemake runs here: this target checks that first (a process whose command is
# snakemake, or an interpreter running it, with this directory as its working directory).
unlock: ## remove Snakemake's lock a killed run left (refused, naming the run, while snakemake runs here)
	@live=; for p in $$(pgrep -f '^([^ ]+ +(-m +)?)?([^ ]*/)?snakemake( |$$)'); do \
	  [ "$$(readlink /proc/$$p/cwd 2>/dev/null)" = "$(CURDIR)" ] && live="$$live $$p"; done; \
	if [ -n "$$live" ]; then for p in $$live; do \
	    echo "snakemake runs here: pid $$p ($$(tr '\0' ' ' < /proc/$$p/cmdline))"; done; \
	  echo "its lock in .snakemake/locks/ is live: wait for it to finish, or stop it (kill$$live), then rerun"; exit 1; \
	elif [ -n "$$(ls -A .snakemake/locks 2>/dev/null)" ]; then \
	  snakemake --unlock --cores 1 --quiet all >/dev/null && \
	  echo "removed Snakemake's stale lock (.snakemake/locks/, left by a run that no longer exists)"; fi

bench: install ## run perflab's own benchmarks; writes the results table into benchmarks/README.md
	python benchmarks/run.py

help: ## list the make targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 16

lab-up: install ## bring the flat lab of two hosts up (perflab lab up --file labs/NAME.yaml for a lab file)
	perflab lab up --hosts 2

lab-down: ## remove the lab
	perflab lab down

# As root (the setup's usual case) JupyterLab needs --allow-root; no browser is started (open the URL it prints).
jupyter: install ## open the notebooks in JupyterLab on the project's kernel (prints the URL to open)
	jupyter lab --no-browser $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

# coflowbed: `make run` (the default scenario, an LLM job, compared under fair and Hermod,
# end to end: runs, table with 95 % CIs, plots, report.html), `make test`, `make lint`,
# `make stop`, `make clean`.  run, test and lint install what is missing first (scripts/install.sh, idempotent).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
SCENARIO ?= coflowbed/scenarios/default.yaml
POLICIES ?= fair,hermod
REPEAT ?= 3
PYTEST_ARGS ?=

.PHONY: install run test unit lint stop clean p4 bench

install:
	./scripts/install.sh

RUN_STAMP := $(shell date +%Y%m%d-%H%M%S)
OUT ?= results/default-$(RUN_STAMP)

# Sampling stays off (it was measured to slow some runs: docs/results.md); the mechanism
# demo is `make run SCENARIO=coflowbed/scenarios/mechanism.yaml POLICIES=static REPEAT=1`.
run: install
	$(PY) -m coflowbed compare $(SCENARIO) --policies $(POLICIES) --repeat $(REPEAT) --out $(OUT)
	$(PY) -m coflowbed report $(OUT)

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

unit: install
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

# ruff (lint, then format check) and mypy over coflowbed, controller, topo and workload;
# their settings are in pyproject.toml, their versions pinned in requirements.txt.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# End whatever a run of this project left behind (its processes by PID, its bridges,
# veths and namespaces); touches nothing else on the machine.
stop:
	@if [ -x $(PY) ]; then $(PY) -m coflowbed clean; else echo "nothing installed"; fi

clean: stop
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

bench: install
	$(PY) benchmarks/run_all.py

# Compile p4src/coflowbed.p4 with p4c into the committed BMv2 JSON + P4Info
# (p4src/compiled/); `$(PY) -m controller.p4runtime.artifacts check` says if they are stale.
p4:
	$(PY) -m controller.p4runtime.artifacts compile

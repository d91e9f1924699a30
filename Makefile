# coflowbed: `make run` (default scenario end to end), `make test`, `make stop`, `make clean`.
# Both run and test install what is missing first (scripts/install.sh, idempotent).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
SCENARIO ?= coflowbed/scenarios/default.yaml
PYTEST_ARGS ?=

.PHONY: install run test unit stop clean p4 bench

install:
	./scripts/install.sh

run: install
	$(PY) -m coflowbed run $(SCENARIO)

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

unit: install
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

# End whatever a run of this project left behind (its processes by PID, its bridges,
# veths and namespaces); touches nothing else on the machine.
stop:
	@if [ -x $(PY) ]; then $(PY) -m coflowbed clean; else echo "nothing installed"; fi

clean: stop
	rm -rf build .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

bench: install
	$(PY) benchmarks/run_all.py

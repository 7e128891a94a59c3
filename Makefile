# The two set-up commands of the README:
#   make demo   - create .venv if missing, install srifty, plan the bundled example
#   make test   - create .venv if missing, install srifty with torch and dev tools, lint, run every test
# Both work on a fresh machine. torch is pinned in pyproject.toml (see docs/architecture.md).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO_SPEC ?= examples/case5-bert.yaml
PYTEST_ARGS ?=

SKY_VENV := .venv-sky

.PHONY: demo test lint unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Core install: enough to plan with the bundled profiles and network model.
$(VENV)/.stamp-core: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

# Everything: torch (profiling, probes, DDP), transformers, and the dev tools.
$(VENV)/.stamp-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[torch,dev]'
	touch $@ $(VENV)/.stamp-core

# SkyPilot in a venv of its own (srifty never imports it), for the tests: exported task YAML checked with
# SkyPilot's own schema and dry run, `srifty launch` against a stand-in cloud (tests/sky_stub.py), and
# SkyPilot's optimizer calling srifty's time estimator in SkyPilot's process, so srifty (no extras) is installed
# there too: pip resolves it beside skypilot 0.14.1 without changing SkyPilot's pins. The [aws] extra (boto3)
# is what SkyPilot's AWS dry run needs. The stamp names what is installed, so a change reinstalls.
SKY_STAMP := $(SKY_VENV)/.stamp-0.14.1-aws-srifty
$(SKY_STAMP): pyproject.toml
	test -x $(SKY_VENV)/bin/python || $(PYTHON) -m venv $(SKY_VENV)
	$(SKY_VENV)/bin/python -m pip install -q 'skypilot[aws]==0.14.1' -e .
	touch $@

demo: $(VENV)/.stamp-core
	$(BIN)/srifty plan $(DEMO_SPEC)

lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

test: lint $(SKY_STAMP)
	$(BIN)/python -m pytest -n 2 --timeout 600 --durations=25 $(PYTEST_ARGS)

unit: $(VENV)/.stamp-dev
	$(BIN)/python -m pytest -n 2 -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(SKY_VENV) .pytest_cache .mypy_cache .ruff_cache build dist

# eqa_runner developer commands. `make help` lists them.
PY := .venv/bin/python
DEMO ?= data/demo

.PHONY: help setup demo test test-fast lint format bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

setup:  ## venv + package + system library (idempotent)
	@bash scripts/setup.sh

demo: setup  ## write the offline demo data (kept when already written) and run the main job on it (no network)
	@echo "demo: writing the offline demo datasets to $(DEMO) (kept when written for the same seed; about a minute the first time)"
	$(PY) -m eqa_runner.demo $(DEMO)
	$(PY) -m eqa_runner task=openeqa_em policy=multiframe llm=offline judge.model=offline task.data_dir=$(DEMO)/openeqa

test:  ## set-up (+ chromium) and the whole suite (slow included; slurm tests need SLURM_CONF): before a commit, CI
	@bash scripts/setup.sh --test
	$(PY) -m pytest

test-fast: setup  ## the suite without slow tests (no process started; ~2 min): after every change
	$(PY) -m pytest -m "not slow"

lint:  ## ruff lint + format check, mypy, the layer contracts (lint-imports)
	$(PY) -m ruff check . && $(PY) -m ruff format --check .
	$(PY) -m mypy
	$(dir $(PY))lint-imports

format:  ## ruff format + autofix
	$(PY) -m ruff format . && $(PY) -m ruff check --fix .

bench: setup  ## run the benchmarks (results: docs/benchmarks.md)
	$(PY) bench/frame_pipeline.py && $(PY) bench/run_loop.py && $(PY) bench/startup.py

clean:  ## remove outputs and caches (keeps data/)
	rm -rf outputs multirun .cache .pytest_cache .ruff_cache .mypy_cache .import_linter_cache

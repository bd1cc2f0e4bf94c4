# WCCPv2 hardware redirector — top-level entry points.
#   make run    the simulated appliance (sets itself up)
#   make check  the everyday tier: lint, then every test not marked slow (sets itself up)
#   make test   the whole test suite, as CI runs it (sets itself up)
#   make lab    the inline lab: clients, origin, Squid caches and the appliance in namespaces (root)
#   make lint   ruff (Python, firmware included) and Verilator lint (RTL)
#   make bench  benchmarks; results are recorded in docs/performance.md
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

RTL_SOURCES := $(wildcard fpga/rtl/*.v)

.PHONY: all setup system run lab check test lint lint-py lint-verilog bench synth clean

all: test

system:
	@scripts/setup-system.sh

$(VENV)/.stamp: requirements.txt pyproject.toml scripts/setup-venv.sh
	scripts/setup-venv.sh

setup: system $(VENV)/.stamp

run: setup
	$(VENV)/bin/wccp run --fpga $${FPGA:-rtl}

lab: setup   # the inline lab (root): clients, origin, Squid caches, the appliance; FPGA=twin-model for the fast model
	$(VENV)/bin/wccp lab --fpga $${FPGA:-rtl} $(LAB_ARGS)

# Tests run on TEST_WORKERS pytest-xdist processes (auto: one per CPU core; 0: no xdist,
# one process). --dist loadgroup keeps each module that reuses fixed addresses on one worker
# (conftest.py, which also says which tests are `slow`: whole suite only, and orders them
# first; --no-loadscope-reorder keeps that order instead of xdist's largest-unit-first). PYTEST_ARGS is
# appended (e.g. PYTEST_ARGS="-k twin --durations=20"); PYTEST_XDIST= (empty) drops the
# parallel options altogether.
TEST_WORKERS ?= auto
PYTEST_XDIST ?= -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

check: lint
	$(PY) -m pytest $(PYTEST_XDIST) -m "not slow" $(PYTEST_ARGS)

test: setup
	$(PY) -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

lint: lint-py lint-verilog

lint-py: setup
	$(VENV)/bin/ruff check .

lint-verilog: setup
	@if [ -n "$(RTL_SOURCES)" ]; then \
	  $(VENV)/bin/verilator --lint-only -Wall -Ifpga/rtl --top-module $${LINT_TOP:-fpga_core} $(RTL_SOURCES); \
	else echo "no RTL yet"; fi

bench: setup
	$(PY) bench/run_all.py

synth: setup
	$(VENV)/bin/wccp synth --board $${BOARD:-colorlight_i9}

clean:
	rm -rf build sim_build* .pytest_cache .ruff_cache

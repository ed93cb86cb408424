#!/usr/bin/env bash
# `make test`: sets up what the tests need, each step timed, then runs the suite.
#
# The two cores are kept busy: llama-server's build (the one long compile; llama-cpp-python is
# then installed over its libraries) and milvus-lite's environment start first, in the
# background, while the Python environment installs and the tests that need no real model run.
# The real-model tests are ordered last (tests/conftest.py) and those that need a built server
# wait for the builds. The run ends with every setup step's time and the 15 slowest tests
# (nothing asserts a time: machines are noisy, the table is there to be read).
#
#   bash scripts/test.sh [pytest arguments]
#
# Each step's output goes to .biorag/test-report/<step>.log; the times to setup_times.jsonl and
# the tests' durations to durations.json there (benchmarks/test_timings.py renders them).
set -uo pipefail
cd "$(dirname "$0")/.."

REPORT="$PWD/.biorag/test-report"
mkdir -p "$REPORT"
export BIORAG_TEST_SETUP_TIMES="$REPORT/setup_times.jsonl"
export BIORAG_TEST_BUILDS_DONE="$REPORT/builds.done"
export BIORAG_TEST_DURATIONS="$REPORT/durations.json"
export BIORAG_TEST_STARTED
BIORAG_TEST_STARTED=$(date +%s)
: >"$BIORAG_TEST_SETUP_TIMES"
rm -f "$BIORAG_TEST_BUILDS_DONE" "$BIORAG_TEST_DURATIONS"
PYTHON="${PYTHON:-python3}"
VENV_PY="$PWD/.venv/bin/python"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# step NAME CMD...: runs CMD with its output in $REPORT/NAME.log and records its wall time.
step() {
  local name=$1 start rc
  shift
  start=$(now_ms)
  "$@" >"$REPORT/$name.log" 2>&1
  rc=$?
  local ms=$(($(now_ms) - start))
  printf '{"step": "%s", "seconds": %d.%03d, "rc": %d, "started_s": %d}\n' "$name" \
    $((ms / 1000)) $((ms % 1000)) "$rc" $((start / 1000 - BIORAG_TEST_STARTED)) \
    >>"$BIORAG_TEST_SETUP_TIMES"
  if ((rc != 0)); then
    echo "make test: step '$name' failed (exit $rc); the end of $REPORT/$name.log:" >&2
    tail -20 "$REPORT/$name.log" >&2
  fi
  return "$rc"
}

# optional NAME WHAT CMD...: a step whose failure makes its tests skip (they say why), not fail.
optional() {
  local name=$1 what=$2
  shift 2
  step "$name" "$@" || echo "make test: $what could not be set up: its tests will skip" >&2
}

# pip downloads the llama.cpp sources with the system python where it has pip, so the compile
# starts at once; otherwise with the project's environment, once installed.
if "$PYTHON" -m pip --version >/dev/null 2>&1; then BUILD_PY="$PYTHON"; else BUILD_PY=""; fi

builds() {
  if [[ -z "$BUILD_PY" ]]; then
    while [[ ! -x "$VENV_PY" || ! -f .venv/.installed-stamp ]]; do sleep 2; done
    BUILD_PY="$VENV_PY"
  fi
  optional llama-server "llama-server" env PYTHON="$BUILD_PY" bash scripts/build-llama-server.sh
  optional llama-cpp-python "llama-cpp-python's server" \
    env PYTHON="$BUILD_PY" bash scripts/build-llama-cpp-python.sh
  touch "$BIORAG_TEST_BUILDS_DONE"
}

echo "make test: building llama-server and installing milvus-lite in the background" \
  "(logs in $REPORT)" >&2
builds &
BUILDS=$!
optional milvus-server "milvus-lite" env PYTHON="$PYTHON" bash scripts/install-milvus-lite.sh &
MILVUS=$!
trap 'kill $BUILDS $MILVUS 2>/dev/null' INT TERM

step install make -s install || exit 1
optional mpnet "all-mpnet-base-v2" make -s mpnet
optional graph-server "arcadedb-embedded" make -s graph-server
optional ray "ray[data]" make -s ray
optional java "a Java runtime (the BioASQ evaluator)" bash scripts/install-java.sh
step ruff .venv/bin/ruff check src tests benchmarks devkit || exit 1
step mypy .venv/bin/mypy src || exit 1
wait "$MILVUS"

"$VENV_PY" -m pytest -q "$@"
rc=$?
wait "$BUILDS"
exit "$rc"

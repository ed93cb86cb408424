#!/usr/bin/env bash
# Builds llama-cpp-python's OpenAI-compatible server (PyPI source package, compiled with cmake)
# into its own virtual environment in a cache outside the clone, once per machine. Prints the
# environment's python on stdout; progress goes to stderr. Used by the real-server tests of
# tests/real_llm/test_llama_cpp_python_server.py, which skip (saying why) until it is built.
#
#   scripts/build-llama-cpp-python.sh            # build if missing, print the python
#   scripts/build-llama-cpp-python.sh --check    # print the python if built, else exit 5
#   LLAMA_CPP_PYTHON_CACHE=/somewhere scripts/build-llama-cpp-python.sh
#
# The cache key holds the package version and the CPU's feature flags (the build is native).
set -euo pipefail

main() {
  VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
  CACHE="${LLAMA_CPP_PYTHON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/biorag/llama-cpp-python}"
  PY="${PYTHON:-python3}"
  cpu_key=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | md5sum | cut -c1-8 || echo generic)
  DEST="$CACHE/$VERSION-$cpu_key"
  BIN="$DEST/venv/bin/python"
  if [[ -x "$BIN" && -f "$DEST/build_seconds" ]]; then
    echo "$BIN"
    exit 0
  fi
  if [[ "${1:-}" == "--check" ]]; then
    echo "build-llama-cpp-python: not built yet ($DEST); run scripts/build-llama-cpp-python.sh" >&2
    exit 5
  fi
  for tool in c++; do
    if ! command -v "$tool" >/dev/null; then
      echo "build-llama-cpp-python: '$tool' is not installed (apt-get install g++)" >&2
      exit 3
    fi
  done
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -x "$BIN" && -f "$DEST/build_seconds" ]]; then echo "$BIN"; exit 0; fi
  start=$(date +%s)
  # an unfinished build (no build_seconds) is started over
  rm -rf "$DEST"
  "$PY" -m venv "$DEST/venv"
  echo "build-llama-cpp-python: compiling llama-cpp-python==$VERSION on $(nproc) cores" \
    "(about 4 min on 2 idle cores, 10 beside other work)" >&2
  # The library only: no tests, examples or tools; no network code.
  CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$DEST/venv/bin/pip" install --quiet --no-cache-dir \
    "llama-cpp-python[server]==$VERSION" >"$CACHE/build.log" 2>&1 || {
    tail -40 "$CACHE/build.log" >&2; exit 4; }
  echo "$(( $(date +%s) - start ))" >"$DEST/build_seconds"  # the mark of a finished build
  echo "build-llama-cpp-python: built in $(cat "$DEST/build_seconds") s -> $BIN" >&2
  echo "$BIN"
}

main "$@"

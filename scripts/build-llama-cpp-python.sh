#!/usr/bin/env bash
# Installs llama-cpp-python's OpenAI-compatible server (the PyPI source package) into its own
# virtual environment in a cache outside the clone, once per machine, over the llama.cpp shared
# libraries that scripts/build-llama-server.sh built from the same source package: the package is
# installed with LLAMA_BUILD=OFF (nothing compiled, under a minute) and the libraries are copied
# into its lib folder. Prints the environment's python on stdout; progress goes to stderr. Used by
# the real-server tests of tests/real_llm/test_llama_cpp_python_server.py, which skip (saying why)
# until it is installed.
#
#   scripts/build-llama-cpp-python.sh            # install if missing (building llama-server's
#                                                # libraries first if they are missing), print
#                                                # the python
#   scripts/build-llama-cpp-python.sh --check    # print the python if installed, else exit 5
#   LLAMA_CPP_PYTHON_CACHE=/somewhere scripts/build-llama-cpp-python.sh
#
# The cache key holds the package version and the CPU's feature flags (the libraries are native).
set -euo pipefail

main() {
  VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
  CACHE="${LLAMA_CPP_PYTHON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/biorag/llama-cpp-python}"
  PY="${PYTHON:-python3}"
  HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  cpu_key=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | md5sum | cut -c1-8 || echo generic)
  DEST="$CACHE/$VERSION-shared-noamx-$cpu_key"  # over build-llama-server.sh's noamx libraries
  BIN="$DEST/venv/bin/python"
  if [[ -x "$BIN" && -f "$DEST/build_seconds" ]]; then
    echo "$BIN"
    exit 0
  fi
  if [[ "${1:-}" == "--check" ]]; then
    echo "build-llama-cpp-python: not installed yet ($DEST); run scripts/build-llama-cpp-python.sh" >&2
    exit 5
  fi
  # the libraries: llama-server's build (built now if missing: the one long compile)
  server=$(LLAMA_CPP_PYTHON_VERSION="$VERSION" PYTHON="$PY" bash "$HERE/build-llama-server.sh")
  LIBS="$(dirname "$server")"
  if ! compgen -G "$LIBS/libllama.so*" >/dev/null; then
    echo "build-llama-cpp-python: no libllama.so beside $server (rebuild it: remove $LIBS/..)" >&2
    exit 4
  fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -x "$BIN" && -f "$DEST/build_seconds" ]]; then echo "$BIN"; exit 0; fi
  start=$(date +%s)
  # an unfinished install (no build_seconds) is started over
  rm -rf "$DEST"
  "$PY" -m venv "$DEST/venv"
  echo "build-llama-cpp-python: installing llama-cpp-python==$VERSION over $LIBS" >&2
  CMAKE_ARGS="-DLLAMA_BUILD=OFF" "$DEST/venv/bin/pip" install --quiet --no-cache-dir \
    "llama-cpp-python[server]==$VERSION" >"$CACHE/build.log" 2>&1 || {
    tail -40 "$CACHE/build.log" >&2; exit 4; }
  site=$("$BIN" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
  mkdir -p "$site/llama_cpp/lib"
  cp -a "$LIBS"/lib*.so* "$site/llama_cpp/lib/"
  "$BIN" -c 'import llama_cpp, llama_cpp.server' >>"$CACHE/build.log" 2>&1 || {
    echo "build-llama-cpp-python: llama_cpp does not load over $LIBS:" >&2
    tail -20 "$CACHE/build.log" >&2; exit 4; }
  echo "$(( $(date +%s) - start ))" >"$DEST/build_seconds"  # the mark of a finished install
  echo "build-llama-cpp-python: installed in $(cat "$DEST/build_seconds") s -> $BIN" >&2
  echo "$BIN"
}

main "$@"

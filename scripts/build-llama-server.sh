#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the llama.cpp sources vendored in the llama-cpp-python
# source package on PyPI (cmake, the server target only) into a cache outside the clone, once per
# machine. Prints the binary's path on stdout; progress goes to stderr.
#
# The libraries are built shared (libllama, libggml*, libmtmd beside the binary, found through
# an $ORIGIN run path): scripts/build-llama-cpp-python.sh installs llama-cpp-python over these
# same libraries instead of compiling llama.cpp a second time (they come from the same source
# package, so the Python bindings match them).
#
#   scripts/build-llama-server.sh            # build if missing, print the path
#   scripts/build-llama-server.sh --check    # print the path if built, else exit 5
#   LLAMA_SERVER_CACHE=/somewhere scripts/build-llama-server.sh
#
# The cache key holds the package version and the CPU's feature flags (the build is native),
# and "noamx": the build is native except for Intel AMX. A CPU can list AMX while its kernel or
# hypervisor never grants a process the tile state (a Firecracker VM on Sapphire Rapids, say):
# ggml's AMX kernels then die with SIGILL on the first matrix product (tilezero), so they are
# not compiled in. AVX-512 and VNNI stay.
set -euo pipefail

# Everything runs inside main, which bash reads whole before running: editing this file while
# a build runs cannot derail it.
main() {
  VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
  CACHE="${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/biorag/llama-server}"
  PY="${PYTHON:-python3}"
  cpu_key=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | md5sum | cut -c1-8 || echo generic)
  DEST="$CACHE/$VERSION-shared-noamx-$cpu_key"
  BIN="$DEST/bin/llama-server"
  if [[ -x "$BIN" ]]; then
    echo "$BIN"
    exit 0
  fi
  if [[ "${1:-}" == "--check" ]]; then
    echo "build-llama-server: not built yet ($BIN); run scripts/build-llama-server.sh" >&2
    exit 5
  fi
  for tool in cmake c++; do
    if ! command -v "$tool" >/dev/null; then
      echo "build-llama-server: '$tool' is not installed (apt-get install cmake g++)" >&2
      exit 3
    fi
  done
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -x "$BIN" ]]; then echo "$BIN"; exit 0; fi
  # The build folder is kept when a build fails or is interrupted: the next run goes on from it.
  WORK="$CACHE/.build-$VERSION-shared-noamx-$cpu_key"
  mkdir -p "$WORK"
  start=$(date +%s)
  if [[ ! -d "$WORK/llama_cpp_python-$VERSION" ]]; then
    echo "build-llama-server: fetching llama-cpp-python==$VERSION (source) from PyPI" >&2
    "$PY" -m pip download --quiet --no-deps --no-binary :all: -d "$WORK" \
      "llama-cpp-python==$VERSION" >&2
    tar -xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
  fi
  SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
  NO_AMX=""  # explicit -mno-* flags win over what -march=native turns on (x86 only)
  if [[ "$(uname -m)" == "x86_64" ]]; then NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"; fi
  echo "build-llama-server: configuring $SRC" >&2
  cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_CURL=OFF -DGGML_NATIVE=ON "-DCMAKE_C_FLAGS=$NO_AMX" "-DCMAKE_CXX_FLAGS=$NO_AMX" \
    >"$WORK/configure.log" 2>&1 || {
    tail -30 "$WORK/configure.log" >&2; exit 4; }
  echo "build-llama-server: compiling the llama-server target and its shared libraries on $(nproc) cores" >&2
  cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >"$WORK/build.log" 2>&1 || {
    tail -40 "$WORK/build.log" >&2; exit 4; }
  mkdir -p "$DEST.tmp/bin"
  cp "$WORK/build/bin/llama-server" "$DEST.tmp/bin/"
  cp -a "$WORK"/build/bin/lib*.so* "$DEST.tmp/bin/"
  "$DEST.tmp/bin/llama-server" --version >/dev/null 2>&1 || {
    echo "build-llama-server: the built binary does not start (missing libraries?)" >&2; exit 4; }
  cp "$SRC/LICENSE" "$DEST.tmp/LICENSE.llama.cpp"
  echo "$(( $(date +%s) - start ))" >"$DEST.tmp/build_seconds"
  rm -rf "$DEST"
  mv "$DEST.tmp" "$DEST"
  rm -rf "$WORK"
  echo "build-llama-server: built in $(cat "$DEST/build_seconds") s -> $BIN" >&2
  echo "$BIN"
}

main "$@"

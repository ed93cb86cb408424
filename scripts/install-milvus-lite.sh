#!/usr/bin/env bash
# Installs milvus-lite (PyPI; pure Python, FAISS inside) into its own virtual environment in a
# cache outside the clone, once per machine, as the Milvus server of the Milvus tests: they start
# `milvus-lite server --host 127.0.0.1` on a free port (devkit/milvus.py; bench_milvus.py too).
# Prints the server command's path on stdout; progress goes to stderr.
#
#   scripts/install-milvus-lite.sh            # install if missing, print the command
#   scripts/install-milvus-lite.sh --check    # print the command if installed, else exit 5
#   MILVUS_LITE_CACHE=/somewhere scripts/install-milvus-lite.sh
set -euo pipefail

main() {
  VERSION="${MILVUS_LITE_VERSION:-3.2.2}"
  CLIENT="${PYMILVUS_VERSION:-3.0.2}"
  CACHE="${MILVUS_LITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/biorag/milvus-lite}"
  PY="${PYTHON:-python3}"
  DEST="$CACHE/$VERSION"
  BIN="$DEST/venv/bin/milvus-lite"
  if [[ -x "$BIN" && -f "$DEST/installed" ]]; then
    echo "$BIN"
    exit 0
  fi
  if [[ "${1:-}" == "--check" ]]; then
    echo "install-milvus-lite: not installed yet ($DEST); run scripts/install-milvus-lite.sh" >&2
    exit 5
  fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -x "$BIN" && -f "$DEST/installed" ]]; then echo "$BIN"; exit 0; fi
  rm -rf "$DEST"
  start=$(date +%s)
  "$PY" -m venv "$DEST/venv"
  # the server imports pymilvus's gRPC definitions, so both go in
  "$DEST/venv/bin/pip" install --quiet "milvus-lite==$VERSION" "pymilvus==$CLIENT" \
    >"$CACHE/install.log" 2>&1 || { tail -20 "$CACHE/install.log" >&2; exit 4; }
  echo "$(( $(date +%s) - start ))" >"$DEST/installed"
  echo "install-milvus-lite: installed in $(cat "$DEST/installed") s -> $BIN" >&2
  echo "$BIN"
}

main "$@"

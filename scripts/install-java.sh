#!/usr/bin/env bash
# A Java runtime for the BioASQ evaluator (../shared/official/bioasq), which the tests run to
# compare biorag's official scoring with it: kept if present, else installed from Debian's
# packages where this user may (root, apt-get). Without one those tests skip and say why.
set -euo pipefail
if command -v java >/dev/null 2>&1; then
  java -version 2>&1 | head -1
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless
  java -version 2>&1 | head -1
  exit 0
fi
echo "no java and no way to install one here (not root, or no apt-get)" >&2
exit 1

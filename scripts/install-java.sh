#!/usr/bin/env bash
# A Java runtime for the BioASQ evaluator (../shared/official/bioasq), which the tests run to
# compare biorag's official scoring with it: kept if present, else installed from Debian's
# packages where this user may (root, apt-get). Without one those tests skip and say why, or
# fail where BIORAG_REQUIRE_OFFICIAL=1 (CI: .ci/run).
set -euo pipefail
if command -v java >/dev/null 2>&1; then
  java -version 2>&1 | head -1
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  # openjdk's postinst links its man pages into /usr/share/man/man1, which slim images lack.
  mkdir -p /usr/share/man/man1
  # The package lists are read first where they name no such package (a slim image ships none);
  # the install is retried once after a fresh update, in case the lists were stale.
  if ! apt-cache show default-jre-headless >/dev/null 2>&1; then
    apt-get update -qq
  fi
  if ! apt-get install -y -qq default-jre-headless; then
    apt-get update -qq
    apt-get install -y -qq default-jre-headless
  fi
  java -version 2>&1 | head -1
  exit 0
fi
echo "no java and no way to install one here (not root, or no apt-get)" >&2
exit 1

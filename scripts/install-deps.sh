#!/usr/bin/env bash
# Install the build and test dependencies from Debian's packages, and the
# packages named as arguments (scripts that need more: integrations/sqlite/scripts/sqlite-test.sh).
# Idempotent: packages already present are left as they are.
#   scripts/install-deps.sh              build, tests (abigail-tools: the ABI check;
#                                        fuse3, libfuse3-dev, fio: slowfs and its validation)
#   scripts/install-deps.sh --packaging  also what building and linting the
#                                        Debian packages takes (scripts/package-test.sh)
#   scripts/install-deps.sh [--packaging] PKG...  and the packages named too
set -euo pipefail
PKGS=(build-essential cmake pkg-config liblz4-dev libzstd-dev zlib1g-dev libssl-dev libjemalloc-dev
      libcmocka-dev sqlite3 libsqlite3-dev postgresql-server-dev-15 python3 python3-matplotlib
      lz4 zstd gzip clang
      libclang-rt-14-dev abigail-tools fuse3 libfuse3-dev fio)
if [ "${1:-}" = --packaging ]; then
  PKGS+=(dpkg-dev debhelper devscripts lintian fakeroot help2man)
  shift
fi
PKGS+=("$@")
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

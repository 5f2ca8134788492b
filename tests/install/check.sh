#!/usr/bin/env bash
# Install the built library into a scratch prefix and build and run consumers
# against it (consume.sh); with the SQLite extension built, cmake --install
# must install it and its header too. usage: check.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
if [ -e "$build/integrations/sqlite/bfsqlite.so" ]; then
  for f in lib/bfsqlite.so lib/libbfsqlite.a lib/pkgconfig/bfsqlite.pc include/bfsqlite.h; do
    [ -e "$work/prefix/$f" ] || { echo "check.sh: cmake --install did not install $f"; exit 1; }
  done
fi
bash "$(dirname "$0")/consume.sh" "$work/prefix" "$work/consumer"

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
# The installed report tool (with the TPC-H tools) finds paired.c's library from where it
# is installed: its statistics work without the source tree or the environment's help.
pkg=$work/prefix/share/buffile
if [ -d "$pkg/tpch_report" ]; then
  (cd "$work" && env -u BUFFILE_PAIRED_LIB PYTHONPATH="$pkg" python3 -c '
from tpch_report import stats
iv = stats.ratio([10, 11, 9, 10.5, 9.5], [10] * 5)
assert abs(iv.lo - 0.903950987) < 1e-6, iv
print("installed tpch_report.stats:", stats.library_path())')
fi

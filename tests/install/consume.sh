#!/usr/bin/env bash
# Build tests/install/consumer.c against an installed libbuffile - with
# find_package(buffile) (shared and static targets) and with pkg-config - and
# run each build, checking that the shared ones load the library under
# PREFIX; then, where the SQLite extension is installed, an application of
# bfsqlite.h (pkg-config bfsqlite) and the sqlite3 shell's .load of it.
# Also what the installed metadata must not do: pkg-config paths that are not
# plain (.../pkgconfig/../../../include), a find_package(buffile) that needs
# pkg-config or leaves cache entries of its dependencies (LZ4_*, ZSTD_*, ...)
# in the consumer's cache, or a shared consumer linked to the codecs itself.
#   usage: consume.sh PREFIX WORK_DIR   (PREFIX /usr: the system's, as the
#   Debian packages install it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$1 work=$2
fail() { echo "consume.sh: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work/project" "$work/sqlite"
cp "$here/consumer.c" "$work/project/"
cp "$here/CMakeLists.txt.in" "$work/project/CMakeLists.txt"
cmake_args=() run_env=()
if [ "$prefix" != /usr ]; then
  cmake_args=(-DCMAKE_PREFIX_PATH="$prefix")
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  run_env=(env LD_LIBRARY_PATH="$prefix/lib")
fi

# pkg-config: plain absolute paths (and none at all for /usr/include, a system directory).
flags=$(pkg-config --cflags --libs buffile)
case "$flags" in
  *"/../"* | *"/./"* | *"//"*) fail "pkg-config buffile gives paths that are not plain: $flags" ;;
esac
libdir=$(pkg-config --variable=libdir buffile)
if [ "$prefix" = /usr ] && [ -n "$(pkg-config --cflags buffile)" ]; then
  fail "pkg-config --cflags buffile gives '$(pkg-config --cflags buffile)' for /usr/include"
fi

# find_package with pkg-config out of reach: the config must need none of it.
cmake -S "$work/project" -B "$work/cmake-build" "${cmake_args[@]}" --no-warn-unused-cli \
  -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON >/dev/null
leaked=$(grep -E '^(LZ4|ZSTD|ZLIB|CRYPTO|PC_[A-Z]+|PKG_CONFIG)_[A-Za-z_]*:' \
  "$work/cmake-build/CMakeCache.txt" || true)
[ -z "$leaked" ] || fail "find_package(buffile) left cache entries in the consumer: $leaked"
cmake --build "$work/cmake-build" >/dev/null
needed=$(readelf -d "$work/cmake-build/consumer" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in liblz4 libzstd libz libcrypto; do
  if grep -q "^$lib\." <<< "$needed"; then
    fail "the find_package consumer of the shared library links $lib itself: $(echo $needed)"
  fi
done
cc "$work/project/consumer.c" $flags -o "$work/pc-consumer"
for exe in "$work/cmake-build/consumer" "$work/pc-consumer"; do
  lib=$("${run_env[@]}" ldd "$exe" | awk '$1 == "libbuffile.so.1" {print $3}')
  case "$(readlink -f "$lib")" in
    "$(readlink -f "$prefix")"/lib/*) ;;
    *) fail "$exe loads libbuffile.so.1 from '$lib', not from $prefix" ;;
  esac
  "${run_env[@]}" "$exe"
done
if grep -q libbuffile <<< "$(ldd "$work/cmake-build/consumer_static")"; then
  fail "consumer_static links libbuffile.so"
fi
"$work/cmake-build/consumer_static"
echo "consume.sh: find_package (shared, static; no pkg-config) and pkg-config consumers built against $prefix and ran"

# The SQLite extension, where it is installed: an application of bfsqlite.h, and .load in
# the sqlite3 shell (by name where the loader looks by default, as /usr/lib/<triplet> is).
if [ -e "$libdir/bfsqlite.so" ]; then
  cc "$here/sqlite_consumer.c" $(pkg-config --cflags --libs bfsqlite) -o "$work/sqlite-consumer"
  "${run_env[@]}" "$work/sqlite-consumer" "$work/sqlite"
  name=$([ "$prefix" = /usr ] && echo bfsqlite || echo "$libdir/bfsqlite")
  out=$(BFSQLITE_OPTIONS=codec=zstd SQLITE_TMPDIR="$work/sqlite" sqlite3 -batch <<SQL
.load $name
.open $work/sqlite/load.db
SELECT vfs, is_default, codec FROM buffile_stats;
SQL
)
  [ "$out" = "buffile|1|zstd" ] || fail ".load $name in the sqlite3 shell gave '$out'"
  echo "consume.sh: bfsqlite.h (pkg-config bfsqlite) and .load $name in the sqlite3 shell work"
fi

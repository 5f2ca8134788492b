#!/usr/bin/env bash
# pg-test.sh's part meson (PostgreSQL 18): the patched tree configured by meson with
# -Dbuffile=enabled (pg_config.h defines USE_BUFFILE, buffile_compress.c compiles with
# the dependency's flags), and refused without libbuffile in PKG_CONFIG_PATH.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
out=$RUN/meson pat=$PGB/patched-$PG_UPSTREAM
apt_install meson ninja-build
out_dir meson
# With pkg-config finding nothing (no libbuffile), the feature asked for is
# an error.
mkdir "$out/empty"; chown "$PG_USER": "$out/empty"
if (cd "$out" && as_user env PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$out/empty" \
      meson setup nolib "$pat" -Dbuffile=enabled > nolib.log 2>&1); then
  echo "meson setup -Dbuffile=enabled succeeded without libbuffile"; exit 1
fi
grep -qi 'dependency "\?buffile"\? not found' "$out/nolib.log" \
  || { echo "meson failed without libbuffile, but not for want of it:"; tail -5 "$out/nolib.log"; exit 1; }
(cd "$out" && as_user env PKG_CONFIG_PATH="$PGROOT/libbuffile/lib/pkgconfig" meson setup build "$pat" \
   -Dbuffile=enabled -Dlz4=enabled -Dzstd=enabled > setup.log 2>&1) \
  || { echo "meson setup failed:"; tail -20 "$out/setup.log"; exit 1; }
grep -q '^#define USE_BUFFILE 1$' "$out/build/src/include/pg_config.h" \
  || { echo "pg_config.h does not define USE_BUFFILE"; exit 1; }
# Our file, compiled with the flags the dependency gave.
obj=$(cd "$out/build" && as_user ninja -t targets all | grep -o '^[^:]*buffile_compress\.c\.o' | head -1)
[ -n "$obj" ] || { echo "buffile_compress.c is not in meson's backend"; exit 1; }
(cd "$out/build" && as_user ninja "$obj" > ninja.log 2>&1) \
  || { echo "ninja $obj failed:"; tail -20 "$out/build/ninja.log"; exit 1; }
echo "meson: without libbuffile, -Dbuffile=enabled refused ($(grep -oi 'dependency "\?buffile"\? not found.*' "$out/nolib.log" | head -1));"
echo "with it: $(grep -o 'Run-time dependency buffile found: .*' "$out/setup.log" | head -1), pg_config.h defines USE_BUFFILE, $obj compiled"

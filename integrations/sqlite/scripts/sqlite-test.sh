#!/usr/bin/env bash
# SQLite's own test suite with its temp files on libbuffile (integrations/sqlite/).
#
#   integrations/sqlite/scripts/sqlite-test.sh
#       the test files sort* temptable* tempdb* vacuum* index* with* window*, stock vs
#       none, lz4, zstd, auto and lz4+w2 (lz4 with two library worker threads,
#       threads=2), but sortfault.test
#   integrations/sqlite/scripts/sqlite-test.sh --full
#       those and sortfault.test (OOM injection into SQLite's own allocations around
#       50,000 temp files: half the groups' time), and the rest of SQLite's veryquick suite
#   SQLITE_TEST_JOBS=N   test files run at once (default 2)
#   SQLITE_TEST_MODES="lz4 lz4+w2"   only these modes beside stock (default: all)
#   SQLITE_TEST_GROUPS="temptable sort"   only these groups (default: all)
#
# Source: `apt-get source sqlite3` of the version of Debian's installed
# libsqlite3-dev (the shim is built against its header), through deb-src
# entries derived from the machine's apt sources into build/sqlite/apt/
# (scripts/debian-source.sh; no host file is written), extracted with
# Debian's patches. testfixture is built from it as upstream's Makefile
# builds it, with -DSQLITE_EXTRA_INIT=bf_sqlite_testfixture_init and the shim
# linked in (integrations/sqlite/tests/testfixture_init.c): with BFSQLITE_TEST
# unset that binary is stock SQLite, with BFSQLITE_TEST=codec=... the buffile
# VFS is the default VFS and every temp file of every test goes through the
# library. Each test file runs in a process of its own, in a directory of its
# own, once per mode; integrations/sqlite/tests/suite_report.py compares them.
# Cached under build/sqlite/ (source, objects, testfixture; relinked when the
# shim or the library changed). Prints the time each phase took.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../../.." && pwd)  # the repository (this is integrations/sqlite/scripts/)
SQB=$TOP/build/sqlite
INT=$TOP/integrations/sqlite
JOBS=${SQLITE_TEST_JOBS:-2}
FULL=0
case "${1:-}" in
  "") ;;
  --full) FULL=1 ;;
  *) echo "sqlite-test.sh: unknown option '$1' (--full)" >&2; exit 2 ;;
esac
. "$TOP/scripts/debian-source.sh"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf 'sqlite-test.sh: %s\n' "$*" >&2; exit 1; }
start=$SECONDS
phase=$SECONDS
step() { log "$1 ($((SECONDS - phase)) s; $((SECONDS - start)) s in all)"; phase=$SECONDS; }

# --- packages and source -----------------------------------------------------------
bash "$TOP/scripts/install-deps.sh" tcl-dev dpkg-dev xz-utils
WANT=$(dpkg-query -W -f='${Version}' libsqlite3-dev)
VER=$(debian_source_fetch "$SQB/apt" "$SQB/dl" sqlite3 "$WANT") || die "no source of sqlite3 can be fetched"
[ "$VER" = "$WANT" ] || log "warning: libsqlite3-dev is $WANT but the source fetched is $VER"
UP=${VER#*:}
UP=${UP%%-*}
SRC=$SQB/src-$UP
if [ ! -f "$SRC/configure" ]; then
  rm -rf "$SRC.tmp"
  dpkg-source -x "$SQB/dl/sqlite3_${VER#*:}.dsc" "$SRC.tmp" > /dev/null
  mv "$SRC.tmp" "$SRC"
fi
step "SQLite $VER source in $SRC"

# --- the shim and testfixture -------------------------------------------------------
LB=$SQB/lib-build
cmake -S "$TOP" -B "$LB" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TESTS=OFF -DBF_BUILD_TPCH=OFF \
  > /dev/null
cmake --build "$LB" -j"$JOBS" --target bfsqlite_testfixture > /dev/null
ARCHIVES=("$LB/integrations/sqlite/libbfsqlite_testfixture.a" "$LB/integrations/sqlite/libbfsqlite.a"
          "$LB/src/libbuffile.a")
TF=$SQB/tf-$UP
mkdir -p "$TF"
if [ ! -f "$TF/Makefile" ]; then
  (cd "$TF" && "$SRC/configure" --with-tcl=/usr/lib/tcl8.6 > configure.log 2>&1) ||
    { tail -20 "$TF/configure.log"; die "configure failed in $TF"; }
fi
# Statement journals go to a file from their first byte (upstream keeps 64 KiB in memory
# first), so that tests which never spill a sort still open temp files for the VFS to serve;
# stock runs the same binary.
OPTS="-DSQLITE_EXTRA_INIT=bf_sqlite_testfixture_init -DSQLITE_STMTJRNL_SPILL=0"
# libbuffile's own dependencies (libcrypto seals extents)
LIBS="${ARCHIVES[*]} $(pkg-config --libs liblz4 libzstd zlib libcrypto) -lpthread"
# make knows neither the archives nor OPTS and LIBS: relink when they changed.
sum=$( (cat "${ARCHIVES[@]}"; echo "$OPTS $LIBS") | md5sum | cut -d' ' -f1)
[ "$(cat "$TF/.archives" 2>/dev/null)" = "$sum" ] || rm -f "$TF/testfixture" "$TF/testfixture.o"
(cd "$TF" && make -j"$JOBS" testfixture OPTS="$OPTS" LIBS="$LIBS" > make.log 2>&1) ||
  { tail -30 "$TF/make.log"; die "testfixture failed to build (see $TF/make.log)"; }
echo "$sum" > "$TF/.archives"
step "testfixture built in $TF"

# --- what runs -------------------------------------------------------------------------
RUN=$SQB/run
rm -rf "$RUN"
mkdir -p "$RUN"
GROUPS_FILE=$RUN/groups.txt
for g in ${SQLITE_TEST_GROUPS:-sort temptable tempdb vacuum index with window}; do
  case " sort temptable tempdb vacuum index with window " in
    *" $g "*) ;;
    *) die "SQLITE_TEST_GROUPS: unknown group '$g' (sort temptable tempdb vacuum index with window)" ;;
  esac
  for f in "$SRC"/test/"$g"*.test; do
    t=$(basename "$f")
    if [ "$FULL" = 1 ] || [ "$t" != sortfault.test ]; then echo "$g $t"; fi
  done
done > "$GROUPS_FILE"
if [ "$FULL" = 1 ]; then
  "$TF/testfixture" "$INT/tests/list-suite.tcl" "$SRC/test" veryquick | sort |
    while read -r f; do
      grep -q " $f\$" "$GROUPS_FILE" || echo "veryquick $f"
    done > "$RUN/veryquick.txt"
  cat "$RUN/veryquick.txt" >> "$GROUPS_FILE"
fi
MODES=(stock none lz4 zstd auto lz4+w2)
# lz4+w2: the space's blocks are compressed on two worker threads of the library while the
# test's thread goes on (the blocks' writes and every call into the space stay under the VFS's
# mutex); one more mode costs about what lz4 costs.
declare -A OPTIONS=([stock]="" [none]="codec=none" [lz4]="codec=lz4" [zstd]="codec=zstd"
                    [auto]="codec=auto" [lz4+w2]="codec=lz4,threads=2")
if [ -n "${SQLITE_TEST_MODES:-}" ]; then
  MODES=(stock)
  for m in $SQLITE_TEST_MODES; do
    [ -n "${OPTIONS[$m]:-}" ] || die "SQLITE_TEST_MODES: unknown mode '$m' (none lz4 zstd auto lz4+w2)"
    MODES+=("$m")
  done
fi
for m in "${MODES[@]}"; do mkdir -p "$RUN/$m"; done

# One test file in one mode, in a directory of its own (tests make test.db in the
# current directory) with its own temp directory, where no space may stay behind.
run_one() {
  local mode=$1 t=$2 opt=$3
  local d=$RUN/$mode/$t.d TIMEFORMAT='%R %U %S'
  mkdir -p "$d/tmp"
  { time (cd "$d" && env -u BFSQLITE_TEST TMPDIR="$d/tmp" SQLITE_TMPDIR="$d/tmp" \
     ${opt:+BFSQLITE_TEST="$opt"} BFSQLITE_STATS="$RUN/$mode/$t.stats" \
     timeout 900 "$TF/testfixture" "$SRC/test/$t" > "$RUN/$mode/$t.log" 2>&1 < /dev/null) ; } \
     2> "$RUN/$mode/$t.time" || true
  find "$d/tmp" -maxdepth 1 -name 'buffile-*' > "$RUN/$mode/$t.left"
  rm -rf "$d"
}
export -f run_one
export RUN TF SRC
# File by file, the modes side by side: the machine's slow spells hit all alike.
nfiles=$(wc -l < "$GROUPS_FILE")
log "running $nfiles test files x ${#MODES[@]} modes, $JOBS at once"
while read -r _ t; do
  for m in "${MODES[@]}"; do
    printf '%s\n%s\n%s\n' "$m" "$t" "${OPTIONS[$m]}"
  done
done < "$GROUPS_FILE" | tr '\n' '\0' | xargs -0 -n 3 -P "$JOBS" bash -c 'run_one "$@"' _
step "suite run"

# --- the verdict ------------------------------------------------------------------------
left=$(cat "$RUN"/*/*.left | wc -l)
awk '{w += $1; c += $2 + $3} END {printf "test files: %.0f s of wall time, %.0f s of CPU in all\n", w, c}' \
  "$RUN"/*/*.time
for m in "${MODES[@]}"; do
  awk -v m="$m" '{w += $1; c += $2 + $3} END {printf "  %s: %.0f s of wall time, %.0f s of CPU\n", m, w, c}' \
    "$RUN/$m"/*.time
done
rc=0
python3 "$INT/tests/suite_report.py" "$RUN" "$GROUPS_FILE" "$INT/tests/excluded.txt" "${MODES[@]}" || rc=$?
if [ "$left" -ne 0 ]; then
  echo "sqlite-test.sh: $left space directories left behind:" >&2
  cat "$RUN"/*/*.left >&2
  rc=1
fi
log "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
step "report"
exit "$rc"

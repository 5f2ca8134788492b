#!/usr/bin/env bash
# The cost of the BufFile storage hook when no module sets it, counted in
# instructions rather than time (valgrind's cachegrind: the same count on a
# busy machine as on a quiet one), for BufFile-heavy queries: pristine
# PostgreSQL against the same build with the hook.
#
#   integrations/postgresql/scripts/pg-hook-cost.sh 18|master
#
# Needs pg-hook.sh's tree of that major (build/pg/hook/<major>/src, tag
# "pristine"). Both builds are without --enable-cassert: the pristine one is
# a VPATH build of `git archive pristine`; the hook's is that same build with
# buffile.c compiled from the patched tree (with the pristine build's own
# compile line) and postgres linked again. The hook changes no other object:
# struct BufFile is opaque outside buffile.c, and buffile.h only gains
# declarations. Each query runs in a single-user backend (postgres --single)
# under cachegrind, which counts every instruction of the process; a "SELECT
# 1" run gives what start and exit cost, subtracted from the others. Prints,
# per query, both counts and their ratio (hook / pristine).
set -euo pipefail
MAJOR=${1:-}
case $MAJOR in
  18|master) ;;
  *) printf 'usage: %s 18|master\n' "$0" >&2; exit 2 ;;
esac
export PG_MAJOR=18   # pg-common.sh's user and helpers only
# shellcheck source=pg-common.sh
. "$(dirname "$0")/pg-common.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and builds as $PG_USER"
D=${PGHOOK_DIR:-$PGROOT/hook}/$MAJOR
SRC=$D/src
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
[ -d "$SRC/.git" ] || die "no tree in $SRC: run pg-hook.sh $MAJOR build first"
apt_install valgrind
ensure_user
CB=$D/bench
mkdir -p "$CB"
chown "$PG_USER": "$CB"
exec 9> "$CB/.lock"
flock 9
t0=$SECONDS

# --- pristine, without assertions -----------------------------------------------
BP=$CB/build-pristine
if [ ! -f "$BP/config.status" ] && [ ! -d "$CB/src-pristine" ]; then
  rm -rf "$CB/src-pristine.tmp"
  mkdir -p "$CB/src-pristine.tmp"
  git -C "$SRC" archive pristine | tar -x -C "$CB/src-pristine.tmp"
  chown -R "$PG_USER": "$CB/src-pristine.tmp"
  mv "$CB/src-pristine.tmp" "$CB/src-pristine"
fi
mkdir -p "$BP"
chown "$PG_USER": "$BP"
if [ ! -f "$BP/config.status" ]; then
  (cd "$BP" && as_user env CC="ccache gcc" CFLAGS="-O2 -g -fno-omit-frame-pointer" \
     "$CB/src-pristine/configure" --enable-debug --with-lz4 --with-zstd \
     --with-system-tzdata=/usr/share/zoneinfo "--prefix=$CB/inst-pristine" > configure.log 2>&1) \
    || die "configure failed in $BP"
fi
(cd "$BP" && as_user make -s -j"$PG_JOBS" > make.log 2>&1 && as_user make -s install > install.log 2>&1) \
  || die "make failed in $BP (see $BP/make.log)"
log "pristine built without assertions: $((SECONDS - t0)) s"

# --- the hook: buffile.o from the patched tree, postgres linked again -------------
F=$BP/src/backend/storage/file
cc_line=$(cd "$F" && as_user make -n -B buffile.o | grep -F -- "-c -o buffile.o" | head -1)
[ -n "$cc_line" ] || die "no compile line for buffile.o in $F"
# the patched source, its headers first (the build's generated ones after them)
hook_line=$(sed -E "s# [^ ]*/storage/file/buffile\.c# $SRC/src/backend/storage/file/buffile.c#
                    s# -I# -I$SRC/src/include -I#
                    s# -o buffile\.o # -o $CB/buffile-hook.o #" <<< "$cc_line")
(cd "$F" && as_user bash -c "$hook_line") || die "the hook's buffile.c does not compile: $hook_line"
# postgres linked with it in place of pristine's buffile.o, which is put back after
cp -p "$F/buffile.o" "$CB/buffile-pristine.o"
cp "$CB/buffile-hook.o" "$F/buffile.o"
touch "$F/buffile.o"
(cd "$BP/src/backend" && as_user make -s postgres > "$CB/link.log" 2>&1) || die "postgres does not link with the hook's buffile.o"
rm -rf "$CB/inst-hook"
cp -a "$CB/inst-pristine" "$CB/inst-hook"
cp "$BP/src/backend/postgres" "$CB/inst-hook/bin/postgres"
cp "$CB/buffile-pristine.o" "$F/buffile.o"
touch "$F/buffile.o"
(cd "$BP/src/backend" && as_user make -s postgres >> "$CB/link.log" 2>&1) || die "postgres does not link again"
cmp -s "$BP/src/backend/postgres" "$CB/inst-pristine/bin/postgres" \
  || log "(the relinked pristine postgres differs from the installed one only by link order)"
# (nm's output whole before grep: grep -q quitting early would fail the pipe)
syms=$(nm "$CB/inst-hook/bin/postgres")
grep -q buffile_storage_hook <<< "$syms" || die "the hook's postgres has no buffile_storage_hook"
syms=$(nm "$CB/inst-pristine/bin/postgres")
if grep -q buffile_storage_hook <<< "$syms"; then die "the pristine postgres has the hook"; fi
log "hook's postgres linked: $((SECONDS - t0)) s"

# --- the queries, under cachegrind ------------------------------------------------
DATA=$CB/data
if [ ! -f "$DATA/PG_VERSION" ]; then
  rm -rf "$DATA"
  as_user "$CB/inst-pristine/bin/initdb" -D "$DATA" -A trust --no-sync > "$CB/initdb.log" 2>&1 \
    || die "initdb failed (see $CB/initdb.log)"
  as_user "$CB/inst-pristine/bin/postgres" --single -D "$DATA" postgres > "$CB/setup.log" 2>&1 <<'SQL'
CREATE TABLE t1 AS SELECT i AS a, i % 1000 AS b, md5(i::text) AS c FROM generate_series(1, 200000) i;
CREATE TABLE t2 AS SELECT i AS a, md5((i * 7)::text) AS d FROM generate_series(1, 200000) i;
VACUUM ANALYZE t1;
VACUUM ANALYZE t2;
SQL
fi
# name|statement: each spills through BufFiles with work_mem = 64kB
QUERIES=(
  "start and exit|SELECT 1"
  "sort|SELECT count(*) FROM (SELECT c FROM t1 ORDER BY c) s"
  "hash join|SELECT count(*) FROM t1 JOIN t2 USING (a)"
  "hash aggregate|SET enable_sort = off; SELECT count(*) FROM (SELECT a % 100000, count(*) FROM t1 GROUP BY 1) s"
  "window|SELECT max(s) FROM (SELECT sum(a) OVER (ORDER BY a ROWS BETWEEN 10 PRECEDING AND 10 FOLLOWING) s FROM t1) w"
)
# irefs BUILD STATEMENT: the instructions of one single-user backend running it
irefs() {
  printf '%s\n' "${2//; /$'\n'}" > "$CB/query.sql"
  chown "$PG_USER": "$CB/query.sql"
  as_user valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$CB/inst-$1/bin/postgres" --single -D "$DATA" -c work_mem=64kB \
    -c max_parallel_workers_per_gather=0 -c enable_mergejoin=off -c enable_nestloop=off \
    -c jit=off postgres < "$CB/query.sql" 2>&1 >/dev/null \
    | sed -nE 's/.*I +refs: +([0-9,]+).*/\1/p' | tr -d ,
}
base_p=0 base_h=0
printf '%-16s %16s %16s %9s\n' query pristine hook ratio
for q in "${QUERIES[@]}"; do
  name=${q%%|*} stmt=${q#*|}
  p=$(irefs pristine "$stmt")
  h=$(irefs hook "$stmt")
  if [ -z "$p" ] || [ -z "$h" ]; then die "cachegrind gave no count for $name"; fi
  if [ "$name" = "start and exit" ]; then
    base_p=$p base_h=$h
    printf '%-16s %16s %16s %9s\n' "$name" "$p" "$h" "$(awk -v a="$h" -v b="$p" 'BEGIN { printf "%.5f", a / b }')"
  else
    printf '%-16s %16s %16s %9s\n' "$name" "$((p - base_p))" "$((h - base_h))" \
      "$(awk -v a="$((h - base_h))" -v b="$((p - base_p))" 'BEGIN { printf "%.5f", a / b }')"
  fi
done
log "pg-hook-cost.sh $MAJOR done in $((SECONDS - t0)) s"

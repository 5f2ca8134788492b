#!/usr/bin/env bash
# The cost of the BufFile storage hook when no module sets it, counted in
# instructions rather than time (valgrind's cachegrind: the same count on a
# busy machine as on a quiet one), for BufFile-heavy queries: pristine
# PostgreSQL against the same build with the hook.
#
#   integrations/postgresql/scripts/pg-hook-cost.sh 18|master
#
# Needs pg-hook.sh's tree of that major (build/pg/hook/<major>/src, tag
# "pristine"); the two builds, both without --enable-cassert and differing only by
# buffile.o, are pg-hook-pristine.sh's. Each query runs in a single-user backend
# (postgres --single) under cachegrind, which counts every instruction of the process;
# a "SELECT 1" run gives what start and exit cost, subtracted from the others. Prints,
# per query, both counts and their ratio (hook / pristine). The same queries timed
# on running servers: pg-hook-wall.sh.
set -euo pipefail
MAJOR=${1:-}
case $MAJOR in
  18|master) ;;
  *) printf 'usage: %s 18|master\n' "$0" >&2; exit 2 ;;
esac
# shellcheck source=pg-common.sh
. "$(dirname "$0")/pg-common.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and builds as $PG_USER"
built=$(bash "$PGS/pg-hook-pristine.sh" "$MAJOR")
sed '$d' <<< "$built"
CB=${built##*$'\n'}
apt_install valgrind
t0=$SECONDS

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

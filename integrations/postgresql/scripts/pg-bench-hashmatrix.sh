#!/usr/bin/env bash
# The hash-join matrix: a spilling hash join at several sizes,
# compressibilities and numbers of concurrent connections, on several temp devices,
# temp_file_compression off against the codecs in ONE patched server, paired rounds.
# The workload and the method: pg_hashmatrix.py. Results:
# docs/results/postgresql-scale.md.
#
#   integrations/postgresql/scripts/pg-bench-hashmatrix.sh [--rows=1M,10M] [--dups=1,10,100,1000]
#       [--conns=1,2,4] [--configs=off,lz4,zstd:1,auto]
#       [--devices=page,fuse:100MB,fuse:400MB] [--work-mem=4MB] [--rounds=3]
#       [--timeout=1800] [--seed=N] [--out=DIR] [--report-only] [--plan]
#
# --configs: off (PostgreSQL's own BufFile) first, as the reference; then any values
#   of temp_file_compression the server takes (pglz once the library offers it).
# --devices: page (the data directory's file system) and fuse:RATE (a temp
#   tablespace on tools/slowfs at that rate).
# Cells run rows by rows, then device, connections and duplicates; every run is
# cached in OUT/runs/ (default build/pg/bench/hashmatrix): a second invocation
# resumes. The tables of a row count are made when a cell first needs them (their
# time and size: OUT/tables.json). The server listens on port 5452 (socket in OUT).
# --plan prints the cells left and an estimate of their time and runs nothing;
# --report-only rewrites OUT/report.md, OUT/results.json and OUT/charts/.
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"
. "$(dirname "$0")/pg-server.sh"

bad() { printf 'pg-bench-hashmatrix.sh: %s (--help lists the flags)\n' "$1" >&2; exit 2; }

ROWS=1M,10M DUPS=1,10,100,1000 CONNS=1,2,4 CONFIGS=off,lz4,zstd:1,auto
DEVICES=page,fuse:100MB,fuse:400MB WORK_MEM=4MB ROUNDS=3 TIMEOUT=1800 SEED=20260426 OUT="" MODE=run
RUN_ARGS=()
for a in "$@"; do
  case $a in --report-only|--plan) ;; *) RUN_ARGS+=("$a") ;; esac
  case "$a" in
    --rows=*) ROWS=${a#*=}; [[ $ROWS =~ ^[1-9][0-9]*[kM]?(,[1-9][0-9]*[kM]?)*$ ]] || bad "--rows: '$ROWS' is not a list such as 1M,10M" ;;
    --dups=*) DUPS=${a#*=}; [[ $DUPS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bad "--dups: '$DUPS' is not a list such as 1,10,100,1000" ;;
    --conns=*) CONNS=${a#*=}; [[ $CONNS =~ ^([1-9]|1[0-6])(,([1-9]|1[0-6]))*$ ]] || bad "--conns: '$CONNS' is not a list of 1..16 such as 1,2,4" ;;
    --configs=*) CONFIGS=${a#*=}
      [[ $CONFIGS =~ ^off(,[a-z0-9]+(:[a-z=0-9-]+)?)+$ ]] || bad "--configs: '$CONFIGS' must be off followed by values such as lz4,zstd:1,auto" ;;
    --devices=*) DEVICES=${a#*=}; [[ $DEVICES =~ ^(page|fuse:[1-9][0-9]*(MB|GB))(,(page|fuse:[1-9][0-9]*(MB|GB)))*$ ]] \
        || bad "--devices: '$DEVICES' is not a list of page and fuse:RATE (e.g. page,fuse:100MB)" ;;
    --work-mem=*) WORK_MEM=${a#*=}; [[ $WORK_MEM =~ ^[1-9][0-9]*(kB|MB|GB)$ ]] || bad "--work-mem: '$WORK_MEM' is not a size such as 4MB" ;;
    --rounds=*) ROUNDS=${a#*=}; [[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || bad "--rounds: '$ROUNDS' is not a number from 1 to 99" ;;
    *) bench_flag "$a" || bad "unknown flag '$a'" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "run as root: it builds PostgreSQL, mounts slowfs and runs PostgreSQL as $PG_USER"
OUT=${OUT:-$PGB/bench/hashmatrix}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SOCK=$OUT/sock PORT=$((PG_PORT_BASE + 92)) CL=$OUT/cluster SLOW=$OUT/slow BIN=$PGB/inst-patched/bin
PY_ARGS=(--rows="$ROWS" --dups="$DUPS" --conns="$CONNS" --configs="$CONFIGS" --devices="$DEVICES"
         --work-mem="$WORK_MEM" --rounds="$ROUNDS" --timeout="$TIMEOUT" --seed="$SEED" --out="$OUT"
         --command="integrations/postgresql/scripts/pg-bench-hashmatrix.sh ${RUN_ARGS[*]}")
srv_report_env
if [ "$MODE" != run ]; then
  exec /usr/bin/python3 "$PGS/pg_hashmatrix.py" "${PY_ARGS[@]}" "--${MODE/report/report-only}"
fi

bash "$PGS/pg-build.sh" > "$OUT/build.log" 2>&1 \
  || { tail -20 "$OUT/build.log"; die "pg-build.sh failed (see $OUT/build.log)"; }
SLOWFS_BIN=""
[[ $DEVICES == *fuse:* ]] && SLOWFS_BIN=$(srv_slowfs_build)
chown "$PG_USER": "$OUT"
mkdir -p "$SOCK"; chown "$PG_USER": "$SOCK"
bench_conf "$OUT/bench.conf" "$SOCK"
trap srv_stop_all EXIT
trap 'exit 130' INT TERM
if [ ! -f "$CL/PG_VERSION" ]; then
  srv_new "$CL" "$BIN" || die "initdb failed"
fi
srv_start "$CL" "$BIN" $PORT "$OUT/server.log" "$OUT/bench.conf" || die "no server"
if [ -z "$(psql_at $PORT -At -c "select 1 from pg_database where datname = 'hashjoin'")" ]; then
  psql_at $PORT -c "create database hashjoin" > /dev/null
fi
FUSE_ARGS=()
if [ -n "$SLOWFS_BIN" ]; then
  if [ -z "$(psql_at $PORT -d hashjoin -At -c "select 1 from pg_tablespace where spcname = 'slowtemp'")" ]; then
    mountpoint -q "$SLOW" && fusermount3 -u "$SLOW"
    mkdir -p "$SLOW/patched"; chown "$PG_USER": "$SLOW" "$SLOW/patched"
    psql_at $PORT -d hashjoin -c "create tablespace slowtemp location '$SLOW/patched'"
  fi
  FUSE_ARGS=(--slowfs="$SLOWFS_BIN" --slow-dir="$SLOW")
fi
/usr/bin/python3 "$PGS/pg_hashmatrix.py" "${PY_ARGS[@]}" --sock="$SOCK" --psql="$BIN/psql" \
  --user="$PG_USER" --port=$PORT --log="$OUT/server.log" --data="$CL" "${FUSE_ARGS[@]}"

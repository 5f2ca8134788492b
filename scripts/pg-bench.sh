#!/usr/bin/env bash
# TPC-H in PostgreSQL on libbuffile against stock PostgreSQL of the same
# version (PG_MAJOR, 15 by default: see scripts/pg-common.sh): temp bytes and
# time, query by query (issue 13). Results: docs/results/postgresql.md.
#
#   scripts/pg-bench.sh [--sf=1] [--rounds=3] [--workers=0,2]
#       [--configs=stock,none,lz4,zstd,auto] [--io-limit=200MB] [--timeout=300]
#       [--queries=1-22] [--seed=N] [--out=DIR] [--report-only] [--plan]
#
# What it does (as root: it installs packages and runs PostgreSQL as pgbuf):
#   1. scripts/pg-build.sh with PG_BUILD_STOCK=1: patched PostgreSQL and stock
#      PostgreSQL built from the same source with the same compiler and flags
#      (build/pg/<major>/inst-patched, .../inst-stock). PG_STOCK_BIN picks another
#      stock bin directory (e.g. Debian's /usr/lib/postgresql/15/bin).
#   2. TPC-H tables from tpch/gen at --sf, loaded once by stock PostgreSQL
#      (integrations/postgresql/tpch/schema.sql: the spec's primary keys and no
#      other index), VACUUM (FREEZE, ANALYZE), then the data directory is
#      copied for the patched server: both read the same pages with the same
#      statistics, so both plan alike. Cached in OUT/cluster-*.
#   3. Both servers started with the same settings (OUT/bench.conf, listed in
#      the report); pgbuf runs them; they are stopped on exit.
#   4. scripts/pg_bench.py runs the phases and writes OUT/report.md and
#      OUT/results.json:
#        w<N>       for each --workers N (max_parallel_workers_per_gather):
#                   per query a warm-up run of stock (the reference answer;
#                   a query that hits statement_timeout there is left out and
#                   named), then --rounds rounds running every configuration
#                   once in an order shuffled per round and query;
#        (--io-limit must be 0: the throttled phase went with the GUC
#        temp_file_io_limit; a slow temp device is issue 26's FUSE mount)
#      Every run is cached (OUT/runs/...): a second invocation resumes.
#
# --plan prints the phases, the runs cached and an estimate of the time left
# (from the times measured so far) and runs nothing. --report-only rewrites the
# report from the cached runs.
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"

bad() { printf 'pg-bench.sh: %s (--help lists the flags)\n' "$1" >&2; exit 2; }

SF=1 ROUNDS=3 WORKERS=0,2 CONFIGS=stock,none,lz4,zstd,auto IO_LIMIT=0 TIMEOUT=300
QUERIES=1-22 SEED=20260413 OUT="" MODE=run
RUN_ARGS=()   # the flags that shape the results, for the report's command line
for a in "$@"; do
  case $a in --report-only|--plan) ;; *) RUN_ARGS+=("$a") ;; esac
  case "$a" in
    --sf=*) SF=${a#*=}; [[ $SF =~ ^(0\.01|0\.1|1|3|10)$ ]] || bad "--sf: '$SF' is not one of 0.01 0.1 1 3 10" ;;
    --rounds=*) ROUNDS=${a#*=}; [[ $ROUNDS =~ ^[0-9]{1,2}$ ]] || bad "--rounds: '$ROUNDS' is not a number from 0 (warm-ups only) to 99" ;;
    --workers=*) WORKERS=${a#*=}; [[ $WORKERS =~ ^[0-8](,[0-8])*$ ]] || bad "--workers: '$WORKERS' is not a list of worker counts 0..8 (e.g. 0,2)" ;;
    --configs=*) CONFIGS=${a#*=}
      [[ $CONFIGS =~ ^stock(,(none|lz4|zstd|zlib|auto))+$ ]] \
        || bad "--configs: '$CONFIGS' must be stock followed by some of none,lz4,zstd,zlib,auto" ;;
    --io-limit=*) IO_LIMIT=${a#*=}; IO_LIMIT=${IO_LIMIT%/s}
      [[ $IO_LIMIT =~ ^(0|[1-9][0-9]*(kB|MB|GB))$ ]] || bad "--io-limit: '$IO_LIMIT' is not 0 or a rate such as 200MB (per second)" ;;
    --timeout=*) TIMEOUT=${a#*=}; TIMEOUT=${TIMEOUT%s}; [[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || bad "--timeout: '$TIMEOUT' is not a number of seconds" ;;
    --queries=*) QUERIES=${a#*=}; [[ $QUERIES =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || bad "--queries: '$QUERIES' is not a list such as 1-22 or 3,9,18" ;;
    --seed=*) SEED=${a#*=}; [[ $SEED =~ ^[0-9]+$ ]] || bad "--seed: '$SEED' is not a number" ;;
    --out=*) OUT=${a#*=}; [ -n "$OUT" ] || bad "--out: empty" ;;
    --report-only) MODE=report ;;
    --plan) MODE=plan ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) bad "unknown flag '$a'" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and runs PostgreSQL as $PG_USER"
OUT=${OUT:-$PGB/bench/sf$SF}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The queries: ../shared/tpch/queries beside a clone or beside the worktrees.
QDIR=${TPCH_QUERIES:-}
for d in "$TOP/../shared" "$TOP/../../shared"; do
  [ -z "$QDIR" ] && [ -f "$d/tpch/queries/1.sql" ] && QDIR=$(cd "$d/tpch/queries" && pwd)
done
[ -f "$QDIR/1.sql" ] || die "no TPC-H queries found (set TPCH_QUERIES to the folder of 1.sql .. 22.sql)"

PY_ARGS=(--sf="$SF" --rounds="$ROUNDS" --workers="$WORKERS" --configs="$CONFIGS" --io-limit="$IO_LIMIT"
         --timeout="$TIMEOUT" --queries="$QUERIES" --seed="$SEED" --out="$OUT" --qdir="$QDIR"
         --command="scripts/pg-bench.sh ${RUN_ARGS[*]}")

apt_install python3 build-essential
# The interval and the shuffle are spillbench's own code (tpch/exec/paired.c),
# loaded by pg_bench.py through ctypes.
cc -O2 -shared -fPIC -o "$OUT/libpaired.so" "$TOP/tpch/exec/paired.c" -lm

if [ "$MODE" = report ]; then
  exec python3 "$TOP/scripts/pg_bench.py" "${PY_ARGS[@]}" --report-only
fi
if [ "$MODE" = plan ]; then
  exec python3 "$TOP/scripts/pg_bench.py" "${PY_ARGS[@]}" --plan
fi

# --- builds --------------------------------------------------------------------
t0=$SECONDS
PG_BUILD_STOCK=1 bash "$TOP/scripts/pg-build.sh" > "$OUT/build.log" 2>&1 \
  || { tail -20 "$OUT/build.log"; die "pg-build.sh failed (see $OUT/build.log)"; }
PATCHED=$PGB/inst-patched/bin
STOCK=${PG_STOCK_BIN:-$PGB/inst-stock/bin}
[ -x "$STOCK/postgres" ] || die "no stock PostgreSQL in $STOCK"
log "PostgreSQL built: patched $PATCHED, stock $STOCK ($((SECONDS - t0)) s)"
chown "$PG_USER": "$OUT"

# --- data ------------------------------------------------------------------------
bash "$TOP/scripts/install-deps.sh" > /dev/null
cmake -S "$TOP" -B "$PGROOT/tpch-build" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TESTS=OFF > /dev/null
cmake --build "$PGROOT/tpch-build" --target tpchgen -j"$PG_JOBS" > /dev/null
DATA=$PGROOT/bench/data-sf$SF
if [ ! -f "$DATA/lineitem.tbl" ]; then
  log "tpchgen --sf=$SF --format=tbl into $DATA"
  rm -rf "$DATA.tmp"
  "$PGROOT/tpch-build/tpch/gen/tpchgen" --sf="$SF" --out="$DATA.tmp" --format=tbl > /dev/null
  mv "$DATA.tmp" "$DATA"
fi
chmod -R a+rX "$DATA"

# --- servers -------------------------------------------------------------------
SOCK=$OUT/sock
mkdir -p "$SOCK"; chown "$PG_USER": "$SOCK"
PORT_STOCK=$((PG_PORT_BASE + 90))
PORT_PATCHED=$((PG_PORT_BASE + 91))
# The settings of both servers (included from postgresql.conf; rewritten at
# every start so that the cached clusters follow this script).
cat > "$OUT/bench.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$SOCK'
shared_buffers = 1GB
work_mem = 4MB
maintenance_work_mem = 256MB
max_worker_processes = 8
max_parallel_workers = 8
max_parallel_workers_per_gather = 0
jit = off
temp_file_limit = -1
log_temp_files = 0
log_line_prefix = '%m [%p] '
log_min_duration_statement = -1
autovacuum = off
fsync = off
synchronous_commit = off
full_page_writes = off
max_wal_size = 8GB
checkpoint_timeout = 1h
EOF
chown "$PG_USER": "$OUT/bench.conf"

STARTED=()
stop_all() {
  local s
  for s in "${STARTED[@]}"; do
    as_user "${s%%:*}/pg_ctl" -D "${s#*:}" -m fast -w stop > /dev/null 2>&1 || true
  done
  STARTED=()
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# start CLUSTER BIN PORT LOG
start() {
  local data=$1 bin=$2 port=$3 logf=$4
  grep -q "^include '$OUT/bench.conf'" "$data/postgresql.conf" \
    || echo "include '$OUT/bench.conf'" >> "$data/postgresql.conf"
  # A killed run leaves a server or only its stale pid file (pg_ctl then fails: fine).
  if [ -f "$data/postmaster.pid" ]; then
    as_user "$bin/pg_ctl" -D "$data" -m fast -w stop > /dev/null 2>&1 || true
  fi
  as_user "$bin/pg_ctl" -D "$data" -l "$logf" -o "-p $port" -w -t 300 start > /dev/null \
    || { tail -20 "$logf"; die "could not start $bin/postgres on $data"; }
  STARTED+=("$bin:$data")
}
psql_at() { # psql_at PORT [psql args...]
  local port=$1; shift
  as_user "$PATCHED/psql" -X -q -h "$SOCK" -p "$port" -d tpch -v ON_ERROR_STOP=1 "$@"
}

CL_STOCK=$OUT/cluster-stock
CL_PATCHED=$OUT/cluster-patched
LOAD_KEY="sf=$SF schema=$(sha256sum "$TOP/integrations/postgresql/tpch/schema.sql" | cut -c1-16) stock=$("$STOCK/postgres" --version)"
if [ "$(cat "$CL_PATCHED/.bench-loaded" 2>/dev/null)" != "$LOAD_KEY" ]; then
  t0=$SECONDS
  rm -rf "$CL_STOCK" "$CL_PATCHED"
  as_user "$STOCK/initdb" -D "$CL_STOCK" -A trust -E UTF8 --locale=C > "$OUT/initdb.log" 2>&1 \
    || { cat "$OUT/initdb.log"; die "initdb failed"; }
  start "$CL_STOCK" "$STOCK" $PORT_STOCK "$OUT/load.log"
  as_user "$PATCHED/psql" -X -q -h "$SOCK" -p $PORT_STOCK -d postgres -c "create database tpch" > /dev/null
  psql_at $PORT_STOCK -f "$TOP/integrations/postgresql/tpch/schema.sql"
  for t in region nation part supplier partsupp customer orders lineitem; do
    log "load $t"
    sed 's/|$//' "$DATA/$t.tbl" | psql_at $PORT_STOCK -c "\\copy $t from stdin with (delimiter '|')"
  done
  log "vacuum (freeze, analyze)"
  psql_at $PORT_STOCK -c "vacuum (freeze, analyze)"
  psql_at $PORT_STOCK -c "checkpoint"
  stop_all
  cp -a "$CL_STOCK" "$CL_PATCHED"
  echo "$LOAD_KEY" > "$CL_PATCHED/.bench-loaded"
  log "SF $SF loaded once (by stock) and copied for patched in $((SECONDS - t0)) s"
fi

start "$CL_STOCK" "$STOCK" $PORT_STOCK "$OUT/stock.log"
start "$CL_PATCHED" "$PATCHED" $PORT_PATCHED "$OUT/patched.log"
# Both servers must see the same data and statistics.
for port in $PORT_STOCK $PORT_PATCHED; do
  psql_at $port -At -c "select string_agg(relname || '=' || reltuples::bigint || '/' || relpages, ' ' order by relname) from pg_class where relnamespace = 'public'::regnamespace"
done > "$OUT/relations.txt"
[ "$(sed -n 1p "$OUT/relations.txt")" = "$(sed -n 2p "$OUT/relations.txt")" ] \
  || die "stock and patched clusters differ: $OUT/relations.txt"
# What the report states: versions, indexes, and every setting not at its
# default, which must be the same on both servers (but the port).
settings_sql="select name || ' = ' || current_setting(name) from pg_settings
  where source not in ('default', 'override', 'client', 'session') and name not in ('port', 'config_file',
  'data_directory', 'hba_file', 'ident_file') order by name"
{
  echo "stock: $(psql_at $PORT_STOCK -At -c 'select version()') ($STOCK)"
  echo "patched: $(psql_at $PORT_PATCHED -At -c 'select version()') ($PATCHED)"
  echo "indexes: $(psql_at $PORT_STOCK -At -c "select string_agg(indexname || ' ' || regexp_replace(indexdef, '.* USING ', ''), '; ' order by indexname) from pg_indexes where schemaname = 'public'")"
  echo "settings (not at their defaults; the same on both servers): $(psql_at $PORT_STOCK -At -c "$settings_sql" | paste -sd ';' | sed 's/;/; /g')"
  echo "tables: $(sed -n 1p "$OUT/relations.txt")"
} > "$OUT/server-info.txt"
[ "$(psql_at $PORT_STOCK -At -c "$settings_sql")" = "$(psql_at $PORT_PATCHED -At -c "$settings_sql")" ] \
  || die "stock and patched run with different settings"

python3 "$TOP/scripts/pg_bench.py" "${PY_ARGS[@]}" --sock="$SOCK" --psql="$PATCHED/psql" \
  --user="$PG_USER" --stock-port=$PORT_STOCK --patched-port=$PORT_PATCHED \
  --stock-log="$OUT/stock.log" --patched-log="$OUT/patched.log" \
  --stock-bin="$STOCK" --patched-bin="$PATCHED"

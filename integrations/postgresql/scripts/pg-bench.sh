#!/usr/bin/env bash
# TPC-H in PostgreSQL (PG_MAJOR, 15 by default) with temp_file_compression: temp
# bytes, wall and CPU time, query by query. Results: docs/results/postgresql.md (SF 1,
# stock binary against the patched one) and docs/results/postgresql-scale.md (SF 10,
# one server).
#
#   integrations/postgresql/scripts/pg-bench.sh [--sf=1] [--rounds=3] [--workers=0,2] [--work-mem=4MB]
#       [--configs=off,lz4,zstd:1,auto] [--devices=page] [--timeout=300] [--fuse-timeout=N]
#       [--queries=1-22] [--seed=N] [--out=DIR] [--check-cpu] [--load-only]
#       [--report-only] [--plan]
#
# --configs: the configurations compared, the first being the reference. `stock`
#   is the stock binary's server (on a copy of the cluster); every other name is a
#   value of temp_file_compression set per session in ONE patched server: `off`
#   (PostgreSQL's own BufFile code), none, lz4, zstd:1 (or zstd:level=1), zlib,
#   auto, and any method the server takes (e.g. pglz once the library has it; the
#   server checks each value before anything runs). One server: caches, plans and
#   data are the same for all of them. `--configs=stock,off` checks that off is stock.
# --devices: page (temp files in the data directory: the page cache over the VM's
#   disk) and fuse:RATE (e.g. fuse:200MB: a temp tablespace on tools/slowfs at that
#   rate, which stock's files and ours share). A fuse phase runs the queries its page
#   phase (same work_mem and workers) found spilling, once that phase has run.
# Phases: every (work_mem, device, workers), in that nesting order.
# --timeout: statement_timeout in seconds for page phases, --fuse-timeout for fuse
#   phases (default 4 x --timeout); a query whose warm-up (the reference) times out is
#   left out of its phase and named. Not part of a run's identity in the cache: a run
#   that timed out under a shorter timeout is run again.
#
# What it does (as root: it installs packages, mounts slowfs and runs PostgreSQL as
# pgbuf):
#   1. pg-build.sh with PG_BUILD_STOCK=1: patched PostgreSQL and stock built
#      from the same source, compiler and flags (PG_STOCK_BIN picks another stock).
#   2. TPC-H tables from tpch/gen at --sf, loaded once by the patched server
#      (integrations/postgresql/tpch/schema.sql: the spec's primary keys, no other
#      index), VACUUM (FREEZE, ANALYZE); with `stock` in --configs the data directory
#      is copied for the stock server (same pages, same statistics). Cached in
#      OUT/cluster-*; the load's time and size are in OUT/load-info.txt. The
#      generated text is removed after the load (the cluster is the cache).
#   3. The servers started with the same settings (pg-server.sh, checked
#      equal), on ports PG_PORT_BASE + 90 (stock) and + 91 (patched); stopped on
#      exit.
#   4. pg_bench.py runs the phases and writes OUT/report.md,
#      OUT/results.json and OUT/charts/. Every run is cached (OUT/runs/...): a second
#      invocation resumes. --check-cpu first checks the CPU accounting against a CPU
#      burner (OUT/cpu-check.json).
#
# --load-only stops after step 2 (data generated and loaded: OUT/load-info.txt).
# --plan prints the phases, the runs left and an estimate of their time (from the
# times measured so far) and runs nothing. --report-only rewrites the report from
# the cached runs.
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"
. "$(dirname "$0")/pg-server.sh"

bad() { printf 'pg-bench.sh: %s (--help lists the flags)\n' "$1" >&2; exit 2; }

SF=1 ROUNDS=3 WORKERS=0,2 WORK_MEM=4MB CONFIGS=off,lz4,zstd:1,auto DEVICES=page TIMEOUT=300 FUSE_TIMEOUT=""
QUERIES=1-22 SEED=20260413 OUT="" MODE=run CHECK_CPU=""
RUN_ARGS=()   # the flags that shape the results, for the report's command line
for a in "$@"; do
  case $a in --report-only|--plan|--check-cpu|--load-only) ;; *) RUN_ARGS+=("$a") ;; esac
  case "$a" in
    --sf=*) SF=${a#*=}; [[ $SF =~ ^(0\.01|0\.1|1|3|10)$ ]] || bad "--sf: '$SF' is not one of 0.01 0.1 1 3 10" ;;
    --rounds=*) ROUNDS=${a#*=}; [[ $ROUNDS =~ ^[0-9]{1,2}$ ]] || bad "--rounds: '$ROUNDS' is not a number from 0 (warm-ups only) to 99" ;;
    --workers=*) WORKERS=${a#*=}; [[ $WORKERS =~ ^[0-8](,[0-8])*$ ]] || bad "--workers: '$WORKERS' is not a list of worker counts 0..8 (e.g. 0,2)" ;;
    --work-mem=*) WORK_MEM=${a#*=}; [[ $WORK_MEM =~ ^[1-9][0-9]*(kB|MB|GB)(,[1-9][0-9]*(kB|MB|GB))*$ ]] \
        || bad "--work-mem: '$WORK_MEM' is not a list of sizes such as 4MB,64MB" ;;
    --configs=*) CONFIGS=${a#*=}
      [[ $CONFIGS =~ ^[a-z0-9]+(:[a-z=0-9-]+)?(,[a-z0-9]+(:[a-z=0-9-]+)?)+$ ]] \
        || bad "--configs: '$CONFIGS' is not a list of two or more configurations such as off,lz4,zstd:1" ;;
    --devices=*) DEVICES=${a#*=}; [[ $DEVICES =~ ^(page|fuse:[1-9][0-9]*(MB|GB))(,(page|fuse:[1-9][0-9]*(MB|GB)))*$ ]] \
        || bad "--devices: '$DEVICES' is not a list of page and fuse:RATE (e.g. page,fuse:200MB)" ;;
    --io-limit=*) bad "--io-limit: temp_file_io_limit is gone; a slow device is --devices=fuse:RATE" ;;
    --fuse-timeout=*) FUSE_TIMEOUT=${a#*=}; FUSE_TIMEOUT=${FUSE_TIMEOUT%s}; [[ $FUSE_TIMEOUT =~ ^[1-9][0-9]*$ ]] || bad "--fuse-timeout: '$FUSE_TIMEOUT' is not a number of seconds" ;;
    --queries=*) QUERIES=${a#*=}; [[ $QUERIES =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || bad "--queries: '$QUERIES' is not a list such as 1-22 or 3,9,18" ;;
    --check-cpu) CHECK_CPU=--check-cpu ;;
    --load-only) MODE=load ;;
    *) bench_flag "$a" || bad "unknown flag '$a'" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and runs PostgreSQL as $PG_USER"
OUT=${OUT:-$PGB/bench/sf$SF}
FUSE_TIMEOUT=${FUSE_TIMEOUT:-$((4 * TIMEOUT))}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WITH_STOCK=0
[[ ,$CONFIGS, == *,stock,* ]] && WITH_STOCK=1
WITH_FUSE=0
[[ $DEVICES == *fuse:* ]] && WITH_FUSE=1

QDIR=$(tpch_queries) || die "no TPC-H queries found (set TPCH_QUERIES to the folder of 1.sql .. 22.sql)"

SOCK=$OUT/sock
PORT_STOCK=$((PG_PORT_BASE + 90))
PORT_PATCHED=$((PG_PORT_BASE + 91))
SLOW=$OUT/slow
CL_STOCK=$OUT/cluster-stock
CL_PATCHED=$OUT/cluster-patched
PATCHED=$PGB/inst-patched/bin
STOCK=${PG_STOCK_BIN:-$PGB/inst-stock/bin}
PY_ARGS=(--sf="$SF" --rounds="$ROUNDS" --workers="$WORKERS" --work-mem="$WORK_MEM" --configs="$CONFIGS"
         --devices="$DEVICES" --timeout="$TIMEOUT" --fuse-timeout="$FUSE_TIMEOUT" --queries="$QUERIES" --seed="$SEED" --out="$OUT"
         --qdir="$QDIR" --command="integrations/postgresql/scripts/pg-bench.sh ${RUN_ARGS[*]}")

# Debian's Python (the report's charts need its python3-matplotlib); the interval and
# the shuffle are spillbench's own code (tpch/exec/paired.c through tpch_report.stats).
srv_report_env

if [ "$MODE" = report ] || [ "$MODE" = plan ]; then
  exec /usr/bin/python3 "$PGS/pg_bench.py" "${PY_ARGS[@]}" "--${MODE/report/report-only}"
fi

# --- builds --------------------------------------------------------------------
t0=$SECONDS
PG_BUILD_STOCK=1 bash "$PGS/pg-build.sh" > "$OUT/build.log" 2>&1 \
  || { tail -20 "$OUT/build.log"; die "pg-build.sh failed (see $OUT/build.log)"; }
[ -x "$STOCK/postgres" ] || die "no stock PostgreSQL in $STOCK"
log "PostgreSQL built: patched $PATCHED, stock $STOCK ($((SECONDS - t0)) s)"
chown "$PG_USER": "$OUT"

# --- data ------------------------------------------------------------------------
tools_build tpchgen || die "tpchgen does not build in $PGROOT/tpch-build"
SLOWFS_BIN=""
[ "$WITH_FUSE" = 1 ] && SLOWFS_BIN=$(srv_slowfs_build)
# --- servers -------------------------------------------------------------------
mkdir -p "$SOCK"; chown "$PG_USER": "$SOCK"
bench_conf "$OUT/bench.conf" "$SOCK"
trap srv_stop_all EXIT
trap 'exit 130' INT TERM

LOAD_KEY="sf=$SF schema=$(sha256sum "$TOP/integrations/postgresql/tpch/schema.sql" | cut -c1-16) loader=$("$PATCHED/postgres" --version)"
if [ "$(cat "$CL_PATCHED/.bench-loaded" 2>/dev/null)" != "$LOAD_KEY" ]; then
  t0=$SECONDS
  # The tables' text is made for the load and removed after it: the loaded
  # cluster is the cache (tpchgen makes SF 10 in about 80 s; its 11 GB are better
  # left to the temp files).
  DATA=$PGROOT/bench/data-sf$SF
  if [ ! -f "$DATA/lineitem.tbl" ]; then
    log "tpchgen --sf=$SF --format=tbl into $DATA"
    t1=$SECONDS
    rm -rf "$DATA.tmp"
    "$PGROOT/tpch-build/tpch/gen/tpchgen" --sf="$SF" --out="$DATA.tmp" --format=tbl --threads="$PG_JOBS" > /dev/null
    mv "$DATA.tmp" "$DATA"
    echo "tpchgen --sf=$SF: $((SECONDS - t1)) s, $(du -sh "$DATA" | cut -f1)" > "$DATA.info"
  fi
  chmod -R a+rX "$DATA"
  rm -rf "$CL_STOCK" "$CL_PATCHED"
  srv_new "$CL_PATCHED" "$PATCHED" || die "initdb failed"
  srv_start "$CL_PATCHED" "$PATCHED" $PORT_PATCHED "$OUT/load.log" "$OUT/bench.conf" || die "no server"
  psql_at $PORT_PATCHED -c "create database tpch" > /dev/null
  psql_at $PORT_PATCHED -d tpch -f "$TOP/integrations/postgresql/tpch/schema.sql"
  {
    echo "tpchgen: $(cat "$DATA.info" 2>/dev/null || echo "(generated earlier, not timed)")"
    for t in region nation part supplier partsupp customer orders lineitem; do
      t1=$SECONDS
      log "load $t" >&2
      sed 's/|$//' "$DATA/$t.tbl" | psql_at $PORT_PATCHED -d tpch -c "\\copy $t from stdin with (delimiter '|')"
      echo "copy $t: $((SECONDS - t1)) s"
    done
    t1=$SECONDS
    log "vacuum (freeze, analyze)" >&2
    psql_at $PORT_PATCHED -d tpch -c "vacuum (freeze, analyze)"
    psql_at $PORT_PATCHED -d tpch -c "checkpoint"
    echo "vacuum (freeze, analyze) and checkpoint: $((SECONDS - t1)) s"
    echo "database tpch: $(psql_at $PORT_PATCHED -d tpch -At -c "select pg_size_pretty(pg_database_size('tpch'))")"
    echo "tables and indexes: $(psql_at $PORT_PATCHED -d tpch -At -c "select string_agg(relname || ' ' || pg_size_pretty(pg_total_relation_size(oid)), ', ' order by relname) from pg_class where relnamespace = 'public'::regnamespace and relkind = 'r'")"
  } > "$OUT/load-info.txt"
  srv_stop_all
  # The load's WAL (max_wal_size of recycled segments, 8 GB at SF 10) is of no use
  # to read-only runs; after a clean shutdown pg_resetwal removes it safely.
  as_user "$PATCHED/pg_resetwal" -D "$CL_PATCHED" > /dev/null
  echo "data directory: $(du -sh "$CL_PATCHED" | cut -f1); load in all: $((SECONDS - t0)) s" >> "$OUT/load-info.txt"
  echo "$LOAD_KEY" > "$CL_PATCHED/.bench-loaded"
  rm -rf "$DATA"
  log "SF $SF loaded in $((SECONDS - t0)) s: $OUT/load-info.txt"
fi
if [ "$WITH_STOCK" = 1 ] && [ "$(cat "$CL_STOCK/.bench-loaded" 2>/dev/null)" != "$LOAD_KEY" ]; then
  rm -rf "$CL_STOCK"
  cp -a "$CL_PATCHED" "$CL_STOCK"
  rm -f "$CL_STOCK/postmaster.pid"
  # The copy's temp tablespace, if any, must be its own directory on the device.
  for l in "$CL_STOCK"/pg_tblspc/*; do
    [ -L "$l" ] || continue
    rm -rf "$SLOW/stock"
    cp -a "$SLOW/patched" "$SLOW/stock"
    ln -sfn "$SLOW/stock" "$l"
  done
  log "cluster copied for the stock server"
fi
if [ "$MODE" = load ]; then
  cat "$OUT/load-info.txt"
  exit 0
fi

if [ "$WITH_STOCK" = 1 ]; then
  srv_start "$CL_STOCK" "$STOCK" $PORT_STOCK "$OUT/stock.log" "$OUT/bench.conf" || die "no stock server"
fi
srv_start "$CL_PATCHED" "$PATCHED" $PORT_PATCHED "$OUT/patched.log" "$OUT/bench.conf" || die "no patched server"
PORTS=$PORT_PATCHED
[ "$WITH_STOCK" = 1 ] && PORTS="$PORT_STOCK $PORT_PATCHED"
# The temp tablespace on the slow device: its location is the mount point of
# slowfs (pg_bench.py mounts it, in place, before a fuse phase), one directory per
# cluster.
if [ "$WITH_FUSE" = 1 ]; then
  for port in $PORTS; do
    name=$([ "$port" = $PORT_STOCK ] && echo stock || echo patched)
    if [ -z "$(psql_at "$port" -d tpch -At -c "select 1 from pg_tablespace where spcname = 'slowtemp'")" ]; then
      mountpoint -q "$SLOW" && fusermount3 -u "$SLOW"
      mkdir -p "$SLOW/$name"; chown "$PG_USER": "$SLOW" "$SLOW/$name"
      psql_at "$port" -d tpch -c "create tablespace slowtemp location '$SLOW/$name'"
    fi
  done
fi
if [ "$WITH_STOCK" = 1 ]; then
  # Both servers must see the same data and statistics, and run with the same settings.
  for port in $PORTS; do
    psql_at "$port" -d tpch -At -c "select string_agg(relname || '=' || reltuples::bigint || '/' || relpages, ' ' order by relname) from pg_class where relnamespace = 'public'::regnamespace"
  done > "$OUT/relations.txt"
  [ "$(sed -n 1p "$OUT/relations.txt")" = "$(sed -n 2p "$OUT/relations.txt")" ] \
    || die "stock and patched clusters differ: $OUT/relations.txt"
fi
settings_sql="select name || ' = ' || current_setting(name) from pg_settings
  where source not in ('default', 'override', 'client', 'session') and name not in ('port', 'config_file',
  'data_directory', 'hba_file', 'ident_file') order by name"
if [ "$WITH_STOCK" = 1 ]; then
  [ "$(psql_at $PORT_STOCK -d tpch -At -c "$settings_sql")" = "$(psql_at $PORT_PATCHED -d tpch -At -c "$settings_sql")" ] \
    || die "stock and patched run with different settings"
fi
{
  [ "$WITH_STOCK" = 1 ] && echo "stock: $(psql_at $PORT_STOCK -d tpch -At -c 'select version()') ($STOCK)"
  echo "patched: $(psql_at $PORT_PATCHED -d tpch -At -c 'select version()') ($PATCHED)"
  echo "indexes: $(psql_at $PORT_PATCHED -d tpch -At -c "select string_agg(indexname || ' ' || regexp_replace(indexdef, '.* USING ', ''), '; ' order by indexname) from pg_indexes where schemaname = 'public'")"
  echo "settings (not at their defaults$([ "$WITH_STOCK" = 1 ] && echo "; the same on both servers")): $(psql_at $PORT_PATCHED -d tpch -At -c "$settings_sql" | paste -sd ';' | sed 's/;/; /g')"
  echo "tables: $(psql_at $PORT_PATCHED -d tpch -At -c "select string_agg(relname || '=' || reltuples::bigint || '/' || relpages, ' ' order by relname) from pg_class where relnamespace = 'public'::regnamespace")"
  echo "load: $(paste -sd ';' "$OUT/load-info.txt" | sed 's/;/; /g')"
} > "$OUT/server-info.txt"

STOCK_ARGS=()
[ "$WITH_STOCK" = 1 ] && STOCK_ARGS=(--stock-port="$PORT_STOCK" --stock-log="$OUT/stock.log" --stock-data="$CL_STOCK")
FUSE_ARGS=()
[ "$WITH_FUSE" = 1 ] && FUSE_ARGS=(--slowfs="$SLOWFS_BIN" --slow-dir="$SLOW")
/usr/bin/python3 "$PGS/pg_bench.py" "${PY_ARGS[@]}" --sock="$SOCK" --psql="$PATCHED/psql" \
  --user="$PG_USER" --patched-port=$PORT_PATCHED --patched-log="$OUT/patched.log" \
  --patched-data="$CL_PATCHED" "${STOCK_ARGS[@]}" "${FUSE_ARGS[@]}" $CHECK_CPU

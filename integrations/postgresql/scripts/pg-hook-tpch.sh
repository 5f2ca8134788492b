#!/usr/bin/env bash
# TPC-H through pg_buffile: pg_buffile's methods against each other on one PostgreSQL
# server with the BufFile storage hook (issue 46: auto against off, off being
# PostgreSQL's own buffile.c path), in wall and CPU time, query by query and for the suite.
#
#   integrations/postgresql/scripts/pg-hook-tpch.sh 18|master [--sf=10] [--method=off,auto]
#       [--queries=LIST] [--workers=2] [--work-mem=4MB] [--rounds=5] [--seed=N]
#       [--timeout=600] [--device=page] [--results=FILE] [--out=FILE] [--load-only]
#       [--report-only]
#
# --sf (10): 0.01, 0.1, 1, 3, 10, 30; --method (off,auto): a list of pg_buffile's values
# (off, none, lz4, zstd, gzip, auto), the first the reference of the ratios; --queries
# (2,3,4,5,7,8,10,11,12,13,14,15,16,18,21,22: the 16 that spill at SF 10 with 4MB, Q6 left
# out as the control it was) a list such as 1-22 or 3,9,18; --workers (2)
# max_parallel_workers_per_gather; --work-mem (4MB); --rounds (5); --seed (1) the order of
# the methods in each (query, round); --timeout (600) statement_timeout in seconds; --results
# (the SF's directory's results.jsonl) the runs, one line per (query, round), resumable;
# --out a copy of the Markdown report; --load-only stops once the cluster is loaded;
# --report-only writes the report from the results file and runs nothing. --device (page)
# where the temp files go (pg-device.sh): page, slowfs:RATE (tools/slowfs at RATE, e.g.
# slowfs:200MB, mounted by the runner, validated before use; slowfs:RATE:tmpfs over a
# tmpfs, nothing written back to the disk) or cgroup:LIMIT (the server in
# a cgroup v1 memory cgroup of LIMIT, e.g. cgroup:640MB: the spill reaches the disk); its
# results go to results-<device>.jsonl beside results.jsonl (every line names its device),
# the report to report-<device>.md, with what the device saw per run.
#
# Why a sibling of pg-hook-wall.sh and not a mode of it: that script compares two servers
# (pristine and the hook) on tables it makes with SQL; this one runs a single hook server,
# methods per session, on a cluster loaded from tpch/gen's files, with CPU accounting. What
# is the same is shared: the builds (pg-hook-pristine.sh, cached under PGHOOK_DIR),
# pg_buffile's install and the servers (pg-common.sh, pg-server.sh), and in Python the
# results file, psql's timing and auto's log line (pg_hook_wall.py), the temp-file log
# (templog.py) and the statistics (tpch_report.stats).
#
# The cluster: $CB/tpch-sf<SF> (CB: pg-hook-pristine.sh's directory), initdb'd and loaded
# by the hook's build once (integrations/postgresql/tpch/schema.sql: the spec's primary
# keys, no other index; COPY of tpchgen's files, VACUUM (FREEZE, ANALYZE), a checkpoint,
# then pg_resetwal to drop the load's WAL), reused while its key (SF, schema's hash, the
# server's version) matches; the generated text is removed after the load. The time of
# each phase of the load is in load-info.txt beside it. Port 54599 (18), 54699 (master).
# The server: shared_buffers 256MB, autovacuum off, log_temp_files 0, pg_buffile
# preloaded (pg_buffile.method the first of --method, each run's set per session).
# CPU accounting reads /proc of the postmaster (pg_hook_tpch.py): nothing else may use
# the server while it runs. Timing is the point: run it on a quiet machine.
set -euo pipefail
MAJOR=${1:-}
case $MAJOR in
  18) PORT=54599 ;;
  master) PORT=54699 ;;
  *) sed -n '6,9p' "$0" | sed 's/^# \{0,1\}/usage: /; 2,$s/^usage: /       /' >&2; exit 2 ;;
esac
shift
SF=10 METHOD=off,auto QUERIES=2,3,4,5,7,8,10,11,12,13,14,15,16,18,21,22 WORKERS=2
WORK_MEM=4MB ROUNDS=5 SEED=1 TIMEOUT=600 RESULTS="" OUTF="" MODE=run DEVSPEC=page
CMD="integrations/postgresql/scripts/pg-hook-tpch.sh $MAJOR${*:+ $*}"
bad() { printf 'pg-hook-tpch.sh: %s\n' "$1" >&2; exit 2; }
for a in "$@"; do
  case $a in
    --sf=*) SF=${a#*=}; [[ $SF =~ ^(0\.01|0\.1|1|3|10|30)$ ]] || bad "--sf takes 0.01, 0.1, 1, 3, 10 or 30" ;;
    --method=*) METHOD=${a#*=}
      [[ ,$METHOD, =~ ^(,(off|none|lz4|zstd|gzip|auto))+,$ && $METHOD == *,* ]] \
        || bad "--method takes a list of two or more of off, none, lz4, zstd, gzip, auto"
      dup=$(tr , '\n' <<< "$METHOD" | sort | uniq -d)
      [ -z "$dup" ] || bad "--method names $dup twice" ;;
    --queries=*) QUERIES=${a#*=}
      [[ $QUERIES =~ ^([1-9]|1[0-9]|2[0-2])(-([1-9]|1[0-9]|2[0-2]))?(,([1-9]|1[0-9]|2[0-2])(-([1-9]|1[0-9]|2[0-2]))?)*$ ]] \
        || bad "--queries takes a list of 1..22 such as 1-22 or 3,9,18" ;;
    --workers=*) WORKERS=${a#*=}; [[ $WORKERS =~ ^[0-8]$ ]] || bad "--workers takes 0..8" ;;
    --work-mem=*) WORK_MEM=${a#*=}; [[ $WORK_MEM =~ ^[1-9][0-9]*(kB|MB|GB)$ ]] || bad "--work-mem takes a size such as 4MB" ;;
    --rounds=*) ROUNDS=${a#*=}; [[ $ROUNDS =~ ^[1-9][0-9]{0,2}$ ]] || bad "--rounds takes 1..999" ;;
    --seed=*) SEED=${a#*=}; [[ $SEED =~ ^[0-9]{1,9}$ ]] || bad "--seed takes a number" ;;
    --timeout=*) TIMEOUT=${a#*=}; TIMEOUT=${TIMEOUT%s}; [[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || bad "--timeout takes seconds" ;;
    --device=*) DEVSPEC=${a#*=} ;;
    --results=*) RESULTS=$(realpath -m "${a#*=}") ;;
    --out=*) OUTF=$(realpath -m "${a#*=}") ;;
    --load-only) MODE=load ;;
    --report-only) MODE=report ;;
    *) bad "unknown argument $a" ;;
  esac
done
# shellcheck source=pg-common.sh
. "$(dirname "$0")/pg-common.sh"
# shellcheck source=pg-device.sh
. "$PGS/pg-device.sh"
dev_parse "$DEVSPEC" || bad "--device takes page, slowfs:RATE[:tmpfs] (e.g. slowfs:200MB) or cgroup:LIMIT (e.g. cgroup:640MB)"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and builds as $PG_USER"
QDIR=$(tpch_queries) || die "no TPC-H queries found (set TPCH_QUERIES to the folder of 1.sql .. 22.sql)"
T0=$SECONDS
t0=$SECONDS
if [ "$MODE" = report ]; then
  # the report reads the results file alone: no build, no server (a load or a run may
  # be using them)
  CB=${PGHOOK_DIR:-$PGROOT/hook}/$MAJOR/bench
else
  built=$(bash "$PGS/pg-hook-pristine.sh" "$MAJOR")
  sed '$d' <<< "$built"
  CB=${built##*$'\n'}
fi
BIN=$CB/inst-hook/bin
W=$CB/tpch-sf$SF
SOCK=$W/sock
export PSQL_BIN=$BIN/psql
# shellcheck source=pg-server.sh
. "$PGS/pg-server.sh"
trap dev_teardown EXIT
srv_report_env
if [ "$MODE" != report ]; then
  pg_buffile_install "$BIN/pg_config" "$CB/ext" \
    || { cat "$CB/ext/make.log" 2>/dev/null || true; die "pg_buffile does not build against $CB/inst-hook"; }
  tools_build tpchgen || die "tpchgen does not build in $PGROOT/tpch-build"
  log "builds (cached) and pg_buffile installed: $((SECONDS - t0)) s"
fi
mkdir -p "$W" "$SOCK"
chown "$PG_USER": "$W" "$SOCK"
CL=$W/cluster
srv_conf "$W/tpch.conf" "$SOCK" "shared_buffers = 256MB" "autovacuum = off" \
  "log_temp_files = 0" "synchronous_commit = off" "max_wal_size = 8GB" \
  "shared_preload_libraries = 'pg_buffile'" "pg_buffile.method = '${METHOD%%,*}'"

# --- the cluster, loaded once per key ------------------------------------------------
# (the version from pristine's install: the same build as the hook's but for buffile.o, and
# left in place while pg-hook-pristine.sh makes the hook's again)
VERSION=$("$CB/inst-pristine/bin/postgres" --version)
key="sf=$SF schema=$(sha256sum "$TOP/integrations/postgresql/tpch/schema.sql" | cut -c1-16) $VERSION"
if [ "$MODE" != report ] && [ "$(cat "$W/data.key" 2>/dev/null)" != "$key" ]; then
  tl=$SECONDS
  rm -f "$W/data.key"
  DATA=$W/data
  info=$W/load-info.txt
  : > "$info"
  if [ ! -f "$DATA/lineitem.tbl" ]; then
    t0=$SECONDS
    log "tpchgen --sf=$SF into $DATA"
    rm -rf "$DATA.tmp"
    "$PGROOT/tpch-build/tpch/gen/tpchgen" --sf="$SF" --out="$DATA.tmp" --format=tbl \
      --threads="$PG_JOBS" > /dev/null
    mv "$DATA.tmp" "$DATA"
    echo "tpchgen --sf=$SF: $((SECONDS - t0)) s, $(du -sh "$DATA" | cut -f1)" >> "$info"
  fi
  chmod -R a+rX "$DATA"
  t0=$SECONDS
  srv_new "$CL" "$BIN"
  srv_start "$CL" "$BIN" "$PORT" "$W/load.log" "$W/tpch.conf"
  psql_at "$PORT" -c "create database tpch" > /dev/null
  psql_at "$PORT" -d tpch -f "$TOP/integrations/postgresql/tpch/schema.sql" > /dev/null
  echo "initdb, start, schema: $((SECONDS - t0)) s" >> "$info"
  for t in region nation part supplier partsupp customer orders lineitem; do
    t0=$SECONDS
    log "copy $t"
    sed 's/|$//' "$DATA/$t.tbl" | psql_at "$PORT" -d tpch -c "\\copy $t from stdin with (delimiter '|')" > /dev/null
    echo "copy $t: $((SECONDS - t0)) s" >> "$info"
  done
  t0=$SECONDS
  log "vacuum (freeze, analyze), checkpoint"
  psql_at "$PORT" -d tpch -c "vacuum (freeze, analyze)" -c "checkpoint"
  echo "vacuum (freeze, analyze) and checkpoint: $((SECONDS - t0)) s" >> "$info"
  echo "database tpch: $(psql_at "$PORT" -d tpch -At -c "select pg_size_pretty(pg_database_size('tpch'))")" >> "$info"
  srv_stop_all
  # the load's WAL is of no use to read-only runs; after a clean stop pg_resetwal drops it
  as_user "$BIN/pg_resetwal" -D "$CL" > /dev/null
  echo "data directory: $(du -sh "$CL" | cut -f1); the load in all: $((SECONDS - tl)) s" >> "$info"
  echo "$key" > "$W/data.key"
  rm -rf "$DATA"
  log "SF $SF loaded in $((SECONDS - tl)) s"
  cat "$info"
fi
if [ "$MODE" = load ]; then
  cat "$W/load-info.txt"
  exit 0
fi

# --- the runs --------------------------------------------------------------------------
REPORT=$W/report.md
if [ "$DEV_KIND" = page ]; then
  RESULTS=${RESULTS:-$W/results.jsonl}
else
  RESULTS=${RESULTS:-$W/results-$DEV_LABEL.jsonl}
  REPORT=$W/report-$DEV_LABEL.md
fi
touch "$RESULTS"
chown "$PG_USER": "$RESULTS"
ONLY=()
if [ "$MODE" = report ]; then
  ONLY=(--report-only)
else
  dev_setup "$W"
  dev_tempdir "$CL" tpch
  dev_prewarm "$CL"
  t0=$SECONDS
  dev_srv_start "$CL" "$BIN" "$PORT" "$W/server.log" "$W/tpch.conf"
  psql_at "$PORT" -d tpch -c "create extension if not exists pg_buffile" > /dev/null
  # the tables into the page cache (every run then reads them from memory)
  psql_at "$PORT" -d tpch -At -c "select count(*) from lineitem" -c "select count(*) from orders" \
    -c "select count(*) from partsupp" -c "select count(*) from part" \
    -c "select count(*) from customer" -c "select count(*) from supplier" > /dev/null
  log "the server started, the tables read: $((SECONDS - t0)) s"
fi
tree=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
t0=$SECONDS
as_user env BUFFILE_PAIRED_LIB="$BUFFILE_PAIRED_LIB" PYTHONPATH="$PYTHONPATH" \
  PYTHONDONTWRITEBYTECODE=1 python3 "$PGS/pg_hook_tpch.py" --psql="$PSQL_BIN" --sock="$SOCK" \
  --db=tpch --data="$CL" --log="$W/server.log" --qdir="$QDIR" --major="$MAJOR" \
  --command="$CMD" --version="$VERSION" --results="$RESULTS" \
  --method="$METHOD" --queries="$QUERIES" --work-mem="$WORK_MEM" --sf="$SF" --port="$PORT" \
  --rounds="$ROUNDS" --seed="$SEED" --workers="$WORKERS" --timeout="$TIMEOUT" --tree="$tree" \
  --device="$DEV" --device-info="$W/device.json" "${ONLY[@]}" > "$REPORT"
log "the runs and the report: $((SECONDS - t0)) s; in all $((SECONDS - T0)) s"
cat "$REPORT"
if [ -n "$OUTF" ]; then
  cp "$REPORT" "$OUTF"
  log "written to $OUTF"
fi

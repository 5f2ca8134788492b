# shellcheck shell=bash
# The one way the scripts of this folder run a PostgreSQL server: the cluster, the
# settings it runs with, its start and stop, and psql on it. Sourced (after
# pg-common.sh) by pg-test.sh and its parts, pg-bench.sh, pg-bench-hashmatrix.sh and
# pg-bench-hashjoin.sh, so that every server is made and reached alike.
#
#   srv_new DATA BIN              a new, empty cluster in DATA (a server a killed run
#                                 left on it is stopped and DATA removed first); the
#                                 output of initdb goes to DATA.initdb.log
#   srv_conf FILE SOCKDIR [SETTING...]
#                                 the settings every server here has, then each SETTING
#                                 as a line of its own (included from postgresql.conf)
#   bench_conf FILE SOCKDIR       srv_conf with the benchmarks' settings
#   srv_start DATA BIN PORT LOG CONF
#                                 start a server on DATA with CONF included; a server
#                                 or stale pid file a killed run left is stopped first;
#                                 returns 1, showing the log's tail, if it does not start
#   srv_stop DATA BIN             stop the server on DATA, if one runs
#   srv_stop_all                  stop every server srv_start started (an EXIT trap)
#   psql_at PORT [psql args...]   psql (PSQL_BIN, the patched build's) as $PG_USER on
#                                 the server at $SOCK and PORT, database postgres unless
#                                 -d says otherwise; stops at the first error unless
#                                 -v ON_ERROR_STOP=0; PGOPTIONS and PGAPPNAME pass through
#   srv_slowfs_build              build tools/slowfs (tools_build); prints its path
#   srv_report_env                build paired.c's shared library and point the report
#                                 scripts at it and at tpch_report (the statistics)
#   bench_flag ARG                the flags both benchmarks take: --timeout, --seed,
#                                 --out, --report-only, --plan, --help (sets TIMEOUT,
#                                 SEED, OUT, MODE; calls the script's `bad` on a bad
#                                 value); returns 1 for any other flag
# Ports: PG_PORT_BASE (pg-common.sh, per major) and + 1 for pg-test.sh's patched and
# stock servers, + 4 for pg-bench-hashjoin.sh, + 90 and + 91 for pg-bench.sh's stock
# and patched servers, + 92 for the hash-join matrix.

PSQL_BIN=${PSQL_BIN:-$PGB/inst-patched/bin/psql}
SRV_STARTED=()

srv_new() {
  local data=$1 bin=$2
  if [ -f "$data/postmaster.pid" ]; then
    as_user "$bin/pg_ctl" -D "$data" -m immediate stop > /dev/null 2>&1 || true
  fi
  rm -rf "$data"
  as_user "$bin/initdb" -D "$data" -A trust -E UTF8 --locale=C --no-sync > "$data.initdb.log" 2>&1 \
    || { cat "$data.initdb.log"; return 1; }
}

# Every server here: no TCP (a Unix socket in SOCKDIR only); fsync off, as nothing
# here must survive a crash; no JIT, whose compile times would blur what is
# measured; room for parallel workers.
srv_conf() {
  local file=$1 sock=$2 line
  shift 2
  {
    printf "listen_addresses = ''\nunix_socket_directories = '%s'\n" "$sock"
    printf 'fsync = off\njit = off\nmax_parallel_workers = 8\n'
    for line in "$@"; do printf '%s\n' "$line"; done
  } > "$file"
  chown "$PG_USER": "$file"
}

# The benchmarks' settings. Rewritten at every start, so a cached cluster follows
# the script. No autovacuum (nothing runs behind a measurement); log_temp_files = 0
# logs every temp file, which the runs count.
bench_conf() {
  srv_conf "$1" "$2" "shared_buffers = 1GB" "work_mem = 4MB" "maintenance_work_mem = 256MB" \
    "max_worker_processes = 8" "max_parallel_workers_per_gather = 0" "temp_file_limit = -1" \
    "log_temp_files = 0" "log_line_prefix = '%m [%p] '" "log_min_duration_statement = -1" \
    "autovacuum = off" "synchronous_commit = off" "full_page_writes = off" "max_wal_size = 8GB" \
    "checkpoint_timeout = 1h"
}

srv_start() {
  local data=$1 bin=$2 port=$3 logf=$4 conf=$5
  grep -q "^include '$conf'" "$data/postgresql.conf" || echo "include '$conf'" >> "$data/postgresql.conf"
  # A killed run leaves a server or only its stale pid file (pg_ctl then fails: fine).
  srv_stop "$data" "$bin"
  if ! as_user "$bin/pg_ctl" -D "$data" -l "$logf" -o "-p $port" -w -t 300 start > /dev/null; then
    tail -20 "$logf"
    echo "could not start $bin/postgres on $data" >&2
    return 1
  fi
  SRV_STARTED+=("$bin:$data")
}

srv_stop() {
  local data=$1 bin=$2
  if [ -f "$data/postmaster.pid" ]; then
    as_user "$bin/pg_ctl" -D "$data" -m fast -w stop > /dev/null 2>&1 || true
  fi
}

srv_stop_all() {
  local s
  for s in "${SRV_STARTED[@]}"; do
    srv_stop "${s#*:}" "${s%%:*}"
  done
  SRV_STARTED=()
}

psql_at() {
  local port=$1
  shift
  as_user env PGOPTIONS="${PGOPTIONS:-}" PGAPPNAME="${PGAPPNAME:-psql}" "$PSQL_BIN" -X -q \
    -h "$SOCK" -p "$port" -d postgres -v ON_ERROR_STOP=1 "$@"
}

# slowfs needs libfuse3 (install-deps.sh installs it); CMake builds it wherever
# libfuse3 is found.
srv_slowfs_build() {
  local b=$PGROOT/tpch-build
  tools_build slowfs || die "slowfs does not build in $b"
  [ -x "$b/tools/slowfs/slowfs" ] || die "no slowfs in $b (is libfuse3-dev installed?)"
  [ -c /dev/fuse ] || die "/dev/fuse is absent: slowfs cannot be mounted here"
  echo "$b/tools/slowfs/slowfs"
}

# The benchmarks' Python reports take their statistics from tpch_report.stats, which
# loads paired.c's shared build (the CMake target `paired`): built in the same tree as
# the other tools of the benchmarks, and found through the environment.
srv_report_env() {
  local b=$PGROOT/tpch-build
  bash "$TOP/scripts/install-deps.sh" > /dev/null
  tools_build paired || die "libpaired.so does not build in $b"
  export BUFFILE_PAIRED_LIB=$b/tpch/exec/libpaired.so PYTHONPATH=$TOP/tpch/report PYTHONDONTWRITEBYTECODE=1
}

# shellcheck disable=SC2034 # sets the calling script's variables
bench_flag() {
  case "$1" in
    --timeout=*) TIMEOUT=${1#*=}; TIMEOUT=${TIMEOUT%s}; [[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || bad "--timeout: '$TIMEOUT' is not a number of seconds" ;;
    --seed=*) SEED=${1#*=}; [[ $SEED =~ ^[0-9]+$ ]] || bad "--seed: '$SEED' is not a number" ;;
    --out=*) OUT=${1#*=}; [ -n "$OUT" ] || bad "--out: empty" ;;
    --report-only) MODE=report ;;
    --plan) MODE=plan ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) return 1 ;;
  esac
}

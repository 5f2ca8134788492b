# shellcheck shell=bash
# Benchmark servers: the settings they run with, their start and stop. Sourced
# (after pg-common.sh) by pg-bench.sh and pg-bench-hashmatrix.sh, so that the
# TPC-H runs and the hash-join matrix run servers set up alike.
#
#   bench_conf FILE SOCKDIR       write the settings (included from postgresql.conf)
#   srv_start DATA BIN PORT LOG CONF
#                                 start a server on DATA with CONF included; a server
#                                 or stale pid file a killed run left is stopped first
#   srv_stop_all                  stop every server srv_start started (an EXIT trap)
#   srv_psql BIN SOCKDIR PORT DB [psql args...]   psql as $PG_USER, ON_ERROR_STOP
#   srv_slowfs_build BUILDDIR     build tools/slowfs there; prints the binary's path
#   srv_report_env                build paired.c's shared library and point the report
#                                 scripts at it and at tpch_report (the statistics)
#   bench_flag ARG                the flags both benchmarks take: --timeout, --seed,
#                                 --out, --report-only, --plan, --help (sets TIMEOUT,
#                                 SEED, OUT, MODE; calls the script's `bad` on a bad
#                                 value); returns 1 for any other flag
# Ports: PG_PORT_BASE (pg-common.sh, per major) + 90 and + 91 for
# pg-bench.sh's stock and patched servers, + 92 for the hash-join matrix.

# Settings of every benchmark server. Rewritten at every start, so a cached
# cluster follows the script. No autovacuum (nothing runs behind a measurement);
# log_temp_files = 0 logs every temp file, which the runs count; fsync off, as
# nothing here must survive a crash.
bench_conf() {
  local file=$1 sock=$2
  cat > "$file" <<EOF
listen_addresses = ''
unix_socket_directories = '$sock'
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
  chown "$PG_USER": "$file"
}

SRV_STARTED=()

srv_start() {
  local data=$1 bin=$2 port=$3 logf=$4 conf=$5
  grep -q "^include '$conf'" "$data/postgresql.conf" || echo "include '$conf'" >> "$data/postgresql.conf"
  # A killed run leaves a server or only its stale pid file (pg_ctl then fails: fine).
  if [ -f "$data/postmaster.pid" ]; then
    as_user "$bin/pg_ctl" -D "$data" -m fast -w stop > /dev/null 2>&1 || true
  fi
  as_user "$bin/pg_ctl" -D "$data" -l "$logf" -o "-p $port" -w -t 300 start > /dev/null \
    || { tail -20 "$logf"; die "could not start $bin/postgres on $data"; }
  SRV_STARTED+=("$bin:$data")
}

srv_stop_all() {
  local s
  for s in "${SRV_STARTED[@]}"; do
    as_user "${s%%:*}/pg_ctl" -D "${s#*:}" -m fast -w stop > /dev/null 2>&1 || true
  done
  SRV_STARTED=()
}

srv_psql() {
  local bin=$1 sock=$2 port=$3 db=$4
  shift 4
  as_user "$bin/psql" -X -q -h "$sock" -p "$port" -d "$db" -v ON_ERROR_STOP=1 "$@"
}

# slowfs needs libfuse3 (install-deps.sh installs it); CMake builds it wherever
# libfuse3 is found.
srv_slowfs_build() {
  local b=$1
  cmake -S "$TOP" -B "$b" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TESTS=OFF > /dev/null
  cmake --build "$b" --target slowfs -j"$PG_JOBS" > /dev/null || die "slowfs does not build in $b"
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
  cmake -S "$TOP" -B "$b" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TESTS=OFF > /dev/null
  cmake --build "$b" --target paired -j"$PG_JOBS" > /dev/null || die "libpaired.so does not build in $b"
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

# shellcheck shell=bash
# The one way the scripts of this folder run a PostgreSQL server: the cluster, the
# settings it runs with, its start and stop, and psql on it. Sourced (after
# pg-common.sh) by pg-test/lib.sh and pg-hook-wall.sh, so that every server is made and
# reached alike.
#
#   srv_new DATA BIN              a new, empty cluster in DATA (a server a killed run
#                                 left on it is stopped and DATA removed first); the
#                                 output of initdb goes to DATA.initdb.log
#   srv_conf FILE SOCKDIR [SETTING...]
#                                 the settings every server here has, then each SETTING
#                                 as a line of its own (included from postgresql.conf)
#   srv_start DATA BIN PORT LOG CONF
#                                 start a server on DATA with CONF included (inside the
#                                 memory cgroup SRV_CGROUP when set); a server
#                                 or stale pid file a killed run left is stopped first;
#                                 returns 1, showing the log's tail, if it does not start
#   srv_stop DATA BIN             stop the server on DATA, if one runs
#   srv_stop_all                  stop every server srv_start started (an EXIT trap)
#   psql_at PORT [psql args...]   psql (PSQL_BIN) as $PG_USER on the server at $SOCK
#                                 and PORT, database postgres unless -d says otherwise;
#                                 stops at the first error unless -v ON_ERROR_STOP=0;
#                                 PGOPTIONS and PGAPPNAME pass through
#   srv_report_env                build paired.c's shared library and point Python at
#                                 it and at tpch_report (the statistics)
# Ports: pg-hook.sh's extension server (18: 54591, master: 54691), + 2 and + 3 for the
# parts of pg-test/, + 4 and + 5 for pg-hook-wall.sh.

PSQL_BIN=${PSQL_BIN:?PSQL_BIN: the psql to use}
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

srv_start() {
  local data=$1 bin=$2 port=$3 logf=$4 conf=$5
  grep -q "^include '$conf'" "$data/postgresql.conf" || echo "include '$conf'" >> "$data/postgresql.conf"
  # A killed run leaves a server or only its stale pid file (pg_ctl then fails: fine).
  srv_stop "$data" "$bin"
  # SRV_CGROUP (pg-device.sh's cgroup:LIMIT): the server starts inside that cgroup (the
  # subshell moves itself there, pg_ctl and the postmaster it forks inherit it)
  if ! ( if [ -n "${SRV_CGROUP:-}" ]; then echo "$BASHPID" > "$SRV_CGROUP/cgroup.procs"; fi
         as_user "$bin/pg_ctl" -D "$data" -l "$logf" -o "-p $port" -w -t 300 start > /dev/null ); then
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

# A benchmark's Python takes its statistics from tpch_report.stats, which loads paired.c's
# shared build (the CMake target `paired`): built in the tree of the other tools
# (tools_build), and found through the environment.
srv_report_env() {
  local b=$PGROOT/tpch-build
  bash "$TOP/scripts/install-deps.sh" > /dev/null
  tools_build paired || die "libpaired.so does not build in $b"
  export BUFFILE_PAIRED_LIB=$b/tpch/exec/libpaired.so PYTHONPATH=$TOP/tpch/report PYTHONDONTWRITEBYTECODE=1
}

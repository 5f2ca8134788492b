# shellcheck shell=bash
# What the parts of pg-test.sh share, sourced by each part (a part is a script of its
# own, run by pg-test.sh after the build, or alone once PostgreSQL is built): the
# builds, the run directory, the ports, the tests' servers and the temp-file counts.
#
#   start_server NAME BINDIR PORT [SETTING...]
#                         a new cluster in $RUN/NAME with the tests' settings and each
#                         SETTING, its server on PORT, its log $RUN/NAME.log
#   templog ARGS...       templog.py: count and judge the temp-file lines of logs
# Every server a part starts is stopped when the part exits.
. "$(dirname "${BASH_SOURCE[0]}")/../pg-common.sh"
. "$PGS/pg-server.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: PostgreSQL runs as $PG_USER"

# shellcheck disable=SC2034 # the parts use them
B=$PGB/build-patched
PATCHED=$PGB/inst-patched/bin
[ -x "$PATCHED/postgres" ] || die "no patched PostgreSQL in $PATCHED: run pg-build.sh (pg-test.sh does)"
# shellcheck disable=SC2034
STOCK=${PG_STOCK_BIN:-$(cat "$PGB/stock-bin")}  # PG_STOCK_BIN: another stock reference
RUN=$PGB/run
SOCK=$RUN/sock
# shellcheck disable=SC2034
PORT_PATCHED=$PG_PORT_BASE PORT_STOCK=$((PG_PORT_BASE + 1))
mkdir -p "$RUN" "$SOCK"
chown "$PG_USER": "$RUN" "$SOCK"
trap srv_stop_all EXIT

# The tests' settings: every temp file logged with the process that wrote it, room for
# the parallel workers the parts force.
start_server() {
  local name=$1 bin=$2 port=$3
  shift 3
  rm -f "$RUN/$name.log"
  srv_new "$RUN/$name" "$bin" || return 1
  srv_conf "$RUN/$name.conf" "$SOCK" "max_worker_processes = 16" "log_temp_files = 0" \
    "log_line_prefix = '%m [%p] '" "$@"
  srv_start "$RUN/$name" "$bin" "$port" "$RUN/$name.log" "$RUN/$name.conf"
}

templog() {
  python3 "$PGS/templog.py" "$@"
}

# out_dir NAME: a fresh $RUN/NAME for a part's files, writable by the server's user.
out_dir() {
  rm -rf "${RUN:?}/$1"
  mkdir -p "$RUN/$1"
  chown "$PG_USER": "$RUN/$1"
}

# shellcheck shell=bash
# What the parts in this folder share, sourced by each part (a part is a script of its
# own, run by pg-hook.sh's parts battery, tpch, aborts and tap-stream, or alone once
# pg-hook.sh has built PostgreSQL with the hook and pg_buffile): the builds, the run
# directory, the ports, the tests' servers and the temp-file counts.
#
# The server is the hook's build of pg-hook.sh (PGHOOK_INST, its install; PGHOOK_PORT,
# the first of two ports), started with shared_preload_libraries = 'pg_buffile' and the
# GUCs pg_buffile.method and pg_buffile.level; stock is PG_STOCK_BIN (pg-hook.sh passes
# the pristine build of pg-hook-pristine.sh), else the same build without the module
# (the hook unset, which is core's code: pg-hook.sh's part check). The parts name a
# setting as the retired series' temp_file_compression spelled it (off, none, lz4,
# zstd:level=3, zlib, auto, pglz); gucs, set_sql and conf_lines turn it into
# pg_buffile's settings.
#
#   start_server NAME BINDIR PORT [SETTING...]
#                         a new cluster in $RUN/NAME with the tests' settings and each
#                         SETTING, its server on PORT, its log $RUN/NAME.log (the
#                         patched server preloads pg_buffile, beside any
#                         shared_preload_libraries a SETTING names, unless NAME ends
#                         in -stock)
#   gucs VALUE            the -c options that select VALUE, for PGOPTIONS
#   set_sql VALUE         the same as SQL SET statements
#   conf_lines VALUE      the same as lines of postgresql.conf
#   has_value VALUE       whether pg_buffile has VALUE (it has no pglz)
#   templog ARGS...       templog.py: count and judge the temp-file lines of logs
# and B and SRC (the build and source trees), GUC (the method's setting's name), CTX
# (pg_buffile's memory context), FILESET_FILE (a find -path pattern of a FileSet file of
# pg_buffile's).
# Every server a part starts is stopped when the part exits.
. "$(dirname "${BASH_SOURCE[0]}")/../pg-common.sh"
[ -n "${PGHOOK_INST:-}" ] || die "PGHOOK_INST is not set: the install of pg-hook.sh's build (pg-hook.sh sets it)"
PATCHED=$PGHOOK_INST/bin
if [ ! -x "$PATCHED/postgres" ] || [ ! -f "$PGHOOK_INST/lib/postgresql/pg_buffile.so" ]; then
  die "no PostgreSQL with the hook and pg_buffile in $PGHOOK_INST: run pg-hook.sh's parts build and extension"
fi
# shellcheck disable=SC2034 # the parts use them
STOCK=${PG_STOCK_BIN:-$PATCHED}
# shellcheck disable=SC2034
B=$(dirname "$PGHOOK_INST")/build SRC=$(dirname "$PGHOOK_INST")/src
RUN=$(dirname "$PGHOOK_INST")/test-run
export PSQL_BIN=$PATCHED/psql
# shellcheck disable=SC2034
PORT_PATCHED=${PGHOOK_PORT:?} PORT_STOCK=$((PGHOOK_PORT + 1))
# shellcheck disable=SC2034
GUC=pg_buffile.method CTX=pg_buffile FILESET_FILE='*.fileset/*.bf.[0-9]*'
. "$PGS/pg-server.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: PostgreSQL runs as $PG_USER"

SOCK=$RUN/sock
mkdir -p "$RUN" "$SOCK"
chown "$PG_USER": "$RUN" "$SOCK"
trap srv_stop_all EXIT

# The tests' settings: every temp file logged with the process that wrote it, room for
# the parallel workers the parts force.
start_server() {
  local name=$1 bin=$2 port=$3 a preload=""
  shift 3
  local settings=()
  for a in "$@"; do
    case $a in
      shared_preload_libraries*) preload=$(sed -E "s/^[^']*'([^']*)'.*/\1/" <<< "$a") ;;
      *) settings+=("$a") ;;
    esac
  done
  # (stock may be this same build, started as NAME-stock without the module)
  [ "$bin" = "$PATCHED" ] && [[ $name != *-stock ]] \
    && preload=pg_buffile${preload:+,$preload}
  [ -z "$preload" ] || settings+=("shared_preload_libraries = '$preload'")
  rm -f "$RUN/$name.log"
  srv_new "$RUN/$name" "$bin" || return 1
  srv_conf "$RUN/$name.conf" "$SOCK" "max_worker_processes = 16" "log_temp_files = 0" \
    "log_line_prefix = '%m [%p] '" ${settings[@]+"${settings[@]}"}
  srv_start "$RUN/$name" "$bin" "$port" "$RUN/$name.log" "$RUN/$name.conf"
}

# The extension's method and level of a value of temp_file_compression: METHOD LEVEL
# (zlib is gzip there; "zstd:level=3" and "zstd:3" are zstd 3; no level is 0, the
# method's default).
hook_value() {
  local m=${1%%:*} l=0
  [[ $1 == *:* ]] && l=${1#*:} && l=${l#level=}
  [ "$m" = zlib ] && m=gzip
  echo "$m $l"
}

gucs() {
  local m l
  read -r m l <<< "$(hook_value "$1")"
  echo "-c pg_buffile.method=$m -c pg_buffile.level=$l"
}

set_sql() {
  local m l
  read -r m l <<< "$(hook_value "$1")"
  echo "set pg_buffile.method = $m; set pg_buffile.level = $l;"
}

conf_lines() {
  local m l
  read -r m l <<< "$(hook_value "$1")"
  printf 'pg_buffile.method = %s\npg_buffile.level = %s\n' "$m" "$l"
}

has_value() {
  [ "$1" != pglz ]
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

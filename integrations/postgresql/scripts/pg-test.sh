#!/usr/bin/env bash
# Prove PostgreSQL with the patch series of integrations/postgresql/
# (temp_file_compression: off is stock's BufFile, the other values libbuffile),
# for the major PG_MAJOR (15, the default, or 18; see pg-common.sh:
# each major has its own build, run directory and ports).
#
#   integrations/postgresql/scripts/pg-test.sh               build (integrations/postgresql/scripts/pg-build.sh), then every part
#   PG_MAJOR=18 integrations/postgresql/scripts/pg-test.sh   the same for PostgreSQL 18
#   integrations/postgresql/scripts/pg-test.sh PART...       only those parts (the list is printed for
#                                    an unknown one)
#
# Parts (15: regress-lz4 regress-lz4-encrypted regress-zstd tap-stream tpch
# aborts battery memory indent; 18: all of them):
#   regress-off, regress-lz4, regress-zstd, regress-auto  make check (the whole
#       parallel schedule) with TEMP_CONFIG = temp_file_compression = <value>,
#       log_temp_files = 0; then the server log's temp-file lines counted by
#       kind: private temp files (pgsql_tmp/pgsql_tmp<pid>.<n>) and FileSet
#       files (pgsql_tmp*.fileset/compressed/...), with logical and physical
#       bytes, leaving out our own test temp_file_compression (it sets every
#       value, off included). Passes when every test passes and: under off, no
#       file of the suite went through the library and stock's files were
#       logged; otherwise both kinds occur, every file has the value's codec,
#       no temp file went around us (a "temporary file:" line without
#       "logical size"), and but for auto (which may rightly store a fast
#       device's blocks uncompressed) physical < logical.
#   regress-lz4-encrypted  the same with temp_file_encryption = on as well:
#       every file the suite wrote is logged as encrypted.
#   isolation-lz4  the isolation suite (src/test/isolation, make check) with
#       TEMP_CONFIG lz4: every test passes, and every temp file its log shows
#       went through the library with lz4.
#   tap-stream  src/test/subscription/t/*stream*.pl (logical replication of
#       streamed transactions: FileSet files reopened read-write, appended,
#       truncated) with TEMP_CONFIG = zstd, log_temp_files = 0.
#   tpch  TPC-H SF 0.01 from our generator (tpch/gen) loaded into patched
#       PostgreSQL and into stock PostgreSQL of the same version (Debian's
#       binary of it, or stock built from the same source: see pg-build.sh);
#       the 22 queries of ../shared/tpch/queries at work_mem = 64kB
#       (hash_mem_multiplier 1) with max_parallel_workers_per_gather 0 and 2
#       (parallel plans forced cheap), every value (off, every codec and
#       auto): all answers byte-identical to stock's; the log shows private
#       and FileSet files through the library.
#   aborts  on the patched server: a level in temp_file_compression used
#       and, out of the method's range, refused by SET and ALTER SYSTEM; auto
#       reports its choice at process exit, and a later process starts from
#       what the first learned of the device (shared memory); a spilling query cancelled by
#       statement_timeout, one hitting temp_file_limit (PostgreSQL's error
#       text), a backend SIGKILLed mid-spill (the postmaster restarts): no temp
#       file is left after each, and the server keeps answering.
#   meson (18)  the patched tree configured by meson with -Dbuffile=enabled
#       (pg_config.h defines USE_BUFFILE, buffile_compress.c compiles with
#       the dependency's flags), and refused without libbuffile in
#       PKG_CONFIG_PATH.
#   memory  100,000 open temporary BufFiles (integrations/postgresql/test/
#       buffile_memory, an extension built with PGXS) of 100 and of 10,000
#       bytes each, under off and lz4: the memory contexts that hold them
#       (pg_backend_memory_contexts: the BufFile structs, and the library's
#       "BufFile compression"); lz4's per-file memory must stay within 1.10
#       times stock's (a hash join sizes its batches counting BLCKSZ a file).
#       The files go to a tablespace on /dev/shm when that is a tmpfs (on
#       this machine's ext4, creating 100,000 files takes a minute).
#   indent  pg-indent.sh: pgindent finds nothing to change in the
#       lines the series adds or changes.
#   battery  every BufFile user (sort, hash join, hash aggregate, CTE,
#       window, scroll cursor WITH HOLD, parallel hash join, parallel sort,
#       parallel CREATE INDEX) under every value gives off's answer; EXPLAIN
#       (BUFFERS) temp blocks of the serial ones equal off's for every value;
#       pg_stat_statements temp_blks_* and times under off and lz4; wait
#       events and pg_ls_tmpdir() during a spill, the library's memory
#       context and no descriptor after it; pgsql_tmp removed (re-created)
#       or unwritable (SQLSTATE 42501); cancelled parallel hash joins log no
#       line of ours; nothing left, no "could not" LOG line.
# Prints PASS/FAIL with the time of each part, and exits non-zero on any FAIL.
set -uo pipefail
. "$(dirname "$0")/pg-common.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and runs PostgreSQL as $PG_USER"

if [ "$PG_MAJOR" = 15 ]; then
  ALL_PARTS=(regress-lz4 regress-lz4-encrypted regress-zstd tap-stream tpch aborts battery memory
             indent)
else
  ALL_PARTS=(regress-off regress-lz4 regress-lz4-encrypted regress-zstd regress-auto isolation-lz4
             tap-stream tpch aborts battery meson memory indent)
fi
PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=("${ALL_PARTS[@]}")
for p in "${PARTS[@]}"; do
  [[ " ${ALL_PARTS[*]} " == *" $p "* ]] || die "no part $p for PostgreSQL $PG_MAJOR (${ALL_PARTS[*]})"
done

RESULTS=()
FAILED=0
t_all=$SECONDS

t0=$SECONDS
if ! bash "$PGS/pg-build.sh"; then
  echo "FAIL build ($((SECONDS - t0)) s)"
  exit 1
fi
RESULTS+=("PASS build ($((SECONDS - t0)) s)")

B=$PGB/build-patched
PATCHED=$PGB/inst-patched/bin
STOCK=${PG_STOCK_BIN:-$(cat "$PGB/stock-bin")}  # PG_STOCK_BIN: another stock reference
RUN=$PGB/run
SOCK=$RUN/sock
mkdir -p "$RUN" "$SOCK"
chown "$PG_USER": "$RUN" "$SOCK"

# count_temp LOG...: "private N shared N other N logical B physical B" and a
# "CODEC N" pair per codec, over
# the "temporary file:" lines of the logs.
count_temp() {
  cat "$@" | awk '
    /temporary file: path/ {
      if ($0 !~ /logical size/) { other++; next }
      if ($0 ~ /\.fileset\/compressed\//) shared++; else if ($0 !~ /\.fileset\//) private++; else other++
      match($0, /size [0-9]+, logical size [0-9]+, compression [a-z0-9]+/)
      split(substr($0, RSTART, RLENGTH), f, /[ ,]+/)
      phys += f[2]; logi += f[5]; codec[f[7] == "" ? "unknown" : f[7]]++
    }
    END {
      printf "private %d shared %d other %d logical %.0f physical %.0f", private, shared, other, logi, phys
      for (c in codec) printf " %s %d", c, codec[c]
      printf "\n"
    }'
}

# fileset_kinds LOG...: the FileSet files of the logs by the subsystem that
# names them: "hash N sort N logrep N other N".
fileset_kinds() {
  cat "$@" | grep -o 'temporary file: path "[^"]*\.fileset/compressed/[^"]*", size [0-9]*, logical' \
    | sed -E 's|.*\.fileset/compressed/([^"]*)".*|\1|' | awk '
      /^[io][0-9]+of[0-9]+\.p[0-9]+$/ { hash++; next }   # sharedtuplestore of parallel hash join
      /^[0-9]+$/ { sort++; next }                          # worker tapes of parallel sort
      /^[0-9]+-[0-9]+\.(changes|subxacts)$/ { logrep++; next }  # streamed transactions
      { other++ }
      END { printf "hash %d sort %d logrep %d other %d\n", hash, sort, logrep, other }'
}

# codec_count COUNTS CODEC: how many files count_temp saw with that codec.
codec_count() {
  echo "$1" | awk -v c="$2" '{ for (i = 11; i < NF; i += 2) if ($i == c) n = $(i + 1) } END { print n + 0 }'
}

# describe_counts "private N shared N ...": a sentence for the report.
describe_counts() {
  set -- $1
  local ratio="-"
  [ "${10}" -gt 0 ] && ratio=$(awk -v l="$8" -v p="${10}" 'BEGIN { printf "%.2f", l / p }')
  local codecs=""
  [ $# -gt 10 ] && codecs=", by codec: $(echo "${@:11}" | sed -E 's/([a-z0-9]+) ([0-9]+)/\1 \2,/g; s/,$//')"
  echo "temp files: $2 private, $4 shared (FileSet), $6 not through libbuffile; logical $8 B, physical ${10} B (ratio $ratio)$codecs"
}

# --- part: make check ------------------------------------------------------------
part_regress() {
  local codec=$1 encrypt=${2:-off}
  local tag=$codec; [ "$encrypt" = on ] && tag=$codec-encrypted
  local conf=$RUN/regress-$tag.conf out=$RUN/regress-$tag
  rm -rf "$out"; mkdir -p "$out"; chown "$PG_USER": "$out"
  # %a: pg_regress names each test's sessions (and their parallel workers)
  # pg_regress/<test>; our own test temp_file_compression sets every value,
  # off included, so its lines are left out of the counts below.
  printf "temp_file_compression = %s\ntemp_file_encryption = %s\nlog_temp_files = 0\nlog_line_prefix = '%%m [%%p] %%a '\n" \
    "$codec" "$encrypt" > "$conf"
  local rc=0
  (cd "$B" && as_user make -s check TEMP_CONFIG="$conf" > "$out/make-check.out" 2>&1) || rc=$?
  grep -E '^(ok|not ok|test |     )|tests (passed|failed)|All [0-9]+ tests' "$out/make-check.out" | tail -3
  cp "$B/src/test/regress/log/postmaster.log" "$out/" 2>/dev/null
  [ -f "$B/src/test/regress/regression.diffs" ] && cp "$B/src/test/regress/regression.diffs" "$out/"
  if [ $rc -ne 0 ]; then
    echo "make check failed (rc $rc): $out/make-check.out, $out/regression.diffs"
    head -40 "$out/regression.diffs" 2>/dev/null
    return 1
  fi
  grep -v ' pg_regress/temp_file_compression ' "$out/postmaster.log" > "$out/postmaster-suite.log"
  local c k; c=$(count_temp "$out/postmaster-suite.log"); k=$(fileset_kinds "$out/postmaster-suite.log")
  describe_counts "$c"
  if [ "$codec" = off ]; then
    set -- $c
    [ "$2" -eq 0 ] && [ "$4" -eq 0 ] && [ "$6" -gt 0 ] \
      || { echo "under off, the suite's temp files must all be stock's, and some logged"; return 1; }
    return 0
  fi
  echo "FileSet files by subsystem: $k"
  set -- $k
  [ "$2" -gt 0 ] && [ "$4" -gt 0 ] \
    || { echo "expected files of both parallel hash joins and parallel sorts (index builds)"; return 1; }
  set -- $c
  [ "$2" -gt 0 ] && [ "$4" -gt 0 ] && [ "$6" -eq 0 ] \
    || { echo "the log does not show the suite's temp files going through libbuffile"; return 1; }
  [ "$codec" = auto ] || [ "${10}" -lt "$8" ] \
    || { echo "$codec stored more bytes than it was given"; return 1; }
  # TEMP_CONFIG reached the server: every file the suite wrote used the codec.
  [ "$(codec_count "$c" "$codec")" -eq $(($2 + $4)) ] \
    || { echo "not every temp file was written with $codec"; return 1; }
  # ... and, with temp_file_encryption, every one was sealed.
  if [ "$encrypt" = on ]; then
    local sealed; sealed=$(grep -c 'temporary file: path .*, encrypted$' "$out/postmaster-suite.log")
    echo "encrypted: $sealed of $(($2 + $4)) files"
    [ "$sealed" -eq $(($2 + $4)) ] || { echo "not every temp file was encrypted"; return 1; }
  fi
}

# --- part: the isolation suite --------------------------------------------------------
part_isolation() {
  local codec=$1
  local conf=$RUN/isolation-$codec.conf out=$RUN/isolation-$codec rc=0
  rm -rf "$out"; mkdir -p "$out"; chown "$PG_USER": "$out"
  printf "temp_file_compression = %s\nlog_temp_files = 0\n" "$codec" > "$conf"
  (cd "$B/src/test/isolation" && as_user make -s check TEMP_CONFIG="$conf" > "$out/make-check.out" 2>&1) \
    || rc=$?
  grep -E 'tests (passed|failed)|All [0-9]+ tests|^# [0-9]+ of [0-9]+ tests' "$out/make-check.out" | tail -2
  cp "$B/src/test/isolation/output_iso/log/postmaster.log" "$out/" 2>/dev/null
  cp "$B/src/test/isolation/output_iso/regression.diffs" "$out/" 2>/dev/null
  if [ $rc -ne 0 ]; then
    echo "the isolation suite failed (rc $rc): $out/make-check.out, $out/regression.diffs"
    head -40 "$out/regression.diffs" 2>/dev/null
    return 1
  fi
  [ -f "$out/postmaster.log" ] || { echo "no server log in output_iso/log"; return 1; }
  local c; c=$(count_temp "$out/postmaster.log")
  describe_counts "$c"
  set -- $c
  [ "$6" -eq 0 ] && [ "$(codec_count "$c" "$codec")" -eq $(($2 + $4)) ] \
    || { echo "a temp file of the isolation suite did not go through the library with $codec"; return 1; }
}

# --- part: logical replication streaming TAP tests ----------------------------------
part_tap_stream() {
  local conf=$RUN/tap.conf out=$RUN/tap-stream rc=0
  rm -rf "$out"; mkdir -p "$out"; chown "$PG_USER": "$out"
  printf 'temp_file_compression = zstd\nlog_temp_files = 0\n' > "$conf"
  local tests; tests=$(cd "$PGB/patched-$PG_UPSTREAM/src/test/subscription" && echo t/*stream*.pl)
  echo "tests: $tests"
  (cd "$B/src/test/subscription" && as_user env TEMP_CONFIG="$conf" make -s check \
     PROVE_TESTS="$tests" > "$out/prove.out" 2>&1) || rc=$?
  grep -E '^t/|^All tests|^Result|^Files=' "$out/prove.out"
  cp -r "$B/src/test/subscription/tmp_check/log" "$out/" 2>/dev/null
  [ $rc -eq 0 ] || { echo "prove failed (rc $rc): $out/prove.out"; return 1; }
  local c; c=$(count_temp "$out"/log/*.log)
  describe_counts "$c"
  echo "FileSet files by subsystem: $(fileset_kinds "$out"/log/*.log)"
  set -- $c
  [ "$4" -gt 0 ] && [ "$6" -eq 0 ] || { echo "no streamed-transaction file went through libbuffile"; return 1; }
  [ "$(codec_count "$c" zstd)" -eq $(($2 + $4)) ] || { echo "not every temp file was written with zstd"; return 1; }
}

# --- servers for tpch and aborts -------------------------------------------------------
# start_server NAME BINDIR PORT: a fresh cluster in $RUN/NAME, listening only on
# a Unix socket in $SOCK.
start_server() {
  local name=$1 bin=$2 port=$3 data=$RUN/$1
  [ -f "$data/postmaster.pid" ] && as_user "$bin/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1
  rm -rf "$data" "$RUN/$name.log"
  as_user "$bin/initdb" -D "$data" -A trust -E UTF8 --locale=C --no-sync > "$RUN/$name-initdb.log" 2>&1 \
    || { cat "$RUN/$name-initdb.log"; return 1; }
  cat >> "$data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$SOCK'
port = $port
fsync = off
jit = off
log_temp_files = 0
log_line_prefix = '%m [%p] '
max_parallel_workers = 8
max_worker_processes = 16
EOF
  as_user "$bin/pg_ctl" -D "$data" -l "$RUN/$name.log" -w -t 120 start > /dev/null \
    || { tail -20 "$RUN/$name.log"; return 1; }
}

stop_server() {
  local name=$1 bin=$2
  [ -f "$RUN/$name/postmaster.pid" ] && as_user "$bin/pg_ctl" -D "$RUN/$name" -m fast -w stop > /dev/null
  return 0
}

psql_at() { # psql_at PORT [psql args...]
  local port=$1; shift
  as_user "$PATCHED/psql" -X -q -h "$SOCK" -p "$port" -d postgres "$@"
}

PORT_PATCHED=$PG_PORT_BASE
PORT_STOCK=$((PG_PORT_BASE + 1))

# --- part: TPC-H answers against stock ---------------------------------------------------
# The values TPC-H runs under, each against stock's answers.
TPCH_VALUES="off none lz4 zstd zlib pglz auto"

part_tpch() {
  local q=${TPCH_QUERIES:-} data=$PGROOT/tpch-sf0.01 out=$RUN/tpch d
  # shared/ sits beside a clone (CI) or beside the folder of worktrees
  for d in "$TOP/../shared" "$TOP/../../shared"; do
    [ -z "$q" ] && [ -f "$d/tpch/queries/1.sql" ] && q=$(cd "$d/tpch/queries" && pwd)
  done
  [ -f "$q/1.sql" ] || { echo "no TPC-H queries in $q (set TPCH_QUERIES)"; return 1; }
  bash "$TOP/scripts/install-deps.sh"
  cmake -S "$TOP" -B "$PGROOT/tpch-build" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TESTS=OFF > /dev/null \
    && cmake --build "$PGROOT/tpch-build" --target tpchgen -j"$PG_JOBS" > /dev/null || return 1
  if [ ! -f "$data/lineitem.tbl" ]; then
    "$PGROOT/tpch-build/tpch/gen/tpchgen" --sf=0.01 --out="$data.tmp" > /dev/null || return 1
    mv "$data.tmp" "$data"
  fi
  chmod -R a+rX "$data"
  rm -rf "$out"; mkdir -p "$out"; chown "$PG_USER": "$out"

  start_server tpch-patched "$PATCHED" $PORT_PATCHED || return 1
  start_server tpch-stock "$STOCK" $PORT_STOCK || return 1
  local port t
  for port in $PORT_PATCHED $PORT_STOCK; do
    psql_at $port -v ON_ERROR_STOP=1 -f "$TOP/integrations/postgresql/tpch/schema.sql" || return 1
    for t in region nation part supplier partsupp customer orders lineitem; do
      sed 's/|$//' "$data/$t.tbl" | psql_at $port -v ON_ERROR_STOP=1 \
        -c "\\copy $t from stdin with (delimiter '|')" || return 1
    done
    # A sample of the whole tables: both servers get the same statistics.
    psql_at $port -v ON_ERROR_STOP=1 -c "set default_statistics_target = 1000" -c "analyze" || return 1
  done
  echo "loaded SF 0.01 ($(psql_at $PORT_STOCK -At -c 'select count(*) from lineitem') lineitem rows) into both servers"

  # run_queries PORT LABEL PGOPTIONS: the 22 answers into $out/LABEL/
  run_queries() {
    local port=$1 label=$2 opts=$3 n
    mkdir -p "$out/$label"; chown "$PG_USER": "$out/$label"
    for n in $(seq 1 22); do
      as_user env PGOPTIONS="$opts" "$PATCHED/psql" -X -q -A -t -F '|' -v ON_ERROR_STOP=1 \
        -h "$SOCK" -p "$port" -d postgres -f "$q/$n.sql" > "$out/$label/q$n.out" 2> "$out/$label/q$n.err" \
        || { echo "$label: Q$n failed: $(head -3 "$out/$label/q$n.err")"; return 1; }
    done
  }
  # (hash_mem_multiplier 1: at this scale 18 would keep its parallel hash
  # joins in one batch at the default 2, and write no FileSet file)
  local base="-c work_mem=64kB -c hash_mem_multiplier=1"
  local par0="-c max_parallel_workers_per_gather=0"
  local par2="-c max_parallel_workers_per_gather=2 -c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0 -c min_parallel_index_scan_size=0"
  local w codec bad=0 empty n popts
  for w in 0 2; do
    [ $w = 0 ] && popts=$par0 || popts=$par2
    run_queries $PORT_STOCK "stock-w$w" "$base $popts" || return 1
    # An empty answer compares nothing: say which, and refuse more than one
    # (Q21 names no supplier at SF 0.01 with our generator's data).
    empty=$(cd "$out/stock-w$w" && find . -name 'q*.out' -empty | sed 's|^\./||; s|\.out$||' | sort | tr '\n' ' ')
    [ -z "$empty" ] || echo "stock, workers $w: empty answers: $empty"
    [ "$(echo $empty | wc -w)" -le 1 ] || return 1
    for codec in $TPCH_VALUES; do
      run_queries $PORT_PATCHED "$codec-w$w" "$base $popts -c temp_file_compression=$codec" || return 1
      for n in $(seq 1 22); do
        if ! cmp -s "$out/stock-w$w/q$n.out" "$out/$codec-w$w/q$n.out"; then
          echo "DIFF Q$n $codec workers=$w: diff $out/stock-w$w/q$n.out $out/$codec-w$w/q$n.out"
          bad=$((bad + 1))
        fi
      done
      echo "codec $codec, max_parallel_workers_per_gather $w: 22 queries compared"
    done
  done
  describe_counts "$(count_temp "$RUN/tpch-patched.log")"
  echo "FileSet files by subsystem: $(fileset_kinds "$RUN/tpch-patched.log")"
  # pg_stat_database counts what the log lines say (ours and, under off,
  # stock's), once every backend and worker has flushed its statistics at
  # exit. A backend flushes them as it exits, which may be just after psql
  # returns: wait up to 10 s.
  local stat want i stock_bytes statok=1
  stock_bytes=$(grep 'temporary file: path' "$RUN/tpch-patched.log" | grep -v 'logical size' \
                | sed -E 's/.*, size ([0-9]+).*/\1/' | awk '{ s += $1 } END { print s + 0 }')
  set -- $(count_temp "$RUN/tpch-patched.log")
  want="$(($2 + $4 + $6)) $((${10} + stock_bytes))"
  for i in $(seq 1 20); do
    stat=$(psql_at $PORT_PATCHED -At -F ' ' -c "select sum(temp_files), sum(temp_bytes) from pg_stat_database")
    [ "$stat" = "$want" ] && break
    sleep 0.5
  done
  echo "pg_stat_database: temp_files, temp_bytes = $stat; the log: $want (files, bytes)"
  [ "$stat" = "$want" ] || { echo "pg_stat_database does not match the log"; statok=0; }
  stop_server tpch-stock "$STOCK"
  stop_server tpch-patched "$PATCHED"
  [ $bad -eq 0 ] || { echo "$bad answers differ from stock PostgreSQL's"; return 1; }
  [ $statok = 1 ] || return 1
  [ "$2" -gt 0 ] && [ "$4" -gt 0 ] || { echo "TPC-H did not spill both kinds of temp files"; return 1; }
  echo "all 22 answers identical to stock for $(echo $TPCH_VALUES | wc -w) values ($TPCH_VALUES) x 2 parallel settings"
}

# --- part: cancel, temp_file_limit, SIGKILL ----------------------------------------------
# temp_files_left DATA: regular files under the cluster's temp directories.
temp_files_left() {
  find "$1/base/pgsql_tmp" -type f 2>/dev/null | wc -l
}

part_aborts() {
  local data=$RUN/aborts log=$RUN/aborts.log port=$PORT_PATCHED out=$RUN/aborts-out ok=1
  rm -rf "$out"; mkdir -p "$out"; chown "$PG_USER": "$out"
  stop_server tpch-patched "$PATCHED"
  start_server aborts "$PATCHED" $port || return 1
  local spill="select count(*) from (select g, md5(g::text) m from generate_series(1, 20000000) g order by m) s"

  # 0. the GUC: a level is used; one the method refuses is refused when set,
  # by SET and by ALTER SYSTEM; and auto, whose choice the process reports at
  # exit under log_temp_files.
  psql_at $port > "$out/gucs.out" 2>&1 <<EOF
set work_mem = '64kB';
set temp_file_compression = 'zstd:level=9';
select 'zstd9-' || count(*) from (select g from generate_series(1, 100000) g order by g desc) s;
set temp_file_compression = 'zlib:level=22';
alter system set temp_file_compression = 'zlib:22';
show temp_file_compression;
set temp_file_compression = auto;
select 'auto-' || count(*) from (select g from generate_series(1, 100000) g order by g desc) s;
EOF
  if grep -q 'zstd9-100000' "$out/gucs.out" && grep -q 'auto-100000' "$out/gucs.out" \
     && [ "$(grep -c 'ERROR:  invalid value for parameter "temp_file_compression": "zlib:\(level=\)\?22"' "$out/gucs.out")" = 2 ] \
     && grep -q '^ zstd:level=9$' "$out/gucs.out" \
     && grep -q 'compression zstd$' "$log"; then
    echo "GUC: zstd:level=9 spills; zlib level 22 refused by SET and ALTER SYSTEM: $(grep -o 'DETAIL:.*' "$out/gucs.out" | head -1)"
  else
    echo "GUC: FAILED"; cat "$out/gucs.out"; ok=0
  fi
  for i in $(seq 1 20); do
    grep -q 'temporary file compression auto: blocks written' "$log" && break
    sleep 0.5
  done
  if grep -q 'compression auto$' "$log" && grep -q 'temporary file compression auto: blocks written' "$log"; then
    echo "auto: $(grep -o 'temporary file compression auto: .*' "$log" | tail -1)"
  else
    echo "auto: FAILED (no file written with auto, or no report at exit)"; ok=0
  fi
  # A second process with auto starts from what the first learned of the
  # device, through shared memory; the first, on a new server, from nothing.
  psql_at $port > "$out/auto2.out" 2>&1 <<EOF
set work_mem = '64kB';
set temp_file_compression = auto;
select 'auto2-' || count(*) from (select g from generate_series(1, 100000) g order by g desc) s;
EOF
  for i in $(seq 1 20); do
    [ "$(grep -c 'temporary file compression auto: blocks written' "$log")" -ge 2 ] && break
    sleep 0.5
  done
  local starts
  starts=$(grep -A1 'temporary file compression auto: blocks written' "$log" \
             | grep -o 'Started from [a-z ]*' | paste -sd '|')
  if grep -q 'auto2-100000' "$out/auto2.out" \
     && [ "$starts" = "Started from nothing learned of the device|Started from the device figures of earlier processes" ]; then
    echo "auto across processes: the first on this server started from nothing, the second from the first's figures"
  else
    echo "auto across processes: FAILED ($starts)"; cat "$out/auto2.out"; ok=0
  fi

  # 1. cancel by statement_timeout while spilling. The backend's descriptors
  # on temp files and its "BufFile compression" memory context are measured
  # after a spill that completed and again after the cancelled one: no
  # descriptor either time, and the same memory within 4 kB (the context also
  # holds the codecs' contexts, which zstd resizes as it goes; a file left
  # behind would hold its 8 kB block buffer). (All descriptors would not do:
  # fd.c caches catalog files.)
  local usage="\\! echo \"usage: temp-file fds \$(ls -l /proc/\$BPID/fd | grep -c pgsql_tmp)\"
select 'usage: BufFile compression memory ' || sum(used_bytes) from pg_backend_memory_contexts where name = 'BufFile compression';"
  psql_at $port > "$out/cancel.out" 2>&1 <<EOF
set work_mem = '64kB';
set temp_file_compression = zstd;
select pg_backend_pid() as pid \\gset
\\setenv BPID :pid
select count(*) from (select g from generate_series(1, 100000) g order by g desc) s;
$usage
set statement_timeout = '3s';
$spill;
\\! find $data/base/pgsql_tmp -type f | wc -l | sed 's/^/files-left: /'
reset statement_timeout;
$usage
select 'alive-' || count(*) from generate_series(1, 10);
EOF
  local pid_lines usage_lines mem
  mem=$(grep -o 'usage: BufFile compression memory [0-9]*' "$out/cancel.out" | awk '{ print $5 }' | paste -sd ' ')
  usage_lines="temp-file fds $(grep -o 'usage: temp-file fds [0-9]*' "$out/cancel.out" | awk '{ print $4 }' | paste -sd ' '), memory $mem bytes"
  if grep -q 'canceling statement due to statement timeout' "$out/cancel.out" \
     && grep -q '^files-left: 0$' "$out/cancel.out" && grep -q 'alive-10' "$out/cancel.out" \
     && [ "$(grep -c '^usage: temp-file fds 0$' "$out/cancel.out")" -eq 2 ] \
     && echo "$mem" | awk 'NF == 2 && $1 > 0 && ($2 - $1 < 4096 && $1 - $2 < 4096) { ok = 1 } END { exit !ok }'; then
    # the files the abort closed are logged after the cancel's ERROR
    pid_lines=$(awk '/canceling statement due to statement timeout/ { f = 1 }
                     f && /temporary file: path/ { n++ } END { print n + 0 }' "$log")
    echo "cancel: statement_timeout cancelled the spill, whose abort closed $pid_lines temp files; 0 files left, session alive; before and after the cancel: $usage_lines"
    [ "$pid_lines" -gt 0 ] || { echo "cancel: the query had not spilled yet"; ok=0; }
  else
    echo "cancel: FAILED"; cat "$out/cancel.out"; ok=0
  fi

  # 2. temp_file_limit
  psql_at $port > "$out/limit.out" 2>&1 <<EOF
set work_mem = '64kB';
set temp_file_compression = lz4;
set temp_file_limit = '2MB';
$spill;
\\! find $data/base/pgsql_tmp -type f | wc -l | sed 's/^/files-left: /'
select 'alive-' || count(*) from generate_series(1, 10);
EOF
  if grep -q 'ERROR:  temporary file size exceeds temp_file_limit (2048kB)' "$out/limit.out" \
     && grep -q '^files-left: 0$' "$out/limit.out" && grep -q 'alive-10' "$out/limit.out"; then
    echo "temp_file_limit: \"$(grep -o 'temporary file size exceeds temp_file_limit ([0-9]*kB)' "$out/limit.out")\"; 0 files left, session alive"
  else
    echo "temp_file_limit: FAILED"; cat "$out/limit.out"; ok=0
  fi

  # 3. SIGKILL a backend in the middle of a spill
  as_user env PGAPPNAME=spillkill PGOPTIONS="-c work_mem=64kB -c temp_file_compression=zlib" \
    "$PATCHED/psql" -X -q -h "$SOCK" -p $port -d postgres -c "$spill" > "$out/kill.out" 2>&1 &
  local bg=$! i n=0 pid=""
  for i in $(seq 1 600); do
    n=$(temp_files_left "$data")
    pid=$(psql_at $port -At -c "select pid from pg_stat_activity where application_name = 'spillkill'" 2>/dev/null)
    [ "$n" -gt 0 ] && [ -n "$pid" ] && break
    sleep 0.1
  done
  if [ "$n" -gt 0 ] && [ -n "$pid" ]; then
    local dirs_before; dirs_before=$(find "$data/base/pgsql_tmp" -mindepth 1 -maxdepth 1 | wc -l)
    kill -KILL "$pid"
    wait $bg
    for i in $(seq 1 120); do
      psql_at $port -At -c "select 1" > /dev/null 2>&1 && break
      sleep 0.5
    done
    local left dirs
    left=$(temp_files_left "$data")
    dirs=$(find "$data/base/pgsql_tmp" -mindepth 1 | wc -l)
    local again; again=$(psql_at $port -At -c "set work_mem = '64kB'" -c "select count(*) from (select g from generate_series(1, 300000) g order by g desc) s" 2>&1)
    local after; after=$(temp_files_left "$data")
    # (the process is a "server process" in 15's message, a "client backend" in 18's)
    if grep -Eq "(server process|client backend) \(PID $pid\) was terminated by signal 9" "$log" \
       && [ "$left" -eq 0 ] \
       && [ "$dirs" -eq 0 ] && [ "$again" = 300000 ] && [ "$after" -eq 0 ]; then
      echo "SIGKILL: backend $pid killed with $n temp files in $dirs_before directories; after the restart 0 files and 0 directories left; a new spill works and leaves 0"
    else
      echo "SIGKILL: FAILED (left $left files, $dirs entries, query after: $again, files after: $after)"
      ok=0
    fi
  else
    echo "SIGKILL: the spill never showed temp files"; kill "$bg" 2>/dev/null; ok=0
  fi
  grep -E 'TRAP|PANIC' "$log" && ok=0
  stop_server aborts "$PATCHED"
  [ $ok = 1 ]
}

# --- part: meson -Dbuffile ----------------------------------------------------------------
part_meson() {
  local out=$RUN/meson pat=$PGB/patched-$PG_UPSTREAM obj
  apt_install meson ninja-build
  rm -rf "$out"; mkdir -p "$out"; chown "$PG_USER": "$out"
  # With pkg-config finding nothing (no libbuffile), the feature asked for is
  # an error.
  mkdir "$out/empty"; chown "$PG_USER": "$out/empty"
  if (cd "$out" && as_user env PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$out/empty" \
        meson setup nolib "$pat" -Dbuffile=enabled > nolib.log 2>&1); then
    echo "meson setup -Dbuffile=enabled succeeded without libbuffile"; return 1
  fi
  grep -qi 'dependency "\?buffile"\? not found' "$out/nolib.log" \
    || { echo "meson failed without libbuffile, but not for want of it:"; tail -5 "$out/nolib.log"; return 1; }
  (cd "$out" && as_user env PKG_CONFIG_PATH="$PGROOT/libbuffile/lib/pkgconfig" meson setup build "$pat" \
     -Dbuffile=enabled -Dlz4=enabled -Dzstd=enabled > setup.log 2>&1) \
    || { echo "meson setup failed:"; tail -20 "$out/setup.log"; return 1; }
  grep -q '^#define USE_BUFFILE 1$' "$out/build/src/include/pg_config.h" \
    || { echo "pg_config.h does not define USE_BUFFILE"; return 1; }
  # Our file, compiled with the flags the dependency gave.
  obj=$(cd "$out/build" && as_user ninja -t targets all | grep -o '^[^:]*buffile_compress\.c\.o' | head -1)
  [ -n "$obj" ] || { echo "buffile_compress.c is not in meson's backend"; return 1; }
  (cd "$out/build" && as_user ninja "$obj" > ninja.log 2>&1) \
    || { echo "ninja $obj failed:"; tail -20 "$out/build/ninja.log"; return 1; }
  echo "meson: without libbuffile, -Dbuffile=enabled refused ($(grep -oi 'dependency "\?buffile"\? not found.*' "$out/nolib.log" | head -1));"
  echo "with it: $(grep -o 'Run-time dependency buffile found: .*' "$out/setup.log" | head -1), pg_config.h defines USE_BUFFILE, $obj compiled"
}

# --- part: the memory of 100,000 open BufFiles ------------------------------------------------
part_memory() {
  local ext=$RUN/buffile_memory out=$RUN/memory-out port=$PORT_PATCHED db=postgres ts=""
  local n=100000 bytes m bad=0 off_b lz4_b
  rm -rf "$ext" "$out"; mkdir -p "$out"
  cp -r "$TOP/integrations/postgresql/test/buffile_memory" "$ext"
  chown -R "$PG_USER": "$ext" "$out"
  (cd "$ext" && as_user make -s PG_CONFIG="$PATCHED/pg_config" install > "$out/build.log" 2>&1) \
    || { echo "buffile_memory did not build:"; tail -20 "$out/build.log"; return 1; }
  start_server memory "$PATCHED" $port || return 1
  # The files of a database whose tablespace is on a tmpfs, when there is one.
  if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
    ts=/dev/shm/pgbuf-memory-$PG_MAJOR
    rm -rf "$ts"; mkdir -p "$ts"; chown "$PG_USER": "$ts"
    psql_at $port -c "create tablespace memory_ts location '$ts'" \
      -c "create database memory tablespace memory_ts" || return 1
    db=memory
  fi
  echo "files in $([ -n "$ts" ] && echo "a tablespace on tmpfs ($ts)" || echo "the data directory")"
  as_user "$PATCHED/psql" -X -q -h "$SOCK" -p $port -d $db -c "create extension buffile_memory" || return 1
  # measure VALUE BYTES: the bytes of the contexts holding n open files, one
  # session each (the library's context starts empty)
  measure() {
    as_user "$PATCHED/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p $port -d $db \
      -c "set log_temp_files = -1" -c "set temp_file_compression = $1" \
      -c "select buffile_memory_open($n, $2)" \
      -c "select sum(total_bytes) from pg_backend_memory_contexts
          where name in ('BufFile memory test', 'BufFile compression')" \
      -c "select buffile_memory_close()" | grep -E '^[0-9]+$'
  }
  for bytes in 100 10000; do
    off_b=$(measure off $bytes) && lz4_b=$(measure lz4 $bytes) || { bad=1; break; }
    echo "$n files of $bytes bytes: stock $((off_b / n)) bytes a file, lz4 $((lz4_b / n)) ($(awk -v a="$lz4_b" -v b="$off_b" 'BEGIN { printf "%.3f", a / b }')x)"
    awk -v a="$lz4_b" -v b="$off_b" 'BEGIN { exit !(b > 0 && a <= 1.10 * b) }' \
      || { echo "lz4's files take more than 1.10 times stock's memory"; bad=1; }
  done
  stop_server memory "$PATCHED"
  [ -n "$ts" ] && rm -rf "$ts"
  [ $bad -eq 0 ]
}

# --- part: every BufFile user, every method, against off ---------------------------------
# psql_b ARGS...: psql on the battery's server, unaligned and quiet, stopping at an error
psql_b() {
  as_user env PGOPTIONS="${BOPTS:-}" PGAPPNAME="${BAPP:-battery}" "$PATCHED/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
    -h "$SOCK" -p $PORT_PATCHED -d postgres "$@"
}

part_battery() {
  local data=$RUN/battery log=$RUN/battery.log out=$RUN/battery-out ok=1
  rm -rf "$out"; mkdir -p "$out"; chown "$PG_USER": "$out"
  stop_server tpch-patched "$PATCHED"
  stop_server aborts "$PATCHED"
  start_server battery "$PATCHED" $PORT_PATCHED || return 1
  cat >> "$data/postgresql.conf" <<EOF
shared_preload_libraries = 'pg_stat_statements'
track_io_timing = on
max_parallel_workers_per_gather = 2
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0
EOF
  as_user "$PATCHED/pg_ctl" -D "$data" -l "$log" -w -t 120 restart > /dev/null || return 1
  psql_b -c "create extension pg_stat_statements" \
    -c "create table bt as select g, md5(g::text) m from generate_series(1, 200000) g" \
    -c "alter table bt set (parallel_workers = 2)" -c "analyze bt" || return 1

  # Every BufFile user: name, settings, query. The answers must be those of
  # off for every method; the serial ones (s-) must count the temp blocks of
  # off under EXPLAIN for every method.
  local serial="set max_parallel_workers_per_gather = 0;"
  local -a names=(s-sort s-hashjoin s-hashagg s-cte s-window s-cursor p-hashjoin p-sort p-createindex)
  local -a sqls=(
    "$serial select sum(rn * hashtext(m)) from (select m, row_number() over (order by m) rn from bt) s"
    "$serial set enable_mergejoin = off; select count(*), sum(a.g + b.g) from bt a join bt b using (m)"
    "$serial set enable_sort = off; select count(*), sum(c) from (select m, count(*) c from bt group by m) s"
    "$serial with c as materialized (select * from bt) select count(*), sum(x.g - y.g) from c x join c y using (m)"
    "$serial select sum(s) from (select sum(g) over (order by g rows between 100 preceding and 10 following) s from bt) x"
    "$serial begin; declare c scroll cursor with hold for select m from bt order by g desc; commit; fetch absolute 150000 from c; fetch backward 3 from c; move last in c; fetch prior from c; close c"
    "set enable_mergejoin = off; select count(*), sum(a.g + b.g) from bt a join bt b using (m)"
    "select sum(rn * hashtext(m)) from (select m, row_number() over (order by m) rn from (select m from bt order by m) o) s"
    "set max_parallel_maintenance_workers = 2; set maintenance_work_mem = '1MB'; create index bt_m on bt (m); set enable_seqscan = off; set enable_bitmapscan = off; select sum(hashtext(m)) from (select m from bt where m < '4' order by m) s; drop index bt_m"
  )
  local methods="off none lz4 zstd:level=3 zlib auto pglz" i m a base bad=0
  for i in "${!names[@]}"; do
    for m in $methods; do
      BOPTS="-c work_mem=64kB -c temp_file_compression=$m" psql_b -c "${sqls[$i]}" \
        > "$out/${names[$i]}.$m.out" 2> "$out/${names[$i]}.$m.err" \
        || { echo "${names[$i]} $m: $(head -2 "$out/${names[$i]}.$m.err")"; bad=$((bad + 1)); }
      cmp -s "$out/${names[$i]}.off.out" "$out/${names[$i]}.$m.out" \
        || { echo "DIFF ${names[$i]}: $m answers otherwise than off"; bad=$((bad + 1)); }
    done
  done
  [ $bad -eq 0 ] && echo "answers: ${#names[@]} BufFile users x $(echo $methods | wc -w) methods ($methods) all equal to off"

  # EXPLAIN (ANALYZE, BUFFERS): the serial queries' temp blocks, per method
  local q blocks
  for i in 0 1 2 3 4; do
    q=${sqls[$i]#"$serial"}
    q=${q#" set enable_mergejoin = off;"}
    q=${q#" set enable_sort = off;"}
    for m in $methods; do
      blocks=$(BOPTS="-c work_mem=64kB -c temp_file_compression=$m -c max_parallel_workers_per_gather=0 -c enable_mergejoin=off -c enable_sort=$([ $i = 2 ] && echo off || echo on)" \
        psql_b -c "explain (analyze, buffers, costs off, timing off, format json) $q" \
        | python3 -c 'import json,sys; p=json.load(sys.stdin)[0]["Plan"]; print(p["Temp Read Blocks"], p["Temp Written Blocks"])')
      echo "$m $blocks" >> "$out/${names[$i]}.blocks"
    done
    if [ "$(awk '{ print $2, $3 }' "$out/${names[$i]}.blocks" | sort -u | wc -l)" = 1 ] \
       && ! grep -q ' 0 0$' "$out/${names[$i]}.blocks"; then
      echo "EXPLAIN ${names[$i]}: temp read/written $(awk 'NR == 1 { print $2 "/" $3 }' "$out/${names[$i]}.blocks") blocks for every method"
    else
      echo "EXPLAIN ${names[$i]}: temp blocks differ from off's (method read written):"
      cat "$out/${names[$i]}.blocks"; bad=$((bad + 1))
    fi
  done

  # pg_stat_statements and track_io_timing: the hash join under off and lz4
  local st_off st_lz4
  for m in off lz4; do
    BOPTS="-c work_mem=64kB -c temp_file_compression=$m -c max_parallel_workers_per_gather=0 -c enable_mergejoin=off" \
      psql_b -c "select pg_stat_statements_reset()" -c "select count(*) from bt a join bt b using (m)" \
      -c "select temp_blks_read, temp_blks_written, temp_blk_read_time > 0, temp_blk_write_time > 0 from pg_stat_statements where query like 'select count(*) from bt a join bt b%'" \
      > "$out/pgss.$m.out" || bad=$((bad + 1))
  done
  st_off=$(tail -1 "$out/pgss.off.out"); st_lz4=$(tail -1 "$out/pgss.lz4.out")
  if [ "$st_off" = "$st_lz4" ] && [ "$(echo "$st_lz4" | cut -d'|' -f3,4)" = "t|t" ] \
     && [ "$(echo "$st_lz4" | cut -d'|' -f1)" -gt 0 ]; then
    echo "pg_stat_statements: temp_blks_read|written|read_time>0|write_time>0 = $st_lz4 under off and lz4"
  else
    echo "pg_stat_statements: off $st_off, lz4 $st_lz4"; bad=$((bad + 1))
  fi

  # While a spill runs: its wait events, its files in pg_ls_tmpdir(); after it:
  # the library's memory in its context, no descriptor left.
  local big="select count(*) from (select md5(g::text) m from generate_series(1, 3000000) g order by m) s"
  BOPTS="-c work_mem=64kB -c temp_file_compression=lz4" BAPP=spiller \
    psql_b -c "$big" -c "select 'memory ' || sum(total_bytes) from pg_backend_memory_contexts where name = 'BufFile compression'" \
    -c "\\! echo fds \$(ls -l /proc/\$(cat $out/spiller.pid)/fd | grep -c pgsql_tmp)" > "$out/spill.out" 2>&1 &
  local bg=$! pid="" k
  for k in $(seq 1 100); do
    pid=$(psql_b -c "select pid from pg_stat_activity where application_name = 'spiller'")
    [ -n "$pid" ] && break
    sleep 0.05
  done
  echo "$pid" > "$out/spiller.pid"; chmod a+r "$out/spiller.pid"
  # One statement per sample (pg_stat_activity is a snapshot per
  # transaction), in batches of 200 until the spill is over.
  for k in $(seq 1 200); do
    echo "select coalesce((select wait_event from pg_stat_activity where pid = $pid), '-') || ' ' || (select count(*) from pg_ls_tmpdir() where name like 'pgsql_tmp$pid.%'), pg_sleep(0.002);"
  done > "$out/samples.sql"
  : > "$out/samples.txt"
  for k in $(seq 1 100); do
    kill -0 $bg 2>/dev/null || break
    psql_b -F ' ' -f "$out/samples.sql" >> "$out/samples.txt" 2>&1
  done
  # (15 names the wait events BufFileWrite and BufFileRead, 18 BuffileWrite ...)
  awk 'tolower($1) == "buffilewrite" { w++ } tolower($1) == "buffileread" { r++ } $2 > f { f = $2 }
       END { print w + 0, r + 0, f + 0, NR }' "$out/samples.txt" > "$out/samples.out"
  wait $bg
  local ws; ws=$(cat "$out/samples.out")
  set -- $ws
  if [ -n "$pid" ] && [ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ] && [ "${3:-0}" -gt 0 ] \
     && grep -q '^memory [1-9]' "$out/spill.out" && grep -q '^fds 0$' "$out/spill.out"; then
    echo "during a lz4 sort: $1 samples of BufFileWrite, $2 of BufFileRead in $4; pg_ls_tmpdir() listed up to $3 of its files; after: $(grep '^memory' "$out/spill.out") bytes in context BufFile compression, no descriptor on a temp file"
  else
    echo "spill observation FAILED: samples '$ws' (write read files), pid '$pid'"; cat "$out/spill.out"; bad=$((bad + 1))
  fi

  # pgsql_tmp removed under a live session: re-created, as stock does; a
  # directory the server may not write: errcode_for_file_access (42501).
  psql_b > "$out/tmpdir.out" 2>&1 <<EOF
set work_mem = '64kB';
set temp_file_compression = lz4;
select 'first-' || count(*) from (select g from generate_series(1, 200000) g order by g desc) s;
\\! rm -rf $data/base/pgsql_tmp
select 'again-' || count(*) from (select g from generate_series(1, 200000) g order by g desc) s;
set temp_file_compression = off;
\\! rm -rf $data/base/pgsql_tmp
select 'stock-' || count(*) from (select g from generate_series(1, 200000) g order by g desc) s;
set temp_file_compression = lz4;
\\! chmod 0 $data/base/pgsql_tmp
\\set ON_ERROR_STOP 0
\\set VERBOSITY verbose
select count(*) from (select g from generate_series(1, 200000) g order by g desc) s;
\\! chmod 700 $data/base/pgsql_tmp
EOF
  if grep -q '^first-200000$' "$out/tmpdir.out" && grep -q '^again-200000$' "$out/tmpdir.out" \
     && grep -q '^stock-200000$' "$out/tmpdir.out" \
     && grep -q 'ERROR:  42501: could not create temporary file ".*pgsql_tmp/pgsql_tmp[0-9]*\.[0-9]*": Permission denied' "$out/tmpdir.out"; then
    echo "pgsql_tmp removed under the session: re-created (lz4 and off); unwritable: $(grep -o 'ERROR:  42501: could not create temporary file' "$out/tmpdir.out")"
  else
    echo "pgsql_tmp FAILED:"; cat "$out/tmpdir.out"; bad=$((bad + 1))
  fi

  # A parallel hash join cancelled while its processes write the files of its
  # FileSet, three times: no LOG line of ours (and log_temp_files off in
  # those sessions: its lines are stock's too).
  : > "$out/cancel.log"
  local start; start=$(wc -l < "$log")
  fileset_files() { find "$data/base/pgsql_tmp" -path '*.fileset/compressed/*' -type f 2>/dev/null | grep -q .; }
  for k in 1 2 3; do
    # the previous join's files gone first, so that the files awaited are this join's
    for i in $(seq 1 1000); do fileset_files || break; sleep 0.01; done
    BAPP=cancelled BOPTS="-c work_mem=64kB -c temp_file_compression=lz4 -c enable_mergejoin=off -c log_temp_files=-1" \
      psql_b -c "select count(*) from bt a join bt b using (m) join bt c on c.m = b.m join bt d on d.m = a.m" \
      >> "$out/cancel.out" 2>&1 &
    bg=$!
    for i in $(seq 1 1000); do fileset_files && break; sleep 0.01; done
    # a cancel that reaches the backend between statements does nothing: again
    # until the session ends
    while kill -0 $bg 2>/dev/null; do
      psql_b -c "select pg_cancel_backend(pid) from pg_stat_activity where application_name = 'cancelled' and backend_type = 'client backend'" > /dev/null
      sleep 0.2
    done
    wait $bg
  done
  sleep 1
  tail -n +"$((start + 1))" "$log" > "$out/cancel.log"
  if [ "$(grep -c 'canceling statement due to user request' "$out/cancel.log")" -ge 3 ] \
     && ! grep -E 'LOG: .*(temporary|could not|BufFile)' "$out/cancel.log"; then
    echo "3 cancelled parallel hash joins (lz4): $(grep -c 'LOG:' "$out/cancel.log") LOG lines, none of ours ($out/cancel.log)"
  else
    echo "cancelled parallel hash join FAILED:"; head -20 "$out/cancel.log"; bad=$((bad + 1))
  fi

  # Leftovers and log lines of the whole part
  local left; left=$(find "$data/base/pgsql_tmp" -mindepth 1 2>/dev/null | wc -l)
  if [ "$left" -eq 0 ] && ! grep -E 'LOG: .*could not|TRAP|PANIC|WARNING: .*(leak|temporary)' "$log"; then
    echo "nothing left under base/pgsql_tmp; no 'could not' LOG line, no leak warning"
  else
    echo "leftovers: $left entries under base/pgsql_tmp"; find "$data/base/pgsql_tmp" | head; bad=$((bad + 1))
  fi
  stop_server battery "$PATCHED"
  [ $bad -eq 0 ]
}

for p in "${PARTS[@]}"; do
  t0=$SECONDS
  echo "=== $p"
  case "$p" in
    regress-off) part_regress off ;;
    regress-lz4) part_regress lz4 ;;
    regress-lz4-encrypted) part_regress lz4 on ;;
    regress-zstd) part_regress zstd ;;
    regress-auto) part_regress auto ;;
    isolation-lz4) part_isolation lz4 ;;
    meson) part_meson ;;
    memory) part_memory ;;
    indent) bash "$PGS/pg-indent.sh" ;;
    tap-stream) part_tap_stream ;;
    tpch) part_tpch ;;
    aborts) part_aborts ;;
    battery) part_battery ;;
    *) echo "unknown part $p (${ALL_PARTS[*]})"; false ;;
  esac
  rc=$?
  if [ $rc -eq 0 ]; then
    RESULTS+=("PASS $p ($((SECONDS - t0)) s)")
  else
    RESULTS+=("FAIL $p ($((SECONDS - t0)) s)")
    FAILED=$((FAILED + 1))
  fi
  echo "${RESULTS[-1]}"
done

echo "=== pg-test.sh summary"
printf '%s\n' "${RESULTS[@]}"
npass=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^PASS')
echo "pg-test.sh took $((SECONDS - t_all)) s"
echo "pg-test: $npass passed, $FAILED failed"
[ $FAILED -eq 0 ]

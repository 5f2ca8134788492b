#!/usr/bin/env bash
# pg-hook.sh's part aborts, on the hook's build with pg_buffile (lib.sh): a level in
# pg_buffile.level used; one the method refuses refused when a file is created (the
# level alone cannot know the method), one out of every method's range (-7..22) by SET
# and ALTER SYSTEM; auto reports its choice when its space goes (the end of the
# transaction), and a later process starts from what the first learned of the device
# (shared memory); a spilling query cancelled by statement_timeout, one hitting
# temp_file_limit (PostgreSQL's error text), a backend SIGKILLed mid-spill (the
# postmaster restarts): no temp file is left after each, and the server keeps
# answering. Each check says what it saw; the part fails if one fails or the log shows
# a TRAP or a PANIC.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
data=$RUN/aborts log=$RUN/aborts.log port=$PORT_PATCHED out=$RUN/aborts-out ok=1
spill="select count(*) from (select g, md5(g::text) m from generate_series(1, 20000000) g order by m) s"

# temp_files_left DATA: regular files under the cluster's temp directories.
temp_files_left() {
  find "$1/base/pgsql_tmp" -type f 2>/dev/null | wc -l
}

check_gucs() {
  # pg_buffile's GUCs: a level is used; one the method refuses is refused when a file
  # is created (the level alone cannot know the method), one out of every method's
  # range when set, by SET and by ALTER SYSTEM; auto is used.
  psql_at $port -v ON_ERROR_STOP=0 > "$out/gucs.out" 2>&1 <<EOF
set work_mem = '64kB';
$(set_sql zstd:9)
select 'zstd9-' || count(*) from (select g from generate_series(1, 100000) g order by g desc) s;
$(set_sql zlib:22)
select 'gzip22-' || count(*) from (select g from generate_series(1, 100000) g order by g desc) s;
\\! find $data/base/pgsql_tmp -type f | wc -l | sed 's/^/files-left: /'
set pg_buffile.level = 23;
alter system set pg_buffile.level = 23;
show pg_buffile.level;
$(set_sql auto)
select 'auto-' || count(*) from (select g from generate_series(1, 100000) g order by g desc) s;
EOF
  if grep -q 'zstd9-100000' "$out/gucs.out" && grep -q 'auto-100000' "$out/gucs.out" \
     && grep -q 'ERROR:  "pg_buffile.level" 22 is not valid for method "gzip"' "$out/gucs.out" \
     && grep -q '^files-left: 0$' "$out/gucs.out" \
     && [ "$(grep -c 'ERROR:  23 is outside the valid range for parameter "pg_buffile.level"' "$out/gucs.out")" = 2 ] \
     && grep -q '^ 22$' "$out/gucs.out" && grep -q 'method zstd$' "$log"; then
    echo "GUC: zstd level 9 spills; gzip level 22 refused when the file is created, nothing left; level 23 refused by SET and ALTER SYSTEM"
  else
    echo "GUC: FAILED"; cat "$out/gucs.out"; ok=0
  fi
}

check_auto() {
  # auto, whose choice pg_buffile reports under log_temp_files when the space that used it
  # goes (the end of the transaction, no file open)
  for i in $(seq 1 20); do
    grep -q 'temporary file compression auto: blocks written' "$log" && break
    sleep 0.5
  done
  if grep -q 'method auto$' "$log" && grep -q 'temporary file compression auto: blocks written' "$log"; then
    echo "auto: $(grep -o 'temporary file compression auto: .*' "$log" | head -1)"
  else
    echo "auto: FAILED (no file written with auto, or no report)"; ok=0
  fi
  # A second process with auto starts from what the first learned of the
  # device, through shared memory; the first, on a new server, from nothing.
  psql_at $port -v ON_ERROR_STOP=0 > "$out/auto2.out" 2>&1 <<EOF
set work_mem = '64kB';
$(set_sql auto)
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
}

check_cancel() {
  # Cancel by statement_timeout while spilling. The backend's descriptors
  # on temp files and its "BufFile compression" memory context are measured
  # after a spill that completed and again after the cancelled one: no
  # descriptor either time, and the same memory within 4 kB (the context also
  # holds the codecs' contexts, which zstd resizes as it goes; a file left
  # behind would hold its 8 kB block buffer). (All descriptors would not do:
  # fd.c caches catalog files.)
  local usage="\\! echo \"usage: temp-file fds \$(ls -l /proc/\$BPID/fd | grep -c pgsql_tmp)\"
select 'usage: BufFile compression memory ' || sum(used_bytes) from pg_backend_memory_contexts where name = '$CTX';"
  psql_at $port -v ON_ERROR_STOP=0 > "$out/cancel.out" 2>&1 <<EOF
set work_mem = '64kB';
$(set_sql zstd)
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
}

check_limit() {
  # temp_file_limit
  psql_at $port -v ON_ERROR_STOP=0 > "$out/limit.out" 2>&1 <<EOF
set work_mem = '64kB';
$(set_sql lz4)
set temp_file_limit = '2MB';
$spill;
\\! find $data/base/pgsql_tmp -type f | wc -l | sed 's/^/files-left: /'
select 'alive-' || count(*) from generate_series(1, 10);
EOF
  # (18 quotes the setting's name in its message, 15 does not)
  if grep -q 'ERROR:  temporary file size exceeds "\?temp_file_limit"\? (2048kB)' "$out/limit.out" \
     && grep -q '^files-left: 0$' "$out/limit.out" && grep -q 'alive-10' "$out/limit.out"; then
    echo "temp_file_limit: \"$(grep -o 'temporary file size exceeds "\?temp_file_limit"\? ([0-9]*kB)' "$out/limit.out")\"; 0 files left, session alive"
  else
    echo "temp_file_limit: FAILED"; cat "$out/limit.out"; ok=0
  fi
}

check_sigkill() {
  # SIGKILL a backend in the middle of a spill
  PGAPPNAME=spillkill PGOPTIONS="-c work_mem=64kB $(gucs zlib)" \
    psql_at $port -c "$spill" > "$out/kill.out" 2>&1 &
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
}

out_dir aborts-out
srv_stop "$RUN/tpch-patched" "$PATCHED"
start_server aborts "$PATCHED" $port || exit 1
check_gucs
check_auto
check_cancel
check_limit
check_sigkill
grep -E 'TRAP|PANIC' "$log" && ok=0
srv_stop_all
[ $ok = 1 ]

#!/usr/bin/env bash
# pg-test.sh's part memory: 100,000 open temporary BufFiles (the extension
# integrations/postgresql/tests/buffile_memory, built with PGXS) of 100 and of 10,000
# bytes each, under off and lz4: the memory contexts that hold them
# (pg_backend_memory_contexts: the BufFile structs, and the library's "BufFile
# compression"); lz4's per-file memory must stay within 1.10 times stock's (a hash join
# sizes its batches counting BLCKSZ a file). The files go to a tablespace on /dev/shm
# when that is a tmpfs (on this machine's ext4, creating 100,000 files takes a minute).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
ext=$RUN/buffile_memory out=$RUN/memory-out port=$PORT_PATCHED db=postgres ts=""
n=100000 bad=0
rm -rf "$ext" "$out"; mkdir -p "$out"
cp -r "$TOP/integrations/postgresql/tests/buffile_memory" "$ext"
chown -R "$PG_USER": "$ext" "$out"
(cd "$ext" && as_user make -s PG_CONFIG="$PATCHED/pg_config" install > "$out/build.log" 2>&1) \
  || { echo "buffile_memory did not build:"; tail -20 "$out/build.log"; exit 1; }
start_server memory "$PATCHED" $port || exit 1
# The files of a database whose tablespace is on a tmpfs, when there is one.
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
  ts=/dev/shm/pgbuf-memory-$PG_MAJOR
  rm -rf "$ts"; mkdir -p "$ts"; chown "$PG_USER": "$ts"
  psql_at $port -c "create tablespace memory_ts location '$ts'" \
    -c "create database memory tablespace memory_ts" || exit 1
  db=memory
fi
echo "files in $([ -n "$ts" ] && echo "a tablespace on tmpfs ($ts)" || echo "the data directory")"
psql_at $port -d $db -c "create extension buffile_memory" || exit 1
# measure VALUE BYTES: the bytes of the contexts holding n open files, one
# session each (the library's context starts empty)
measure() {
  psql_at $port -d $db -At \
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
srv_stop_all
[ -n "$ts" ] && rm -rf "$ts"
[ $bad -eq 0 ]

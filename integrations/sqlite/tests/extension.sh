#!/usr/bin/env bash
# The loadable extension in Debian's sqlite3 shell: .load registers the
# buffile VFS as the default with $BFSQLITE_OPTIONS, .open then uses it, the
# SQL functions work, a CREATE INDEX under a small cache sends temp files
# through the library (compressed, on one worker thread: threads=1), and
# nothing is left in the temp directory afterwards.
#   extension.sh PATH/TO/bfsqlite.so WORKDIR
set -euo pipefail
so=$1 dir=$2
rm -rf "$dir"
mkdir -p "$dir/tmp"
out=$(SQLITE_TMPDIR="$dir/tmp" BFSQLITE_OPTIONS="codec=zlib,level=9,threads=1" sqlite3 -batch :memory: <<SQL
.load ${so%.so}
.open $dir/ext.db
SELECT 'config', buffile_config();
SELECT buffile_config('codec', 'zstd');
PRAGMA cache_size=10;
PRAGMA temp_store=FILE;
CREATE TABLE t AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<100000)
  SELECT x, printf('%08d some text of row %d', x*7919%100003, x%100) AS y FROM c;
CREATE INDEX t_y ON t(y);
PRAGMA integrity_check;
SELECT 'stats', vfs, is_default, codec, threads, temp_files > 0, temp_files_open,
       physical_written * 2 < logical_written FROM buffile_stats;
SQL
)
expect="config|codec=zlib,level=9,block_size=4096,temp_dir=,temp_limit=auto,threads=1
zstd
ok
stats|buffile|1|zstd|1|1|0|1"
if [ "$out" != "$expect" ]; then
  printf 'extension.sh: unexpected output:\n%s\nexpected:\n%s\n' "$out" "$expect" >&2
  exit 1
fi
# A temp limit reached: SQLite says only "database or disk is full" (its message for
# SQLITE_FULL, whatever the VFS knows); the reason reaches the shell's error log (.log stderr)
# and buffile_stats.last_error, and the default limit (auto) is the bytes in force.
rc=0
SQLITE_TMPDIR="$dir/tmp" BFSQLITE_OPTIONS="codec=none,temp_limit=64K" sqlite3 -batch :memory: \
  >"$dir/limit.out" 2>"$dir/limit.err" <<SQL || rc=$?
.log stderr
.load ${so%.so}
.open $dir/limit.db
PRAGMA cache_size=10;
PRAGMA temp_store=FILE;
CREATE TABLE t AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<100000)
  SELECT x, printf('%08d some text of row %d', x*7919%100003, x%100) AS y FROM c;
CREATE INDEX t_y ON t(y);
SQL
if [ "$rc" -eq 0 ] || ! grep -q "database or disk is full" "$dir/limit.err" ||
   ! grep -q "buffile VFS buffile: .*temp limit of 65536 bytes reached" "$dir/limit.err"; then
  printf 'extension.sh: the temp limit did not reach the shell with its reason (exit %s):\n' "$rc" >&2
  cat "$dir/limit.err" >&2
  exit 1
fi
# The limit in force: auto is resolved when the space is made (NULL until then), a number is
# itself.
limits=$(SQLITE_TMPDIR="$dir/tmp" sqlite3 -batch :memory: <<SQL
.load ${so%.so}
.open $dir/limits.db
SELECT quote(temp_limit) FROM buffile_stats;
SELECT buffile_config('temp_limit', '1M');
SELECT temp_limit FROM buffile_stats;
SQL
)
if [ "$limits" != $'NULL\n1048576\n1048576' ]; then
  printf 'extension.sh: temp_limit in buffile_stats:\n%s\n' "$limits" >&2
  exit 1
fi
left=$(find "$dir/tmp" -mindepth 1 | wc -l)
if [ "$left" -ne 0 ]; then
  echo "extension.sh: $left entries left in the temp directory" >&2
  exit 1
fi
echo "extension.sh: 3 passed, 0 failed"

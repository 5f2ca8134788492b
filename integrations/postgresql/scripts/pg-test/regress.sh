#!/usr/bin/env bash
# pg-test.sh's parts regress-off, regress-lz4, regress-zstd, regress-auto and
# regress-lz4-encrypted:
#
#   regress.sh VALUE [on]    (on: temp_file_encryption = on as well)
#
# make check (the whole parallel schedule) with TEMP_CONFIG = temp_file_compression =
# VALUE, log_temp_files = 0; then the server log's temp-file lines counted by kind
# (templog.py): private temp files (pgsql_tmp/pgsql_tmp<pid>.<n>) and FileSet files
# (pgsql_tmp*.fileset/compressed/...), with logical and physical bytes, leaving out our
# own test temp_file_compression (it sets every value, off included). Passes when every
# test passes and: under off, no file of the suite went through the library and stock's
# files were logged; otherwise both kinds occur, among the FileSet files those of
# parallel hash joins and of parallel sorts (index builds), every file has the value's
# codec, no temp file went around us (a "temporary file:" line without "logical size"),
# and but for auto (which may rightly store a fast device's blocks uncompressed)
# physical < logical. With encryption, every file the suite wrote is logged as encrypted.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
codec=$1 encrypt=${2:-off}
tag=$codec
[ "$encrypt" = on ] && tag=$codec-encrypted
conf=$RUN/regress-$tag.conf out=$RUN/regress-$tag
out_dir "regress-$tag"
# %a: pg_regress names each test's sessions (and their parallel workers)
# pg_regress/<test>; our own test temp_file_compression sets every value,
# off included, so its lines are left out of the counts below.
printf "temp_file_compression = %s\ntemp_file_encryption = %s\nlog_temp_files = 0\nlog_line_prefix = '%%m [%%p] %%a '\n" \
  "$codec" "$encrypt" > "$conf"
rc=0
(cd "$B" && as_user make -s check TEMP_CONFIG="$conf" > "$out/make-check.out" 2>&1) || rc=$?
grep -E '^(ok|not ok|test |     )|tests (passed|failed)|All [0-9]+ tests' "$out/make-check.out" | tail -3
cp "$B/src/test/regress/log/postmaster.log" "$out/" 2>/dev/null
[ -f "$B/src/test/regress/regression.diffs" ] && cp "$B/src/test/regress/regression.diffs" "$out/"
if [ $rc -ne 0 ]; then
  echo "make check failed (rc $rc): $out/make-check.out, $out/regression.diffs"
  head -40 "$out/regression.diffs" 2>/dev/null
  exit 1
fi
grep -v ' pg_regress/temp_file_compression ' "$out/postmaster.log" > "$out/postmaster-suite.log"
if [ "$codec" = off ]; then
  templog check --stock "$out/postmaster-suite.log"
  exit
fi
checks=(--codec="$codec" --both --kinds=hash,sort)
[ "$codec" = auto ] || checks+=(--smaller)
[ "$encrypt" = on ] && checks+=(--encrypted)
templog check "${checks[@]}" "$out/postmaster-suite.log"

#!/usr/bin/env bash
# pg-test.sh's part isolation-lz4:
#
#   isolation.sh VALUE
#
# The isolation suite (src/test/isolation, make check) with TEMP_CONFIG
# temp_file_compression = VALUE: every test passes, and every temp file its log shows
# went through the library with VALUE's codec.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
codec=$1
conf=$RUN/isolation-$codec.conf out=$RUN/isolation-$codec rc=0
out_dir "isolation-$codec"
printf "temp_file_compression = %s\nlog_temp_files = 0\n" "$codec" > "$conf"
(cd "$B/src/test/isolation" && as_user make -s check TEMP_CONFIG="$conf" > "$out/make-check.out" 2>&1) \
  || rc=$?
grep -E 'tests (passed|failed)|All [0-9]+ tests|^# [0-9]+ of [0-9]+ tests' "$out/make-check.out" | tail -2
cp "$B/src/test/isolation/output_iso/log/postmaster.log" "$out/" 2>/dev/null
cp "$B/src/test/isolation/output_iso/regression.diffs" "$out/" 2>/dev/null
if [ $rc -ne 0 ]; then
  echo "the isolation suite failed (rc $rc): $out/make-check.out, $out/regression.diffs"
  head -40 "$out/regression.diffs" 2>/dev/null
  exit 1
fi
[ -f "$out/postmaster.log" ] || { echo "no server log in output_iso/log"; exit 1; }
templog check --codec="$codec" "$out/postmaster.log"

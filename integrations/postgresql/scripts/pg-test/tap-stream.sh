#!/usr/bin/env bash
# pg-hook.sh's part tap-stream:
#
# src/test/subscription/t/*stream*.pl (logical replication of streamed transactions:
# FileSet files reopened read-write, appended, truncated) through pg_buffile, with
# TEMP_CONFIG preloading it, pg_buffile.method = zstd and log_temp_files = 0: the
# tests pass, their logs show FileSet files through pg_buffile, and every temp file
# written with zstd. make installcheck, whose TAP clusters run the installed server,
# the one pg_buffile is installed into (make check's temporary one has no module).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
conf=$RUN/tap.conf out=$RUN/tap-stream rc=0 target=installcheck
out_dir tap-stream
printf "shared_preload_libraries = 'pg_buffile'\n" > "$conf"
{ conf_lines zstd; echo "log_temp_files = 0"; } >> "$conf"
chown "$PG_USER": "$conf"
tests=$(cd "$SRC/src/test/subscription" && echo t/*stream*.pl)
echo "tests: $tests"
(cd "$B/src/test/subscription" && as_user env TEMP_CONFIG="$conf" make -s $target \
   PROVE_TESTS="$tests" > "$out/prove.out" 2>&1) || rc=$?
grep -E '^t/|^All tests|^Result|^Files=' "$out/prove.out"
cp -r "$B/src/test/subscription/tmp_check/log" "$out/" 2>/dev/null
[ $rc -eq 0 ] || { echo "prove failed (rc $rc): $out/prove.out"; exit 1; }
templog check --codec=zstd --shared "$out"/log/*.log

#!/usr/bin/env bash
# Prove PostgreSQL with the patch series of integrations/postgresql/
# (temp_file_compression: off is stock's BufFile, the other values libbuffile),
# for the major PG_MAJOR (15, the default, or 18; see pg-common.sh: each major has
# its own build, run directory and ports).
#
#   integrations/postgresql/scripts/pg-test.sh
#       build (pg-build.sh), then every part
#   PG_MAJOR=18 integrations/postgresql/scripts/pg-test.sh
#       the same for PostgreSQL 18
#   integrations/postgresql/scripts/pg-test.sh PART...
#       only those parts (the list is printed for an unknown one)
#
# Parts (15: regress-lz4 regress-lz4-encrypted regress-zstd tap-stream tpch aborts
# battery memory indent; 18: all of them). Each is a script of its own in pg-test/,
# whose header says what it proves (lib.sh: what they share):
#   regress-off, regress-lz4, regress-zstd, regress-auto, regress-lz4-encrypted
#                 pg-test/regress.sh: make check under the value, its temp files counted
#   isolation-lz4 pg-test/isolation.sh: the isolation suite under lz4
#   tap-stream    pg-test/tap-stream.sh: logical replication of streamed transactions
#   tpch          pg-test/tpch.sh: TPC-H answers against stock PostgreSQL
#   aborts        pg-test/aborts.sh: the GUC, auto, cancel, temp_file_limit, SIGKILL
#   meson (18)    pg-test/meson.sh: meson's -Dbuffile
#   memory        pg-test/memory.sh: the memory of 100,000 open BufFiles
#   indent        pg-indent.sh: pgindent over what the series adds or changes
#   battery       pg-test/battery.sh: every BufFile user against off, counters, wait
#                 events, pg_ls_tmpdir, the temp directory, cancels, leftovers
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

T=$PGS/pg-test
for p in "${PARTS[@]}"; do
  t0=$SECONDS
  echo "=== $p"
  case "$p" in
    regress-lz4-encrypted) bash "$T/regress.sh" lz4 on ;;
    regress-*) bash "$T/regress.sh" "${p#regress-}" ;;
    isolation-*) bash "$T/isolation.sh" "${p#isolation-}" ;;
    indent) bash "$PGS/pg-indent.sh" ;;
    *) bash "$T/$p.sh" ;;
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

#!/usr/bin/env bash
# SQLite's big temp-file operations on the buffile VFS against stock SQLite:
# CREATE INDEX, ORDER BY and VACUUM of one table, time and temp bytes per
# codec, in paired interleaved rounds (integrations/sqlite/bench/bfsqlite_bench.c).
# Results: docs/results/sqlite.md.
#
# A configuration is stock or codec[-blocksize][+wN]: lz4, zstd-64K, lz4+w1 (the
# shim's threads=1: one library worker compresses beside SQLite's thread). Each
# run records the CPU of the process and of the thread SQLite runs on.
#
#   integrations/sqlite/scripts/sqlite-bench.sh [--rows=10M] [--rounds=5] [--seed=20260413]
#                           [--configs=stock,none,lz4,zstd] [--out=build/sqlite/bench]
#                           [--pause=30] [--report-only]
#
# The database (ROWS rows, about 1 GB at 10M) is made once and kept in OUT;
# every run appends its line to OUT/results-<rows>-<seed>-<configs>.txt, so a
# second invocation with the same flags resumes where the first stopped.
# Temp files of both stock and the shim go to OUT/tmp. Runs in the
# foreground and leaves nothing running; prints the time each phase took and
# the load average.
#
# Fair to every configuration: after the database is made (or found), sync
# writes it back and the script pauses --pause seconds (30) for the write-back's
# and the build's load to pass; nothing is dropped from the page cache (that
# needs root, which this script does not assume): every run reads the
# database from memory. bfsqlite_bench then runs one warm-up round of every
# (operation, configuration), not recorded, and syncs (untimed) before every
# run, so that no run pays for an earlier one's write-back (VACUUM rewrites
# the whole database); each counted round runs the cells in an order shuffled
# per round (paired: ratios to stock are taken within a round).
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../../.." && pwd)  # the repository (this is integrations/sqlite/scripts/)
bad() { printf 'sqlite-bench.sh: %s\n' "$1" >&2; exit 2; }
ROWS=10M ROUNDS=5 SEED=20260413 CONFIGS=stock,none,lz4,zstd OUT=$TOP/build/sqlite/bench MODE=run PAUSE=30
for a in "$@"; do
  case "$a" in
    --rows=*) ROWS=${a#*=}; [[ $ROWS =~ ^[1-9][0-9]*M?$ ]] || bad "--rows: '$ROWS' is not a count such as 200000 or 10M" ;;
    --rounds=*) ROUNDS=${a#*=}; [[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || bad "--rounds: '$ROUNDS' is not 1..99" ;;
    --seed=*) SEED=${a#*=}; [[ $SEED =~ ^[0-9]+$ ]] || bad "--seed: '$SEED' is not a number" ;;
    --configs=*) CONFIGS=${a#*=}; [[ $CONFIGS =~ ^stock(,[a-z0-9]+(-[0-9]+[KM]?)?(\+w[0-9]+)?)+$ ]] ||
                   bad "--configs: '$CONFIGS' must be stock followed by codec[-blocksize][+wN] (lz4, zstd-64K, lz4+w1, ...)" ;;
    --out=*) OUT=${a#*=} ;;
    --pause=*) PAUSE=${a#*=}; [[ $PAUSE =~ ^[0-9]+$ ]] || bad "--pause: '$PAUSE' is not a number of seconds" ;;
    --report-only) MODE=report ;;
    *) bad "unknown flag '$a'" ;;
  esac
done
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
start=$SECONDS
phase=$SECONDS
step() { log "$1 ($((SECONDS - phase)) s; $((SECONDS - start)) s in all)"; phase=$SECONDS; }

bash "$TOP/scripts/install-deps.sh"
B=$TOP/build/sqlite/bench-build
cmake -S "$TOP" -B "$B" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TESTS=OFF -DBF_BUILD_TPCH=OFF > /dev/null
cmake --build "$B" -j2 --target bfsqlite_bench > /dev/null
BENCH=$B/integrations/sqlite/bfsqlite_bench
mkdir -p "$OUT/tmp"
DB=$OUT/bench-$ROWS.db
RESULTS=$OUT/results-$ROWS-$SEED-${CONFIGS//,/+}.txt
step "bfsqlite_bench built"
if [ "$MODE" = run ]; then
  if [ ! -f "$DB" ]; then
    "$BENCH" prepare "$DB.tmp" "$ROWS"
    mv "$DB.tmp" "$DB"
    step "database of $ROWS rows made: $(du -m "$DB" | cut -f1) MB"
  fi
  sync
  sleep "$PAUSE"
  step "database written back (sync) and a pause of $PAUSE s"
  log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  SQLITE_TMPDIR=$OUT/tmp "$BENCH" run "$DB" "$RESULTS" "$ROUNDS" "$SEED" "$CONFIGS"
  log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  step "runs done"
fi
"$BENCH" report "$RESULTS" | tee "$OUT/report-$ROWS-$SEED-${CONFIGS//,/+}.md"

#!/bin/bash
# pair.sh ROUNDS OUT DB BASE NEW: SQLite's CREATE INDEX, ORDER BY and VACUUM (runop.sh in
# ../waits) with lz4 and one worker, the extension built from BASE and from NEW (each with
# caller_cpu.py's counters), the two interleaved and their order alternating per round; each
# run on a fresh copy of DB. One line a run: round, operation, tree, wall, load, counters.
R=$1 OUT=$2 DB=$3 BASE=$4 NEW=$5
HERE=$(cd "$(dirname "$0")" && pwd)
for r in $(seq 1 "$R"); do
  for op in index orderby vacuum; do
    if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
    for t in $order; do
      if [ $t = base ]; then tree=$BASE; else tree=$NEW; fi
      cp "$DB" run.db
      s=$(date +%s%N)
      out=$(bash "$HERE/../waits/runop.sh" "$tree/b/integrations/sqlite/bfsqlite" $op run.db 2>&1 | grep CPU)
      e=$(date +%s%N)
      echo "$r $op $t wall_ms=$(( (e - s) / 1000000 )) load=$(cut -d' ' -f1 /proc/loadavg) $out"
    done
  done
done > "$OUT"

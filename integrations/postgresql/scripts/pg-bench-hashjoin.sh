#!/usr/bin/env bash
# Parallel hash join: temp_file_compression none and lz4 against off (stock's
# own BufFile code, in the same server), in paired interleaved rounds.
#
#   integrations/postgresql/scripts/pg-bench-hashjoin.sh [--rounds=15] [--rows=300000] [--work-mem=128kB]
#       [--methods=none,lz4] [--temp-dir=DIR] [--out=docs/results/pg-hashjoin.md]
#
# One patched server (pg-build.sh), one table of --rows rows
# (g int, m text = md5(g)), the self-join on m with 2 workers and a Parallel
# Hash of many batches (128 at the defaults: with 2 workers a smaller work_mem
# makes the join grow its batches in some runs and not others). A warm-up round, then --rounds
# rounds, each running off and every method once in an order shuffled per
# round (seeded); each run's time is EXPLAIN (ANALYZE, TIMING OFF)'s
# execution time, and each run must show the same number of batches. Per
# method: the median of the per-round ratios method / off and a
# distribution-free interval for it (order statistics, at least 95%), the
# median times, and the load average before and after (the machine is
# shared). --temp-dir puts the temporary files in a tablespace there
# (temp_tablespaces), e.g. on a tmpfs, to see the join without the file
# system under the data directory. Appends the report to --out and prints it.
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"
. "$(dirname "$0")/pg-server.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it builds PostgreSQL and runs it as $PG_USER"

ROUNDS=15 ROWS=300000 WORK_MEM=128kB METHODS=none,lz4 OUT=$TOP/docs/results/pg-hashjoin.md TEMP_DIR=""
for a in "$@"; do
  case "$a" in
    --rounds=*) ROUNDS=${a#*=}; [[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || die "--rounds: 1..99" ;;
    --rows=*) ROWS=${a#*=}; [[ $ROWS =~ ^[1-9][0-9]*$ ]] || die "--rows: a number" ;;
    --work-mem=*) WORK_MEM=${a#*=}; [[ $WORK_MEM =~ ^[1-9][0-9]*(kB|MB)$ ]] || die "--work-mem: such as 64kB" ;;
    --methods=*) METHODS=${a#*=}; [[ $METHODS =~ ^[a-z0-9:=]+(,[a-z0-9:=]+)*$ ]] || die "--methods: such as none,lz4" ;;
    --out=*) OUT=${a#*=} ;;
    --temp-dir=*) TEMP_DIR=${a#*=} ;;
    *) die "unknown flag $a (--rounds --rows --work-mem --methods --temp-dir --out)" ;;
  esac
done
CMD="integrations/postgresql/scripts/pg-bench-hashjoin.sh $*"

bash "$PGS/pg-build.sh" > /dev/null
BIN=$PGB/inst-patched/bin
RUN=$PGB/bench-hashjoin
SOCK=$RUN
PORT=$((PG_PORT_BASE + 4))
rm -rf "$RUN"; mkdir -p "$RUN"; chown "$PG_USER": "$RUN"
srv_new "$RUN/data" "$BIN" || die "initdb failed"
srv_conf "$RUN/server.conf" "$SOCK" "max_worker_processes = 16"
srv_start "$RUN/data" "$BIN" $PORT "$RUN/log" "$RUN/server.conf" || die "no server"
trap srv_stop_all EXIT
psql_at $PORT \
  -c "create table r as select g, md5(g::text) m from generate_series(1, $ROWS) g" \
  -c "alter table r set (parallel_workers = 2)" -c "vacuum analyze r"

WHERE="under the data directory ($(df --output=fstype "$RUN" | tail -1))"
if [ -n "$TEMP_DIR" ]; then
  rm -rf "$TEMP_DIR/pg-bench-hashjoin"; mkdir -p "$TEMP_DIR/pg-bench-hashjoin"
  chown "$PG_USER": "$TEMP_DIR/pg-bench-hashjoin"
  psql_at $PORT -c "create tablespace bench_temp location '$TEMP_DIR/pg-bench-hashjoin'"
  WHERE="in a tablespace on $TEMP_DIR ($(df --output=fstype "$TEMP_DIR" | tail -1), temp_tablespaces)"
  TS="-c temp_tablespaces=bench_temp"
fi
QUERY="explain (analyze, costs off, timing off) select count(*) from r a join r b using (m)"
SET="${TS:-} -c max_parallel_workers_per_gather=2 -c enable_mergejoin=off -c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c work_mem=$WORK_MEM"
# run METHOD: "<ms> <batches>"
run() {
  PGOPTIONS="$SET -c temp_file_compression=$1" psql_at $PORT -A -t -c "$QUERY" \
    | awk '/Batches:/ { for (i = 1; i <= NF; i++) if ($i == "Batches:") b = $(i + 1) }
           /Execution Time:/ { t = $3 } END { print t, b }'
}
CONFIGS="off ${METHODS//,/ }"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$RUN/runs.txt"
for round in $(seq 0 "$ROUNDS"); do
  # the order of this round, shuffled with a fixed seed
  order=$(python3 -c "import random,sys; r=random.Random(24 * 1000 + $round); c=sys.argv[1:]; r.shuffle(c); print(' '.join(c))" $CONFIGS)
  for c in $order; do
    set -- $(run "$c")
    [ "$round" -gt 0 ] && echo "$round $c $1 $2" >> "$RUN/runs.txt"
  done
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$RUN/runs.txt" "$OUT" "$CMD" "$LOAD0" "$LOAD1" "$ROWS" "$WORK_MEM" "$ROUNDS" "$WHERE" <<'PY'
import math, statistics, sys
runs, out, cmd, load0, load1, rows, wm, rounds, where = sys.argv[1:]
t, batches = {}, set()
for line in open(runs):
    rnd, c, ms, b = line.split()
    t.setdefault(c, {})[int(rnd)] = float(ms)
    batches.add(b)
if len(batches) != 1:
    sys.exit(f"the runs differ in their number of batches: {sorted(batches)}")

def median_interval(v):
    """The median, and the interval between the k-th smallest and k-th largest
    values for the largest k whose coverage of the median, 1 - 2 P(Bin(n, 1/2) < k),
    is at least 95% (the whole range when no k reaches it)."""
    v = sorted(v)
    n = len(v)
    below = lambda k: sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * below(k + 1) >= 0.95:
        k += 1
    return statistics.median(v), v[k - 1], v[n - k], 1 - 2 * below(k)

lines = [f"\n## Parallel hash join, temporary files {where}\n",
         f"Command: `{cmd.strip()}` (as root; the server runs as pgbuf).\n",
         f"{rows} rows joined with themselves on an md5 text column, 2 workers, work_mem = {wm}: "
         f"Parallel Hash with {batches.pop()} batches in every run. One server of the patched build "
         f"(off is stock's own buffile.c); {rounds} rounds after a warm-up, each running every "
         f"configuration once in a shuffled order; times are EXPLAIN (ANALYZE, TIMING OFF)'s "
         f"execution times. Load average (1, 5, 15 min) before: {load0}; after: {load1} "
         f"(2 cores shared with other sessions).\n",
         "| configuration | median time (ms) | median of per-round ratios to off | interval of that median | rounds |",
         "|---|---:|---:|---|---:|"]
off = t["off"]
lines.append(f"| off | {statistics.median(off.values()):.0f} | 1 | | {len(off)} |")
for c in t:
    if c == "off":
        continue
    r = [t[c][k] / off[k] for k in t[c] if k in off]
    m, lo, hi, conf = median_interval(r)
    lines.append(f"| {c} | {statistics.median(t[c].values()):.0f} | {m:.3f} | "
                 f"{lo:.3f} .. {hi:.3f} ({conf:.1%}) | {len(r)} |")
text = "\n".join(lines) + "\n"
open(out, "a").write(text)
print(text)
PY

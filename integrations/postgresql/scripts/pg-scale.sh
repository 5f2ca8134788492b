#!/usr/bin/env bash
# The PostgreSQL experiments at scale, in priority order, each step resumable: run it
# again and it continues where it stopped (every run is cached by pg-bench.sh and
# pg-bench-hashmatrix.sh). Results: docs/results/postgresql-scale.md.
#
#   integrations/postgresql/scripts/pg-scale.sh [--list] [--from=STEP] [--only=STEP] [--rounds=3] [--matrix-rounds=3]
#
# Steps (the configurations are off,lz4,zstd:1,auto; add pglz with
# CONFIGS=off,lz4,zstd:1,auto,pglz once the server takes it; nothing else changes):
#   w0      TPC-H SF 10, page cache, work_mem 4MB, 0 workers, all 22 queries (timeout 300 s)
#   w2      the same with 2 workers
#   slowfs  slowfs's rates re-checked with fio and dd (100, 200, 400 MB/s, unlimited)
#   fuse    TPC-H SF 10 on slowfs at 200 MB/s, 0 then 2 workers, the queries that
#           spilled in the page cache (timeout 1200 s)
#   m1      the hash-join matrix, 1M rows, page cache and slowfs at 100 and 400 MB/s
#   m10     the same at 10M rows
#   wm64    TPC-H SF 10, page cache, work_mem 64MB, 0 and 2 workers
#   stock   TPC-H SF 1, the stock binary against off in the patched one (w0, 4MB),
#           2 x --rounds rounds (a first 3 rounds may be cached already)
# Before each step its --plan estimate is printed; after it, how long it took goes to
# build/pg/bench/scale-steps.tsv (step, start, seconds, exit status), and the SF 10
# report is rewritten over every phase run so far (build/pg/bench/sf10/report.md).
# --list prints the steps' commands and runs nothing.
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"

bad() { printf 'pg-scale.sh: %s\n' "$1" >&2; exit 2; }
FROM="" ONLY="" LIST=0 ROUNDS=3 MROUNDS=3
for a in "$@"; do
  case "$a" in
    --from=*) FROM=${a#*=} ;;
    --only=*) ONLY=${a#*=} ;;
    --list) LIST=1 ;;
    --rounds=*) ROUNDS=${a#*=}; [[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || bad "--rounds: '$ROUNDS' is not 1..99" ;;
    --matrix-rounds=*) MROUNDS=${a#*=}; [[ $MROUNDS =~ ^[1-9][0-9]?$ ]] || bad "--matrix-rounds: '$MROUNDS' is not 1..99" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) bad "unknown flag '$a' (--help lists the flags)" ;;
  esac
done
CONFIGS=${CONFIGS:-off,lz4,zstd:1,auto}
S=$PGS
SF10=(--sf=10 --rounds="$ROUNDS" --configs="$CONFIGS" --timeout=300 --fuse-timeout=1200)
# shellcheck disable=SC2054 # the commas are inside flag values
MATRIX=(--dups=1,10,100,1000 --conns=1,2,4 --configs="$CONFIGS" --devices=page,fuse:100MB,fuse:400MB
        --rounds="$MROUNDS")
declare -A CMD=(
  [stock]="$S/pg-bench.sh --sf=1 --configs=stock,off --workers=0 --rounds=$((ROUNDS * 2)) --timeout=120 --check-cpu --out=$PGB/bench/sf1-stock-check"
  [w0]="$S/pg-bench.sh ${SF10[*]} --workers=0 --work-mem=4MB --devices=page --check-cpu"
  [w2]="$S/pg-bench.sh ${SF10[*]} --workers=2 --work-mem=4MB --devices=page"
  [slowfs]="$TOP/tools/slowfs/slowfs-validate.sh --rates=100MB,200MB,400MB,unlimited --rounds=2 --out=$PGB/bench/slowfs-validate.md"
  [fuse]="$S/pg-bench.sh ${SF10[*]} --workers=0,2 --work-mem=4MB --devices=page,fuse:200MB"
  [m1]="$S/pg-bench-hashmatrix.sh --rows=1M ${MATRIX[*]}"
  [m10]="$S/pg-bench-hashmatrix.sh --rows=1M,10M ${MATRIX[*]}"
  [wm64]="$S/pg-bench.sh ${SF10[*]} --workers=0,2 --work-mem=4MB,64MB --devices=page"
)
STEPS=(w0 w2 slowfs fuse m1 m10 wm64 stock)
REPORT="$S/pg-bench.sh ${SF10[*]} --workers=0,2 --work-mem=4MB,64MB --devices=page,fuse:200MB --report-only"
if [ "$LIST" = 1 ]; then
  for s in "${STEPS[@]}"; do echo "$s: ${CMD[$s]}"; done
  echo "report: $REPORT"
  exit 0
fi
for v in "$FROM" "$ONLY"; do
  [ -z "$v" ] || [ -n "${CMD[$v]+x}" ] || bad "no step '$v' (steps: ${STEPS[*]})"
done
[ "$(id -u)" -eq 0 ] || die "run as root (the benchmarks build, mount slowfs and run PostgreSQL)"
mkdir -p "$PGB/bench"
started=0
[ -z "$FROM" ] && started=1
for s in "${STEPS[@]}"; do
  [ "$s" = "$FROM" ] && started=1
  [ "$started" = 1 ] || continue
  [ -z "$ONLY" ] || [ "$s" = "$ONLY" ] || continue
  log "step $s: ${CMD[$s]}"
  read -ra cmd <<< "${CMD[$s]}"
  case ${CMD[$s]} in
    *slowfs-validate.sh*) [ -f "$PGB/bench/slowfs-validate.md" ] && { log "step $s: done before"; continue; } ;;
    *) bash "${cmd[@]}" --plan || true ;;
  esac
  t0=$SECONDS start=$(date -u +%FT%TZ) rc=0
  bash "${cmd[@]}" || rc=$?
  printf '%s\t%s\t%s\t%s\n' "$s" "$start" "$((SECONDS - t0))" "$rc" >> "$PGB/bench/scale-steps.tsv"
  log "step $s: exit $rc after $((SECONDS - t0)) s"
  read -ra cmd <<< "$REPORT"
  bash "${cmd[@]}" > /dev/null 2>&1 || true
done

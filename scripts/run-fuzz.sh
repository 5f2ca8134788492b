#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan+UBSan, BF_FUZZ=ON) in build-fuzz/
# and run each for a bounded time.
#   scripts/run-fuzz.sh [SECONDS] [TARGET...]
# SECONDS per target (default 60); TARGETs from: extent segment index ops fileset
# (default all). New inputs go to build-fuzz/fuzz-corpus/<target>, crashes to
# build-fuzz/fuzz-artifacts/<target>/; the seed corpus in tests/fuzz/corpus is
# only read. Exits non-zero if any target crashed, leaked or failed a property.
# BF_FUZZ_BUILD_DIR overrides the build directory (default build-fuzz).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."

usage() {
  sed -n '2,9p' "$self" | sed 's/^# \{0,1\}//'
}
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  usage
  exit 0
fi
secs=60
if [ $# -gt 0 ]; then
  if ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -eq 0 ]; then
    echo "run-fuzz.sh: SECONDS must be a positive integer, got '$1' (see --help)" >&2
    exit 2
  fi
  secs=$1
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(extent segment index ops fileset)
for t in "${targets[@]}"; do
  if [ ! -d "tests/fuzz/corpus/$t" ]; then
    echo "run-fuzz.sh: unknown target '$t' (extent segment index ops fileset)" >&2
    exit 2
  fi
done
command -v clang >/dev/null || { echo "run-fuzz.sh: clang not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }

dir=${BF_FUZZ_BUILD_DIR:-build-fuzz}
CC=clang cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBF_SANITIZE=ON -DBF_FUZZ=ON \
  -DBF_BUILD_TPCH=OFF >/dev/null
targets_build=()
for t in "${targets[@]}"; do targets_build+=("libfuzzer_$t"); done
cmake --build "$dir" -j"$(nproc)" --target "${targets_build[@]}" >/dev/null

# run_one TARGET: one target for SECS seconds; its summary line goes to
# $dir/fuzz-TARGET.result, its exit status says whether it failed.
run_one() {
  local t=$1 work="$dir/fuzz-corpus/$1" art="$dir/fuzz-artifacts/$1" log="$dir/fuzz-$1.log"
  local rc=0 execs cov
  mkdir -p "$work" "$art"
  # -timeout: one input taking 25 s is a hang; -rss_limit_mb: generous, the 64 KiB-block runs
  # hold a few MB of model per input.
  "$dir/tests/fuzz/libfuzzer_$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$art/" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  # (a target that died early printed neither: not a second failure)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1) || true
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2) || true
  if [ "$rc" -ne 0 ]; then
    {
      echo "$t: FAILED (exit $rc) after ${execs:-?} executions: see $log and $art/"
      grep -m5 -E 'ERROR|fuzz property failed|runtime error|SUMMARY' "$log" | sed 's/^/   /' || true
    } > "$dir/fuzz-$t.result"
    return 1
  fi
  echo "$t: ok, ${execs:-?} executions in ${secs}s, coverage ${cov:-?} edges, corpus $(ls "$work" | wc -l) files" \
    > "$dir/fuzz-$t.result"
}

# The targets run side by side, one per core: each is single-threaded, so SECS of
# fuzzing each costs SECS x targets / cores of wall time, not SECS x targets.
jobs_max=$(nproc)
echo "== ${#targets[@]} targets, ${secs}s each, $jobs_max at a time (logs $dir/fuzz-TARGET.log)"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  rm -f "$dir/fuzz-$t.result"
  run_one "$t" &
done
wait || true
# (the result files, not wait's statuses, say what failed: wait -n has reaped some)
status=0
for t in "${targets[@]}"; do
  if [ -f "$dir/fuzz-$t.result" ]; then cat "$dir/fuzz-$t.result"; else echo "$t: FAILED (no result)"; fi
  grep -q "^$t: ok" "$dir/fuzz-$t.result" 2>/dev/null || status=1
done
exit $status

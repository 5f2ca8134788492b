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

status=0
summary=()
for t in "${targets[@]}"; do
  work="$dir/fuzz-corpus/$t" art="$dir/fuzz-artifacts/$t"
  mkdir -p "$work" "$art"
  log="$dir/fuzz-$t.log"
  echo "== $t: ${secs}s (log $log)"
  rc=0
  # -timeout: one input taking 25 s is a hang; -rss_limit_mb: generous, the 64 KiB-block runs
  # hold a few MB of model per input.
  "$dir/tests/fuzz/libfuzzer_$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$art/" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "   FAILED (exit $rc): see $log and $art/"
    grep -m5 -E 'ERROR|fuzz property failed|runtime error|SUMMARY' "$log" | sed 's/^/   /' || true
    summary+=("$t: FAILED after ${execs:-?} executions")
  else
    echo "   ok: ${execs:-?} executions, coverage ${cov:-?} edges, corpus $(ls "$work" | wc -l) files"
    summary+=("$t: ok, ${execs:-?} executions in ${secs}s, cov ${cov:-?}")
  fi
done
printf '%s\n' "${summary[@]}"
exit $status

#!/usr/bin/env bash
# devclock-validate.sh - does codec=auto's device clock (src/devclock.h) measure the device?
# A benchmark, not a test. Runs bench_devclock (one space per clock and round: `device`, the
# library as built, and `wall`, the same with schedstat unreachable: the wall clock auto used
# before) in these scenarios:
#   pagecache         the temp dir in the page cache, the machine as it is
#   pagecache+burn    the same with a CPU burner (`yes > /dev/null`) on every core: auto must
#                     still see a fast device (no device figure, blocks stored raw)
#   slowfs:R          slowfs (tools/slowfs) mounted at R (slowfs's MB is MiB), defaults
#                     otherwise; the device figure must be within 25% of its validated rate
#   slowfs:R+burn     the same with the burners (extra: what a descheduled FUSE daemon does)
#   io_limit:R        the library's own throttle at R MB/s (10^6 B/s), quiet and burning (extra)
# and prints every space's line, then a summary per scenario and clock (medians and ranges
# over the rounds; device ns/B from the spaces that timed one).
#
#   bench/devclock-validate.sh [--build=DIR] [--dir=DIR] [--mib=N] [--slow-mib=N]
#       [--rounds=N] [--rates=100MB,200MB,400MB] [--only=pagecache,slowfs,io_limit] [--no-burn]
#       [--backing=DIR] [--slowfs-nice=N]
# --build: a build with bench_devclock and slowfs (default build-devclock beside the repo's
# build/, configured and built when missing); --dir: where the temp dirs, slowfs's backing
# directory and mount go (default build/devclock-validate); --mib (page cache, default 256)
# and --slow-mib (slowfs and io_limit, default 64): MiB each space writes and reads back;
# --backing: slowfs's backing directory (default DIR/backing; e.g. on tmpfs, so that the
# backing file system's own stalls are not the device's); --slowfs-nice: renice slowfs's
# threads to N (e.g. -15: a device model that waits for a CPU behind the machine's other
# tasks is a device that stalls, which no clock of its client can tell from a slow one).
# slowfs needs /dev/fuse and fusermount3 (root, or a user allowed to mount).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."

build=build-devclock dir=build/devclock-validate mib=256 slow_mib=64 rounds=3
rates=100MB,200MB,400MB only=pagecache,slowfs,io_limit burn=1 backing='' slowfs_nice=''
for arg in "$@"; do
  case "$arg" in
    --build=*) build=${arg#*=} ;;
    --dir=*) dir=${arg#*=} ;;
    --mib=*) mib=${arg#*=} ;;
    --slow-mib=*) slow_mib=${arg#*=} ;;
    --rounds=*) rounds=${arg#*=} ;;
    --rates=*) rates=${arg#*=} ;;
    --only=*) only=${arg#*=} ;;
    --no-burn) burn=0 ;;
    --backing=*) backing=${arg#*=} ;;
    --slowfs-nice=*) slowfs_nice=${arg#*=} ;;
    -h|--help) sed -n '2,24p' "$self" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "devclock-validate.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
if [ ! -x "$build/bench/bench_devclock" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j2 --target bench_devclock slowfs >/dev/null
fi
bench=$(realpath "$build/bench/bench_devclock")
slowfs=$(realpath "$build/tools/slowfs/slowfs" 2>/dev/null || true)
mkdir -p "$dir"
dir=$(realpath "$dir")
# shellcheck source=../tools/slowfs/mount.bash
. tools/slowfs/mount.bash
mnt=$dir/mnt
backing=${backing:-$dir/backing}
burn_pids=()
burn_on() {
  for _ in $(seq "$(nproc)"); do yes >/dev/null & burn_pids+=($!); done
  sleep 1
}
burn_off() {
  for p in "${burn_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${burn_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  burn_pids=()
}
cleanup() {
  burn_off
  slowfs_cleanup "$mnt"
}
trap cleanup EXIT INT TERM
has() { [[ ",$only," == *",$1,"* ]]; }
out=$dir/lines.txt
: >"$out"
run() { # label dir mib [bench options...]
  local label=$1 d=$2 m=$3
  shift 3
  mkdir -p "$d"
  "$bench" --dir="$d" --mib="$m" --rounds="$rounds" --label="$label" "$@" | tee -a "$out"
}
both() { # label, run quiet and (unless --no-burn) with the burners; the rest as run's
  local label=$1
  shift
  run "$label" "$@"
  if [ "$burn" = 1 ]; then
    burn_on
    run "$label+burn" "$@"
    burn_off
  fi
}

echo "devclock-validate: $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), rounds $rounds, slowfs backing $backing${slowfs_nice:+, slowfs nice $slowfs_nice}"
has pagecache && both pagecache "$dir/pc" "$mib"
IFS=, read -r -a rate_list <<<"$rates"
if has slowfs; then
  if [ ! -x "$slowfs" ] || [ ! -c /dev/fuse ]; then
    echo "devclock-validate.sh: no slowfs or /dev/fuse here" >&2
    exit 1
  fi
  for r in "${rate_list[@]}"; do
    mkdir -p "$backing" "$mnt"
    slowfs_mount "$slowfs" "$backing" "$mnt" "$dir/slowfs.err" --rate="$r"
    if [ -n "$slowfs_nice" ]; then # every thread it has; the ones it makes later inherit
      for t in /proc/"$SLOWFS_PID"/task/*; do renice -n "$slowfs_nice" -p "${t##*/}" >/dev/null; done
    fi
    both "slowfs:$r" "$mnt/t" "$slow_mib"
    slowfs_unmount "$mnt"
  done
fi
if has io_limit; then
  for r in "${rate_list[@]}"; do
    n=${r%MB}
    both "io_limit:${n}MB" "$dir/il" "$slow_mib" --io-limit=$((n * 1000000))
  done
fi
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# The summary: per scenario and clock, over the rounds.
python3 bench/devclock-summary.py "$out"

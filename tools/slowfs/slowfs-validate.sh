#!/usr/bin/env bash
# slowfs-validate.sh - does slowfs deliver the rate it is set to? A benchmark,
# not a test: it mounts slowfs at each rate and measures what fio and dd
# achieve through it, in interleaved rounds (each round mounts every rate in
# turn), and prints the median of the rounds against the setting.
#
#   tools/slowfs/slowfs-validate.sh [--rates=50MB,100MB,200MB,400MB,unlimited]
#       [--rounds=3] [--runtime=4] [--size=256M] [--dir=DIR] [--out=FILE]
#       [--slowfs-opts='--burst-us=N --resume-us=N ...']
#
# Cases: fio (ioengine=psync, direct=1) sequential write and read, 8 KiB and
# 1 MiB requests, 1 and 4 jobs; dd of 1 MiB blocks (oflag/iflag=direct). The
# unlimited mount is slowfs's own ceiling on this machine; "backing" rows run
# the same fio jobs on the backing directory without FUSE (buffered, as slowfs
# reaches it). RATE as slowfs takes it: MB = MiB (1048576 bytes). Results are
# in MiB/s. The read files are laid out in the backing directory beforehand,
# so no read case pays for writing them through the mount.
#   --rates    the rates to mount at (default 50MB,100MB,200MB,400MB,unlimited)
#   --rounds   rounds of every case at every rate (default 3; the median is reported)
#   --runtime  seconds each fio run measures, after 1 s of ramp (default 4)
#   --size     each fio job's file (default 256M)
#   --dir      where the backing directory and mount point go (default build/slowfs-validate)
#   --out      also write the report (Markdown) to FILE
#   --slowfs-opts  more options for every mount (split at spaces), e.g. a larger burst
# BF_BUILD_DIR: build directory with slowfs (default build; built there if missing).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/../.."  # the repository (this is tools/slowfs/slowfs-validate.sh)

rates=50MB,100MB,200MB,400MB,unlimited rounds=3 runtime=4 size=256M dir=build/slowfs-validate out=
opts=
for arg in "$@"; do
  case "$arg" in
    --rates=*) rates=${arg#*=} ;;
    --rounds=*) rounds=${arg#*=} ;;
    --runtime=*) runtime=${arg#*=} ;;
    --size=*) size=${arg#*=} ;;
    --dir=*) dir=${arg#*=} ;;
    --out=*) out=${arg#*=} ;;
    --slowfs-opts=*) opts=${arg#*=} ;;
    -h|--help) sed -n '2,25p' "$self" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "slowfs-validate.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "slowfs-validate.sh: --rounds: '$rounds' is not a positive whole number" >&2; exit 2; }
[[ "$runtime" =~ ^[1-9][0-9]*$ ]] || { echo "slowfs-validate.sh: --runtime: '$runtime' is not a positive whole number of seconds" >&2; exit 2; }
[ -c /dev/fuse ] || { echo "slowfs-validate.sh: /dev/fuse is absent: slowfs cannot be mounted here" >&2; exit 1; }
for t in fio dd fusermount3 python3; do
  command -v "$t" >/dev/null || { echo "slowfs-validate.sh: $t is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done

build=${BF_BUILD_DIR:-build}
slowfs=$build/tools/slowfs/slowfs
if [ ! -x "$slowfs" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j2 --target slowfs >/dev/null
fi
slowfs=$(realpath "$slowfs")
IFS=, read -r -a rate_list <<<"$rates"
for r in "${rate_list[@]}"; do # slowfs judges the rates: a bad one stops us before we start
  err=$("$slowfs" /nonexistent /nonexistent --rate="$r" 2>&1 || true)
  case "$err" in *"is not a rate"*) echo "slowfs-validate.sh: --rates: $err" >&2; exit 2 ;; esac
done

mkdir -p "$dir"
dir=$(realpath "$dir")
back=$dir/back mnt=$dir/mnt raw=$dir/results.tsv
. tools/slowfs/mount.bash
trap 'slowfs_cleanup "$mnt"' EXIT
slowfs_cleanup "$mnt"
rm -rf "$back"
mkdir -p "$back" "$mnt"
: >"$raw"

stat_of() { # name: the device's counter, from the mount's stats file
  sed -n "s/^$1 //p" "$mnt/.slowfs-stats"
}

# fio job files: NAME=seqwrite|seqread; the read ones laid out once, in the backing directory.
fio_run() { # where rw bs jobs -> prints bytes/s
  local where=$1 rw=$2 bs=$3 jobs=$4 name=seq$2
  fio --name="$name" --directory="$where" --rw="$rw" --bs="$bs" --numjobs="$jobs" --size="$size" \
    --ioengine=psync --direct="$([ "$where" = "$mnt" ] && echo 1 || echo 0)" --fallocate=none \
    --time_based --runtime="$runtime" --ramp_time=1 --group_reporting --output-format=json |
    python3 -c 'import json, sys; j = json.load(sys.stdin)["jobs"][0]; print(j[sys.argv[1]]["bw_bytes"])' \
      "$([ "$rw" = write ] && echo write || echo read)"
}
echo "laying out the read files ($size x 4) in the backing directory"
fio --name=seqread --directory="$back" --rw=write --bs=1M --numjobs=4 --size="$size" \
  --ioengine=psync --output-format=terse >/dev/null

dd_run() { # write|read MiB -> prints bytes/s
  local t0 t1
  t0=$(date +%s.%N)
  if [ "$1" = write ]; then
    dd if=/dev/zero of="$mnt/dd" bs=1M count="$2" oflag=direct status=none
  else
    dd if="$mnt/dd" of=/dev/null bs=1M iflag=direct status=none
  fi
  t1=$(date +%s.%N)
  python3 -c 'import sys; print(int(int(sys.argv[1]) * 1048576 / (float(sys.argv[3]) - float(sys.argv[2]))))' "$2" "$t0" "$t1"
}

record() { # round rate set-bytes/s case bytes/s requests bytes
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$raw"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
for round in $(seq "$rounds"); do
  t_round=$(date +%s)
  for r in "${rate_list[@]}"; do
    # shellcheck disable=SC2086 # --slowfs-opts is a list of options
    slowfs_mount "$slowfs" "$back" "$mnt" "$dir/slowfs.err" --rate="$r" $opts
    set_rate=$(stat_of rate) # bytes/s as slowfs took it; 0 = unlimited
    for rw in write read; do
      for bs in 8k 1m; do
        for jobs in 1 4; do
          r0=$(stat_of ${rw}_requests) b0=$(stat_of ${rw}_bytes)
          bw=$(fio_run "$mnt" "$rw" "$bs" "$jobs")
          record "$round" "$r" "$set_rate" "fio $rw $bs x$jobs" "$bw" $(($(stat_of ${rw}_requests) - r0)) \
            $(($(stat_of ${rw}_bytes) - b0))
        done
      done
    done
    # About 3 s of transfer at the set rate; 2 GiB unlimited.
    mib=$((set_rate ? set_rate * 3 / 1048576 : 2048))
    for rw in write read; do
      record "$round" "$r" "$set_rate" "dd $rw 1m x1" "$(dd_run "$rw" "$mib")" 0 0
    done
    rm -f "$mnt"/seqwrite.* "$mnt/dd"
    slowfs_unmount "$mnt"
  done
  for rw in write read; do
    for bs in 8k 1m; do
      for jobs in 1 4; do
        record "$round" backing 0 "fio $rw $bs x$jobs" "$(fio_run "$back" "$rw" "$bs" "$jobs")" 0 0
      done
    done
  done
  rm -f "$back"/seqwrite.*
  echo "round $round of $rounds: $(($(date +%s) - t_round)) s"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
rm -rf "$back"

report=$(python3 - "$raw" "$rates" "$rounds" "$runtime" "$size" "$load_start" "$load_end" \
  "$(($(date +%s) - started))" "${opts:-none}" <<'EOF'
import statistics, sys
raw, rates, rounds, runtime, size, load0, load1, secs, opts = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(raw)]
ROUND, RATE, SET, CASE, BW, REQS, BYTES = range(7)
cols = rates.split(",") + ["backing"]
cases = []
for r in rows:
    if r[CASE] not in cases:
        cases.append(r[CASE])

def runs(case, col):
    return [r for r in rows if r[CASE] == case and r[RATE] == col]

print(f"Median of {rounds} interleaved rounds; fio runs {runtime} s after 1 s of ramp, "
      f"{size} per job; more slowfs options: {opts}. MiB/s achieved; in parentheses, the share "
      "of the setting.")
print(f"Load average (1, 5, 15 min) at the start: {load0}; at the end: {load1}. "
      f"Took {secs} s.\n")
print("| case | " + " | ".join(c if c in ("unlimited", "backing") else c + "/s" for c in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for case in cases:
    cells = []
    for col in cols:
        rs = runs(case, col)
        if not rs:
            cells.append("")
            continue
        med = statistics.median(int(r[BW]) / 1048576 for r in rs)
        want = int(rs[0][SET]) / 1048576
        cells.append(f"{med:.1f} ({100 * med / want:.1f}%)" if want else f"{med:.0f}")
    print(f"| {case} | " + " | ".join(cells) + " |")
if "unlimited" in cols:
    # One 8 KiB request at a time on the unlimited mount: its whole cost is FUSE's round trip,
    # and the highest rate such a stream can be held to.
    for rw in ("write", "read"):
        rs = runs(f"fio {rw} 8k x1", "unlimited")
        if rs:
            bw = statistics.median(int(r[BW]) for r in rs)
            print(f"\nOne 8 KiB {rw} at a time, unlimited: {8192 / bw * 1e6:.0f} us per request, "
                  f"so such a stream can be held to rates up to {bw / 1048576:.0f} MiB/s.", end="")
    print()
print("\nRange over the rounds (min-max MiB/s) and the mean request size the device saw (KiB):\n")
print("| case | " + " | ".join(cols[:-1]) + " |")
print("|---" * len(cols) + "|")
for case in cases:
    cells = []
    for col in cols[:-1]:
        rs = runs(case, col)
        got = [int(r[BW]) / 1048576 for r in rs]
        reqs, nbytes = sum(int(r[REQS]) for r in rs), sum(int(r[BYTES]) for r in rs)
        size_kib = f", {nbytes / reqs / 1024:.0f} KiB" if reqs else ""
        cells.append(f"{min(got):.1f}-{max(got):.1f}{size_kib}")
    print(f"| {case} | " + " | ".join(cells) + " |")
EOF
)
echo
echo "$report"
if [ -n "$out" ]; then
  printf '%s\n' "$report" >"$out"
  echo "(written to $out)"
fi

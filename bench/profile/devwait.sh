#!/bin/sh
# devwait.sh DEVWAIT DIR REPS - devwait's scenarios, quiet and then with a CPU burner on
# every core (one `yes > /dev/null` per CPU), REPS times each: one summary line per run.
# The blkio scenario (O_DIRECT writes throttled by the kernel at 200 MB/s) needs root and
# cgroup v1's blkio controller; the VM's disk is 254:0 here (DEV= to change it).
set -eu
B=$1 DIR=$2 REPS=${3:-3} DEV=${DEV:-254:0}
NCPU=$(nproc)
CG=/sys/fs/cgroup/blkio/bfprof46
burn_pids=
burn_on() { for _ in $(seq "$NCPU"); do yes > /dev/null & burn_pids="$burn_pids $!"; done; sleep 1; }
burn_off() { for p in $burn_pids; do kill "$p" 2> /dev/null || true; done; burn_pids=; }
cleanup() { burn_off; [ -d "$CG" ] && rmdir "$CG" 2> /dev/null || true; }
trap cleanup EXIT INT TERM
summary() { # label < devwait's output
    awk -v l="$1" '
        NR == 1 { match($0, /wall [0-9.]+, wall - run delay [0-9.]+, thread CPU [0-9.]+/); el = substr($0, RSTART, RLENGTH);
                  match($0, /run delay [0-9.]+ ms \(in transfers [0-9.]+ ms\)/); rq = substr($0, RSTART, RLENGTH);
                  match($0, /\([0-9.]+ per MiB\)/); rd = substr($0, RSTART + 1, RLENGTH - 2) }
        NR > 1 { w[$1] = $3; a[$1] = $9; d[$1] = ($12 == "device" ? $15 : "-") }
        END { printf "%s | elapsed ns/B: %s | %s | schedstat readings %s | waits: wall %s devclk %s exact %s blocked %s | transfer ns/B: wall %s devclk %s exact %s blocked %s | device ns/B: wall %s devclk %s exact %s devclk-r %s exact-r %s devclk-p %s exact-p %s\n",
                     l, el, rq, rd, w["wall"], w["devclk"], w["exact"], w["blocked"], a["wall"], a["devclk"], a["exact"], a["blocked"], d["wall"], d["devclk"], d["exact"], d["devclk-r"], d["exact-r"], d["devclk-p"], d["exact-p"] }'
}
one() { label=$1; shift; "$B" --dir="$DIR" "$@" | summary "$label"; }
blkio_one() { # label rate args...
    label=$1 rate=$2; shift 2
    mkdir -p "$CG"
    echo "$DEV $rate" > "$CG/blkio.throttle.write_bps_device"
    sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG" "$B" --dir="$DIR" "$@" | summary "$label"
}
scenarios() { # condition
    c=$1
    for _ in $(seq "$REPS"); do
        one "$c pagecache 8K" --mode=pagecache --mib=64
        one "$c pagecache 8K work2us" --mode=pagecache --mib=64 --work=2000
        for m in 100 200 400; do one "$c throttle:$m 8K work2us" --mode=throttle:$m --mib=64 --work=2000; done
        one "$c direct 64K" --mode=direct --mib=64 --xfer=65536
        if [ -w /sys/fs/cgroup/blkio ]; then
            blkio_one "$c blkio:200MB/s direct 1M" 200000000 --mode=direct --mib=64 --xfer=1048576
        fi
    done
}
scenarios quiet
burn_on
scenarios burn
burn_off

#!/bin/bash
# cells.sh BENCH_SPILL OUTDIR TAG CONFIG [FILES...]: callgrind with its cache simulation of
# bench_spill --only=CONFIG (stock: run_plain, else run_library collected), 16 MiB x 3 runs
# (a warm-up and 2), 40-, 100- and 1000-byte tuples, into OUTDIR/cg.TAG.CONFIG.FILES.TUPLE.out;
# two at a time, niced. cells.py reads them.
set -e
bin=$1 out=$2 tag=$3 conf=$4
shift 4
files=${*:-8 32 256}
mkdir -p "$out/tmp"
# glibc would copy with rep movsb, which callgrind counts one instruction per byte.
export GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1073741824:glibc.cpu.x86_rep_stosb_threshold=1073741824
toggle=run_library
[ "$conf" = stock ] && toggle=run_plain
for f in $files; do for t in 40 100 1000; do echo "$f $t"; done; done |
    xargs -P 2 -n 2 sh -c 'nice -n 19 valgrind --tool=callgrind --cache-sim=yes --compress-strings=no \
        --compress-pos=no --toggle-collect='"$toggle"' --callgrind-out-file='"$out"'/cg.'"$tag.$conf"'.$0.$1.out \
        '"$bin"' --only='"$conf"' --mib=16 --rounds=2 --files=$0 --tuple=$1 --temp-dir='"$out"'/tmp \
        > /dev/null 2>&1'

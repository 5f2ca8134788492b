#!/bin/sh
# Measures tpchgen for docs/results/tpchgen.md: wall time of SF 1 in both
# formats (median of 3, CPU time alongside), and the compressibility of
# lineitem.tbl and orders.tbl at SF 0.1 and SF 1 with lz4 -1, zstd -1 and
# gzip -6. Usage: measure.sh path/to/tpchgen [workdir]  (workdir default
# /tmp/tpchgen_measure; needs ~3 GB free there).
set -eu
TOOL=${1:?usage: measure.sh path/to/tpchgen [workdir]}
WORK=${2:-/tmp/tpchgen_measure}
mkdir -p "$WORK"

echo "## Generation time, SF 1, $(nproc) CPUs, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for fmt in tbl bin; do
  for i in 1 2 3; do
    rm -rf "$WORK/sf1_$fmt"
    /usr/bin/time -f "%e %U %S" -o "$WORK/time_${fmt}_${i}" \
      "$TOOL" --sf=1 --out="$WORK/sf1_$fmt" --format=$fmt 2>/dev/null
    cat "$WORK/time_${fmt}_${i}"
  done | sort -n | awk -v f=$fmt '{ t[NR] = $0 } END {
      split(t[2], m, " ");
      printf "format=%s runs(wall user sys): %s | %s | %s  -> median wall %.2f s\n", f, t[1], t[2], t[3], m[1] }'
done

echo "## Compressed size / original size"
for sf in 0.1 1; do
  dir="$WORK/sf${sf}_tbl"
  [ "$sf" = 1 ] && dir="$WORK/sf1_tbl" || { rm -rf "$dir"; "$TOOL" --sf=$sf --out="$dir" --tables=orders,lineitem; }
  for t in lineitem orders; do
    f="$dir/$t.tbl"
    orig=$(stat -c %s "$f")
    lz4=$(lz4 -1 -c "$f" | wc -c)
    zstd=$(zstd -1 -c "$f" | wc -c)
    gz=$(gzip -6 -c "$f" | wc -c)
    awk -v sf=$sf -v t=$t -v o=$orig -v a=$lz4 -v b=$zstd -v c=$gz 'BEGIN {
      printf "| %s | %s.tbl | %d | %d (%.3f) | %d (%.3f) | %d (%.3f) |\n", sf, t, o, a, a/o, b, b/o, c, c/o }'
  done
done

#!/usr/bin/env python3
"""Split perf samples of one backend's hash join into its two phases and compare two setups.

Usage: perf_phases.py DIR A B

DIR holds, per run, NAME-K.out (psql's output, with a line 'pid|PID' from
`select 'pid', pg_backend_pid()`) and NAME-K.data (`perf record -a -F 2000` around that psql
session). For every run of A and of B the backend's samples are split where its probes start
in earnest: the first 0.1 s bin, followed by another, with at least 15 samples in
ExecScanHashBucket (batch 0 probes little: most outer tuples are written out). Before that
point: the inner side's scan and the outer side's with batch 0 ("build+batch0"); after it:
every later batch, each reading its inner file into the hash table and probing it with its
outer file ("later batches"). Prints per phase the samples a run and the functions whose
samples a run differ most between A and B.
"""
import collections
import glob
import re
import subprocess
import sys


def runs(d, name):
    for out in sorted(glob.glob(f"{d}/{name}-[0-9]*.out")):
        pid = re.search(r"pid\|(\d+)", open(out).read()).group(1)
        text = subprocess.run(["perf", "script", "-i", out[:-4] + ".data", "-F", "pid,time,ip,sym"],
                              capture_output=True, text=True, check=True).stdout
        rows = []
        for line in text.splitlines():
            f = line.split()
            if len(f) >= 3 and f[0] == pid:
                rows.append((float(f[1].rstrip(":")), f[3] if len(f) > 3 else "?"))
        yield rows


def phases(d, name):
    ph = [collections.Counter(), collections.Counter()]
    n = 0
    for rows in runs(d, name):
        t0 = rows[0][0]
        bins = collections.Counter(int((t - t0) / 0.1) for t, s in rows if s == "ExecScanHashBucket")
        first = min(b for b, c in bins.items() if c >= 15 and bins.get(b + 1, 0) >= 15)
        for t, s in rows:
            ph[t > t0 + first * 0.1][s] += 1
        n += 1
    return ph, n


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: perf_phases.py DIR A B (see the docstring)")
    d, a, b = sys.argv[1:4]
    (pa, na), (pb, nb) = phases(d, a), phases(d, b)
    for i, title in enumerate(["build+batch0", "later batches"]):
        ca, cb = pa[i], pb[i]
        print(f"== {title}: {a} {sum(ca.values()) / na:.0f}  {b} {sum(cb.values()) / nb:.0f}")
        moved = lambda k: (-abs(cb[k] / nb - ca[k] / na), k)  # ties by name: the same order each run
        for k in sorted(set(ca) | set(cb), key=moved)[:18]:
            print(f"   {cb[k] / nb - ca[k] / na:+7.1f} {ca[k] / na:7.1f} {cb[k] / nb:7.1f} {k}")


if __name__ == "__main__":
    main()

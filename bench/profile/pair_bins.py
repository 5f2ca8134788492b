#!/usr/bin/env python3
"""pair_bins.py INVOCATIONS FILES TUPLE MIB BIN_A BIN_B [TEMP_DIR]: two builds of bench_spill
compared on one machine in one run. The binaries alternate (A B, then B A, ...), each
invocation `bench_spill --configs=none --rounds=3 --times --seed=100+i` (stock and none,
shuffled per round); from each run after the first round: none's write phase over stock's
of the same round, none's whole run over stock's, none's write seconds and user CPU (tick
sampled: coarse). Prints per binary the median [min, max] and the load average seen. The
ratio to stock in the same round takes out much of what the machine's load does to both;
not all of it (docs/results/none-path-profile.md)."""
import os
import statistics
import subprocess
import sys

n, files, tuple_b, mib = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
bins = sys.argv[5:7]
tmp = sys.argv[7] if len(sys.argv) > 7 else '/dev/shm/pair-bins'
os.makedirs(tmp, exist_ok=True)
res = {b: {'w': [], 't': [], 'wn': [], 'u': []} for b in bins}
loads = []
for i in range(n):
    for b in (bins if i % 2 == 0 else bins[::-1]):
        out = subprocess.run([b, '--configs=none', '--mib=' + mib, '--rounds=3', '--files=' + files,
                              '--tuple=' + tuple_b, '--temp-dir=' + tmp, '--times',
                              '--seed=%d' % (100 + i)],
                             capture_output=True, text=True, check=True).stdout
        runs = {}
        for line in out.splitlines():
            p = line.split()
            if p and p[0] == 'time':  # time round place config write read close raw user sys
                runs[(int(p[1]), p[3])] = tuple(map(float, p[4:]))
        for (r, conf), v in runs.items():
            if conf != 'none' or r == 0:
                continue
            s = runs[(r, 'stock')]
            res[b]['w'].append(v[0] / s[0])
            res[b]['t'].append(sum(v[:3]) / sum(s[:3]))
            res[b]['wn'].append(v[0])
            res[b]['u'].append(v[4])
    loads.append(float(open('/proc/loadavg').read().split()[0]))
print('cell %s x %s B, %s MiB, %d invocations a binary (3 rounds, the first left out), '
      'load average %.1f-%.1f' % (files, tuple_b, mib, n, min(loads), max(loads)))
for b in bins:
    def q(x):
        return '%.3f [%.3f, %.3f]' % (statistics.median(x), min(x), max(x))
    r = res[b]
    print('%s: none/stock write %s, whole run %s; none write_s %s, user_s %s'
          % (b, q(r['w']), q(r['t']), q(r['wn']), q(r['u'])))

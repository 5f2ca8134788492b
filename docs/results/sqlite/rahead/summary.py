# summary.py RUNS: per operation and tree, the means of pair.sh's counters, and the paired
# ratio new / base of the caller's CPU and of the wall (geometric mean over rounds, min-max).
import sys, re, math, collections
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    p = line.split()
    kv = dict(x.split('=') for x in p[3:] if '=' in x)
    runs[(p[1], p[2])][p[0]] = {k: float(v) for k, v in kv.items()}
ops = sorted({op for op, _ in runs})
for op in ops:
    for t in ('base', 'new'):
        r = runs[(op, t)].values()
        m = lambda k: sum(x[k] for x in r) / len(r)
        print(f"{op:8s} {t:4s} runs={len(r)} caller_cpu_ms={m('caller_cpu_ms'):.0f} "
              f"unpack_here={m('unpack_here'):.0f} ({m('unpack_here_ms'):.0f} ms) "
              f"ra_hits={m('ra_hits'):.0f} ra_misses={m('ra_misses'):.0f} load={m('load'):.1f}")
    for k in ('caller_cpu_ms', 'wall_ms'):
        rs = [runs[(op, 'new')][i][k] / runs[(op, 'base')][i][k] for i in runs[(op, 'base')] if i in runs[(op, 'new')]]
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"{op:8s} new/base {k}: {g:.3f} (rounds {min(rs):.3f}-{max(rs):.3f})")

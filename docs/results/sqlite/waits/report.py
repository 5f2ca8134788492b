"""report.py RUNS [REF]: per operation, each configuration's wall / REF's (default stock),
paired by round, with the project's interval (tpch_report.stats: paired.c's), and the
medians. RUNS: paired.py's lines (round, op, config, wall s, CPU s, ...)."""
import collections
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "tpch", "report"))
from tpch_report import stats  # noqa: E402

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1], encoding="utf-8")]
ref = sys.argv[2] if len(sys.argv) > 2 else "stock"
walls = collections.defaultdict(dict)  # (op, round) -> config -> wall
for r in rows:
    walls[(r[1], int(r[0]))][r[2]] = float(r[3])
for op in sorted({r[1] for r in rows}):
    for c in sorted({r[2] for r in rows}):
        if c == ref:
            continue
        pairs = [(v[c], v[ref]) for (o, _), v in sorted(walls.items()) if o == op and c in v and ref in v]
        if len(pairs) < 2:
            continue
        iv = stats.ratio([p[0] for p in pairs], [p[1] for p in pairs])
        med = sorted(p[0] for p in pairs)[len(pairs) // 2], sorted(p[1] for p in pairs)[len(pairs) // 2]
        print(f"{op:8s} {c:8s}/{ref}: {iv.est:.3f} [{iv.lo:.3f}, {iv.hi:.3f}] n={len(pairs)} "
              f"median {med[0]:.2f} vs {med[1]:.2f}")

#!/usr/bin/env python3
"""auto against the cell's best fixed codec, from a results file of pg-hook-wall.sh --matrix.

Usage: auto_best.py RESULTS.jsonl

Per cell (D, connections): each method's median time, the best fixed codec (the lowest
median of none, lz4, zstd), and auto / best as the geometric mean of the rounds' paired
ratios (issue 46: at most 1.05 by that estimate), with each round's ratio.
"""
import collections
import json
import math
import statistics
import sys

METHODS = ["pristine", "hook:none", "hook:lz4", "hook:zstd", "hook:auto"]

rows = [json.loads(line) for line in open(sys.argv[1])]
cells = collections.defaultdict(list)
for r in rows:
    cells[(r["cell"]["d"], r["cell"]["conns"])].append(r)
for (d, conns), rs in sorted(cells.items()):
    med = {m: statistics.median(r[m]["s"] for r in rs) for m in METHODS}
    best = min(["hook:none", "hook:lz4", "hook:zstd"], key=med.get)
    ratios = [r["hook:auto"]["s"] / r[best]["s"] for r in rs]
    est = math.exp(statistics.mean(math.log(x) for x in ratios))
    print(f"D={d} conns={conns}: medians " + " / ".join(f"{med[m]:.1f}" for m in METHODS)
          + f" s; best {best[5:]}, auto/best {est:.3f}, rounds "
          + ", ".join(f"{x:.3f}" for x in ratios))

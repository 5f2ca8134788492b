#!/usr/bin/env python3
"""table.py DIR MIB: the markdown table of docs/results/none-path-profile/table.md from
DIR/cg.stock.T.out, DIR/cg.none.T.out and DIR/fp2.none.T.out (T = 40, 100, 1000), each
a callgrind profile of MIB MiB spilled (write + read) by bench_spill --only=..."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
from breakdown import attribute, CAT_ORDER

d, mib = sys.argv[1], float(sys.argv[2])
T = (40, 100, 1000)
res = {}
for t in T:
    for kind, f in (('stock', 'cg.stock.%d.out'), ('none', 'cg.none.%d.out'), ('fast', 'fp2.none.%d.out')):
        p = os.path.join(d, f % t)
        if os.path.exists(p):
            res[(t, kind)] = {k: v / mib for k, v in attribute(p).items()}
calls = lambda t: 2 * 1048576 / t  # a write and a read per tuple
H = 'harness (bench loop, batch_of)'
print('| part (thousand instructions per MiB) | 40 B stock | 40 B none | 100 B stock | 100 B none | 1000 B stock | 1000 B none | none, per call (40 / 100 / 1000 B) |')
print('|---|---:|---:|---:|---:|---:|---:|---|')
for c in CAT_ORDER:
    if c in ('one-time init (CRC tables)', 'other'):
        continue
    vals = [res[(t, k)].get(c, 0) for t in T for k in ('stock', 'none')]
    if not any(vals):
        continue
    pc = ' / '.join('%.1f' % (res[(t, 'none')].get(c, 0) / calls(t)) for t in T)
    print('| %s | %s | %s |' % (c, ' | '.join('%.0f' % (v / 1000) if v else '' for v in vals), pc))
tot = lambda r: sum(r.values())
print('| **total** | %s | %s |' % (' | '.join('**%.0f**' % (tot(res[(t, k)]) / 1000) for t in T for k in ('stock', 'none')),
                               ' / '.join('%.1f' % (tot(res[(t, 'none')]) / calls(t)) for t in T)))
print('| total less the harness | %s | %s |' % (' | '.join('%.0f' % ((tot(res[(t, k)]) - res[(t, k)].get(H, 0)) / 1000) for t in T for k in ('stock', 'none')),
                                          ' / '.join('%.1f' % ((tot(res[(t, 'none')]) - res[(t, 'none')].get(H, 0)) / calls(t)) for t in T)))
if all((t, 'fast') in res for t in T):
    cells = []
    for t in T:
        r = res[(t, 'fast')]
        cells += ['', '%.0f (%.0f)' % (tot(r) / 1000, (tot(r) - r.get(H, 0)) / 1000)]
    print('| none with the fast-path prototype: total (less the harness) | %s | %s |' % (
        ' | '.join(cells), ' / '.join('%.1f' % (tot(res[(t, 'fast')]) / calls(t)) for t in T)))

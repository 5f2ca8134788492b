#!/usr/bin/env python3
"""cgtop.py CG.OUT [inc|self] [N] [BLOCKS]: the functions of a callgrind profile made with
--cache-sim=yes, per block spilled (BLOCKS, default 6,144: bench_spill --mib=16 --rounds=2, a
warm-up and 2 runs), by instructions: Ir, D1 read misses, D1 write misses, last-level read
misses; inclusive (inc) or self (default). Reads callgrind_annotate's table."""
import re
import subprocess
import sys

path = sys.argv[1]
inclusive = len(sys.argv) > 2 and sys.argv[2] == 'inc'
top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
blocks = float(sys.argv[4]) if len(sys.argv) > 4 else 6144.0
out = subprocess.run(['callgrind_annotate', '--show=Ir,D1mr,D1mw,DLmr', '--threshold=99.5',
                      '--inclusive=' + ('yes' if inclusive else 'no'), path],
                     capture_output=True, text=True, check=True).stdout
table = out.split('file:function', 1)[1].split('Auto-annotated', 1)[0]
num = r'([\d,]+|\.)\s*(?:\([^)]*\))?\s*'
rows = 0
for line in table.splitlines():
    m = re.match(r'\s*' + num * 4 + r'(\S.*)$', line)
    if not m:
        continue
    vals = [0.0 if v == '.' else float(v.replace(',', '')) / blocks for v in m.groups()[:4]]
    name = m.group(5).split(' [')[0]
    name = re.sub(r'^.*/((src|bench)/)', r'\1', name)
    name = re.sub(r'^.*/', '', name)
    print('%9.1f %7.1f %7.1f %7.1f  %s' % (*vals, name))
    rows += 1
    if rows == top:
        break

#!/usr/bin/env python3
"""cells.py [--conf=CONFIG] DIR TAG...: per 8 KiB block written and read (3 runs x 16 MiB = 6,144 blocks) from
DIR/cg.TAG.CONF.FILES.TUPLE.out (cells.sh): instructions, those less CRC-32C (the inclusive
cost of bf_crc32c_le64, bf_crc32c and bf_crc32c_le64_copy, which copies too), D1 and LL misses (reads + writes), stock (tag `base`)
against `none` (or CONFIG: auto, ...) under each TAG; a markdown table."""
import os, re, subprocess, sys

BLOCKS = 3 * 16 * 1024 * 1024 / 8192


def load(d, tag, conf, f, t):
    p = os.path.join(d, 'cg.%s.%s.%d.%d.out' % (tag, conf, f, t))
    if not os.path.exists(p):
        return None
    ev = tot = None
    for line in open(p):
        if line.startswith('events:'):
            ev = line.split()[1:]
        elif line.startswith('totals:'):
            tot = [int(x) for x in line.split()[1:]]
    if ev is None or tot is None:
        return None
    c = dict(zip(ev, tot))
    crc = 0
    txt = subprocess.run(['callgrind_annotate', '--inclusive=yes', '--show=Ir', '--threshold=100',
                          '--auto=no', p], capture_output=True, text=True).stdout
    for line in txt.splitlines():
        m = re.match(r'^\s*([\d,]+)\s+\([ \d.]+%\)\s+\S*crc32c\.c:(bf_crc32c_le64_copy|bf_crc32c_le64|bf_crc32c) ', line)
        if m:
            crc += int(m.group(1).replace(',', ''))
    return (c['Ir'] / BLOCKS, (c['Ir'] - crc) / BLOCKS, (c['D1mr'] + c['D1mw']) / BLOCKS,
            (c['DLmr'] + c['DLmw']) / BLOCKS)


args = sys.argv[1:]
conf = 'none'
if args and args[0].startswith('--conf='):
    conf = args.pop(0)[len('--conf='):]
d, tags = args[0], args[1:]
print('| files | tuple | stock: instr / D1 miss / LL miss | ' +
      ' | '.join('%s %s: instr (less CRC) / D1 / LL' % (conf, t) for t in tags) + ' |')
print('|---:|---:|---|' + '---|' * len(tags))
for f in (8, 32, 256):
    for t in (40, 100, 1000):
        s = load(d, 'base', 'stock', f, t)
        if s is None:
            continue
        row = ['%d' % f, '%d' % t, '%.0f / %.0f / %.1f' % (s[0], s[2], s[3])]
        for tag in tags:
            n = load(d, tag, conf, f, t)
            row.append('%.0f (%.0f) / %.0f / %.1f' % (n[0], n[1], n[2], n[3]) if n else '-')
        print('| ' + ' | '.join(row) + ' |')

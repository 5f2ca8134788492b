#!/usr/bin/env python3
"""Parse a callgrind output (--compress-strings=no --compress-pos=no) into
self cost per (function, source file, line) of our code, with the inclusive
cost of calls into code outside the repository (libc, jemalloc) charged to
the call site. Prints JSON-ish dict lines or is imported by breakdown.py."""
import os
import sys, collections

def parse(path, ours):
    cost = collections.Counter()   # (fn, file, line) -> Ir
    calls = collections.Counter()  # (fn, file, line, callee) -> calls
    fl = fi = fn = None
    cfile = cfn = None
    pending_call = None
    is_ours = lambda p: p is not None and p.startswith(ours)
    fn_file = None
    with open(path) as f:
        for raw in f:
            line = raw.rstrip('\n')
            if not line:
                continue
            c0 = line[0]
            if c0.isdigit():
                parts = line.split()
                ln, ir = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
                if pending_call is not None:
                    callee_file, callee, ncalls = pending_call
                    pending_call = None
                    if is_ours(fn_file) and not is_ours(callee_file):
                        cost[(fn, fi, ln, 'call:' + callee)] += ir
                        calls[(fn, fi, ln, callee)] += ncalls
                    elif is_ours(fn_file):
                        calls[(fn, fi, ln, callee)] += ncalls
                    continue
                if is_ours(fn_file):
                    cost[(fn, fi, ln, None)] += ir
                continue
            if line.startswith('fl='):
                fl = fi = line[3:]
            elif line.startswith('fi=') or line.startswith('fe='):
                fi = line[3:]
            elif line.startswith('fn='):
                fn = line[3:]
                fi = fl
                fn_file = fl
            elif line.startswith('cfi=') or line.startswith('cfl='):
                cfile = line[4:]
            elif line.startswith('cfn='):
                cfn = line[4:]
            elif line.startswith('calls='):
                n = int(line[6:].split()[0])
                pending_call = (cfile if cfile is not None else fl, cfn, n)
                cfile = None
    return cost, calls

if __name__ == '__main__':
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')) + '/'
    cost, calls = parse(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else root)
    tot = sum(cost.values())
    print('total', tot)
    for k, v in cost.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 40):
        print(v, k)

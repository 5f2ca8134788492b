#!/usr/bin/env python3
"""Compare SQLite test-suite runs: stock testfixture against the same binary
with the buffile VFS as the default (integrations/sqlite/scripts/sqlite-test.sh writes the logs).

    suite_report.py RUNDIR GROUPS_FILE EXCLUDED_FILE MODE...

RUNDIR/<mode>/<test>.log is testfixture's output for one test file, and
RUNDIR/<mode>/<test>.stats the lines testfixture_init.c appended at exit
(temp_files other_files logical_written physical_written). GROUPS_FILE has
one "group test-file" pair a line; EXCLUDED_FILE "test-file reason" lines.

A test file passes when it printed its summary line ("N errors out of M
tests"); its failures are the names on its "!Failures on these tests:" line.
Every test that passes stock must pass in each other mode: a test file whose
stock run finished must finish in every mode, and its failures there must be
failures of stock too. (A mode may run fewer tests than stock: fault-injection
loops that count I/O calls of the unix VFS see fewer once temp files leave it.)
Each group must send temp files through the library in every buffile mode.
Prints a table and the verdict; exits 1 on a regression, 2 on a setup error.
"""
import os
import re
import sys

SUMMARY = re.compile(r"^(\d+) errors out of (\d+) tests")
FAILURES = re.compile(r"^!Failures on these tests:(.*)$")


def parse_log(path):
    """(finished, tests, errors, failed names) of one testfixture log."""
    finished, tests, errors, failed = False, 0, 0, set()
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = SUMMARY.match(line)
                if m:
                    finished, errors, tests = True, int(m.group(1)), int(m.group(2))
                m = FAILURES.match(line)
                if m:
                    failed.update(m.group(1).split())
    except FileNotFoundError:
        pass
    return finished, tests, errors, failed


def parse_stats(path):
    sums = [0, 0, 0, 0]
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 4:
                    sums = [a + int(b) for a, b in zip(sums, parts)]
    except FileNotFoundError:
        pass
    return sums


def ratio(temp):
    """Physical bytes written per logical byte written: what a write into part of a block costs."""
    return f"{temp[3] / temp[2]:.3f}" if temp[2] else "-"


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    rundir, groups_file, excluded_file, modes = argv[1], argv[2], argv[3], argv[4:]
    groups = {}
    order = []
    with open(groups_file) as f:
        for line in f:
            if line.strip():
                g, t = line.split()
                if g not in groups:
                    groups[g] = []
                    order.append(g)
                groups[g].append(t)
    excluded = {}
    with open(excluded_file) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, _, reason = line.strip().partition(" ")
                excluded[name] = reason.strip()
    stock = modes[0]
    regressions = []
    rows = []
    for g in order:
        row = {"group": g, "files": len(groups[g])}
        for mode in modes:
            passed = tests = files_ok = 0
            temp = [0, 0, 0, 0]
            for t in groups[g]:
                fin, n, e, _ = parse_log(os.path.join(rundir, mode, t + ".log"))
                if fin:
                    files_ok += 1
                    tests += n
                    passed += n - e
                temp = [a + b for a, b in zip(temp, parse_stats(os.path.join(rundir, mode, t + ".stats")))]
            row[mode] = (passed, tests, files_ok, temp)
        rows.append(row)
        for t in groups[g]:
            if t in excluded:
                continue
            sfin, _, _, sfail = parse_log(os.path.join(rundir, stock, t + ".log"))
            if not sfin:
                continue
            for mode in modes[1:]:
                fin, _, _, fail = parse_log(os.path.join(rundir, mode, t + ".log"))
                if not fin:
                    regressions.append((mode, t, f"{t} did not finish (stock did)"))
                elif fail - sfail:
                    regressions.append((mode, t, f"{t}: {' '.join(sorted(fail - sfail))} fail (pass on stock)"))
        for mode in modes[1:]:
            if row[mode][3][0] == 0:
                regressions.append((mode, "group " + g, f"group {g}: no temp file went through the library"))

    head = f"{'group':<10} {'files':>5}"
    for mode in modes:
        head += f" | {mode + ' passed/tests':>22}"
    for mode in modes[1:]:
        head += f" | {mode + ' temp files':>16} {'logical MB':>10} {'physical MB':>11} {'phys/log':>8}"
    print(head)
    print("-" * len(head))
    total = {m: [0, 0, 0, [0, 0, 0, 0]] for m in modes}
    for row in rows:
        line = f"{row['group']:<10} {row['files']:>5}"
        for mode in modes:
            p, n, ok, temp = row[mode]
            line += f" | {f'{p}/{n}':>22}"
            t = total[mode]
            t[0] += p
            t[1] += n
            t[2] += ok
            t[3] = [a + b for a, b in zip(t[3], temp)]
        for mode in modes[1:]:
            temp = row[mode][3]
            line += f" | {temp[0]:>16} {temp[2] / 1e6:>10.1f} {temp[3] / 1e6:>11.1f} {ratio(temp):>8}"
        print(line)
    line = f"{'all':<10} {sum(r['files'] for r in rows):>5}"
    for mode in modes:
        line += f" | {f'{total[mode][0]}/{total[mode][1]}':>22}"
    for mode in modes[1:]:
        temp = total[mode][3]
        line += f" | {temp[0]:>16} {temp[2] / 1e6:>10.1f} {temp[3] / 1e6:>11.1f} {ratio(temp):>8}"
    print(line)
    for mode in modes:
        print(f"{mode}: {total[mode][2]} of {sum(r['files'] for r in rows)} test files finished")
    for name, reason in sorted(excluded.items()):
        print(f"excluded: {name}: {reason}")
    for mode, _, msg in regressions:
        print(f"REGRESSION {mode}: {msg}")
    failed = len({(mode, what) for mode, what, _ in regressions})
    # The plain closing line CI reads: each buffile mode's test files (and groups' counts)
    # against stock.
    checked = (sum(1 for g in order for t in groups[g] if t not in excluded) + len(order)) * (len(modes) - 1)
    print(f"sqlite suite: {checked - failed} passed, {failed} failed")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

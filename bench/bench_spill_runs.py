#!/usr/bin/python3
"""bench-spill-runs: bench_spill's cells over several invocations, with intervals that hold
across invocations (the launcher is bench/bench-spill-runs, beside this file).

Why: one bench_spill invocation shuffles and pairs its rounds, so its interval is honest
about the noise between rounds, but not about what stays fixed for a whole process: two
invocations of the same binary minutes apart differed by 4-9% in none / stock, far more
than one invocation's interval (docs/results/format4.md, "Run-to-run spread"). Whatever
that effect is (where the rows and buffers land in memory, the temp directory's state,
the machine's spells), it is shared by all rounds of one invocation, so those rounds are
not independent draws of it, and an interval over them is too narrow.

What it runs: K invocations of bench_spill (--invocations) of R rounds each (--rounds) for
every cell (--files x --tuple), interleaved: invocation k of every cell, the cells in an
order shuffled per k (tpch_report.stats.shuffle), before invocation k+1 of any, so a slow
spell of the machine falls on all cells alike. bench_spill runs stock and --configs,
shuffled per round from a seed of the invocation's own (--seed=1000 + k: otherwise round r
would have the same order in every invocation, and a place's effect, such as coming first
after the warm-up, would fall on the same configuration every time), and prints every run's
phases (--times). Each invocation's output is
kept in --out as <cell>.inv<k>.txt (written whole, then renamed) with a .json beside it (the
command, when it started, how long it took); a rerun with the same --out skips the
invocations that are there (resumable), and refuses ones run with another --mib, --rounds or
--configs.

The statistics: in invocation i, round r, the log of the ratio config / stock is
  y_ir = m + u_i + e_ir,
u_i the invocation's own effect (variance s_u^2, shared by its rounds) and e_ir a round's
noise (variance s_e^2). The mean of invocation i's R logs, y_i = m + u_i + mean_r(e_ir),
has variance s_u^2 + s_e^2 / R and the K of them are independent: a Student t interval on
them (K - 1 degrees of freedom) is the interval of m that accounts for the invocation
effect, whatever its size (the one-way random-effects model with balanced rounds; it is
exactly tpch/exec/paired.c's interval, taken over the invocations' geometric mean ratios
instead of the rounds' ratios). With K = 2 it is wide (t = 12.7): 5 or more invocations
make it useful. The report also gives, per cell, the interval one would get by pooling all
rounds as if independent, and the two variance components (as shares, exp(s) - 1): when
s_u is near 0 the invocations do not matter and the two intervals agree.

Issue 46's must-show (none / stock and auto / stock at most 1.03, 1.05 at 40-byte tuples)
is judged on the across-invocation interval: MET when all of it is within the bound. The
report's last table gives each configuration's phases and its runs' user and system CPU
time (medians): on ext4 the invocation effect showed in the system time
(docs/results/format4.md, "bench_spill over invocations", which also has the command for
the 9 cells). --fresh-dir passes bench_spill's: each run in a new directory.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
_HERE = os.path.dirname(os.path.abspath(__file__))
# The statistics are paired.c's, through the TPC-H report package (tpch/report).
sys.path.insert(0, os.path.join(_HERE, "..", "tpch", "report"))

from tpch_report import stats  # noqa: E402

CONFIGS = ("stock+32", "none", "lz4", "auto", "control", "inline")
BASE = "stock"
SHUFFLE_SEED = 46  # the order of the cells in each invocation
ROUND_SEED = 1000  # bench_spill --seed of invocation k: ROUND_SEED + k


def target_bound(tuple_bytes):
    """Issue 46's bound for none / stock and auto / stock: 1.05 at 40-byte tuples, else 1.03."""
    return 1.05 if tuple_bytes <= 40 else 1.03


def parse_output(text):
    """bench_spill --times's output: {"mib", "tuple", "files", "rounds", "runs"}, runs a list
    of {"round", "place", "config", "write", "read", "close", "raw", "user", "sys"} (seconds;
    raw is the share of blocks stored raw; user and sys the run's CPU time, NaN from a
    bench_spill that did not print them). ValueError when the header or the time lines are missing or
    a round lacks stock."""
    head = None
    runs = []
    for line in text.splitlines():
        w = line.split()
        if line.startswith("bench_spill: ") and "MiB of lineitem text as" in line:
            # "bench_spill: M MiB of lineitem text as T-byte tuples into F batch files ...;
            # R rounds (shuffled), ..."
            head = {"mib": int(w[1]), "tuple": int(w[7].split("-")[0]), "files": int(w[10]),
                    "rounds": int(w[w.index("rounds") - 1])}
        elif w and w[0] == "time" and len(w) in (8, 10):
            runs.append({"round": int(w[1]), "place": int(w[2]), "config": w[3],
                         "write": float(w[4]), "read": float(w[5]), "close": float(w[6]),
                         "raw": float(w[7]), "user": float(w[8]) if len(w) == 10 else math.nan,
                         "sys": float(w[9]) if len(w) == 10 else math.nan})
    if head is None:
        raise ValueError("no bench_spill header line")
    if not runs:
        raise ValueError("no time lines (bench_spill without --times?)")
    rounds = {r["round"] for r in runs}
    if rounds != set(range(head["rounds"])):
        raise ValueError(f"rounds {sorted(rounds)} where the header says {head['rounds']}")
    for rnd in rounds:
        if not any(r["round"] == rnd and r["config"] == BASE for r in runs):
            raise ValueError(f"round {rnd} has no {BASE} run")
    head["runs"] = runs
    return head


def total(run):
    return run["write"] + run["read"] + run["close"]


def round_logs(parsed, config):
    """log(config / stock) of every round of one invocation, in round order."""
    by = {(r["round"], r["config"]): total(r) for r in parsed["runs"]}
    return [math.log(by[(rnd, config)] / by[(rnd, BASE)])
            for rnd in range(parsed["rounds"]) if (rnd, config) in by]


def _var(xs):
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def components(groups):
    """Variance components of logs grouped by invocation (one-way random effects, method of
    moments): (s_u, s_e), the standard deviations between invocations and between rounds;
    s_u = 0 when the invocations' means vary no more than their rounds predict. NaN where
    there is too little to tell (one invocation, or one round each)."""
    groups = [g for g in groups if g]
    k = len(groups)
    n = sum(len(g) for g in groups)
    if k < 1 or n - k < 1:
        return math.nan, math.nan
    means = [sum(g) / len(g) for g in groups]
    msw = sum((y - m) ** 2 for g, m in zip(groups, means) for y in g) / (n - k)
    if k < 2:
        return math.nan, math.sqrt(msw)
    grand = sum(y for g in groups for y in g) / n
    n0 = (n - sum(len(g) ** 2 for g in groups) / n) / (k - 1)  # rounds per invocation
    msb = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means)) / (k - 1)
    return math.sqrt(max(0.0, (msb - msw) / n0)), math.sqrt(msw)


def summarize(invocations, config):
    """One cell's ratio config / stock over its invocations (parsed outputs): "iv", the t
    interval over the invocations' geometric means (the honest one); "pooled", the interval
    over all rounds as if independent; "per_inv", each invocation's geometric mean;
    "s_u", "s_e", the variance components as shares (exp(s) - 1)."""
    groups = [round_logs(p, config) for p in invocations]
    groups = [g for g in groups if g]
    nan = stats.Interval(math.nan, math.nan, math.nan, 0)
    if not groups:
        return {"iv": nan, "pooled": nan, "per_inv": [], "s_u": math.nan, "s_e": math.nan}
    gms = [math.exp(sum(g) / len(g)) for g in groups]
    flat = [math.exp(y) for g in groups for y in g]
    s_u, s_e = components(groups)
    return {"iv": stats.ratio(gms, [1.0] * len(gms)),
            "pooled": stats.ratio(flat, [1.0] * len(flat)),
            "per_inv": gms, "s_u": math.expm1(s_u), "s_e": math.expm1(s_e)}


def phase_medians(invocations, config):
    """Medians over every round of every invocation of config's write, read, close, total."""
    runs = [r for p in invocations for r in p["runs"] if r["config"] == config]
    if not runs:
        return None

    def med(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    out = {k: med([r.get(k, math.nan) for r in runs])
           for k in ("write", "read", "close", "user", "sys")}
    out["total"] = med([total(r) for r in runs])
    out["raw"] = med([r["raw"] for r in runs])
    return out


def fmt_iv(iv):
    """format4.md's way: '1.097 [1.081, 1.114]', '~' when the interval holds 1.0."""
    if iv.n < 1 or math.isnan(iv.est):
        return "-"
    if iv.n < 2:
        return f"{iv.est:.3f} (one)"
    return f"{iv.est:.3f} [{iv.lo:.3f}, {iv.hi:.3f}]" + ("~" if iv.holds_one() else "")


def cell_name(files, tuple_bytes):
    return f"f{files}-t{tuple_bytes}"


def plan(cells, invocations, seed=SHUFFLE_SEED):
    """The order to run in: [(k, cell)], invocation k of every cell (in an order shuffled per
    k) before invocation k + 1 of any."""
    out = []
    for k in range(invocations):
        order = stats.shuffle(seed, k, len(cells)) if len(cells) > 1 else [0]
        out += [(k, cells[i]) for i in order]
    return out


def report(a, cells, results, walls):
    """The markdown report: results[cell] is the list of parsed invocations, walls[cell] their
    wall seconds."""
    configs = [c for c in a.configs if c != BASE]
    L = []
    P = L.append
    P(f"bench_spill over {a.invocations} invocations x {a.rounds} rounds per cell, "
      f"{a.mib} MiB, configurations {', '.join(configs)} against {BASE}"
      f"{', a new directory per run' if a.fresh_dir else ''}. Ratio: the geometric mean "
      f"over the invocations of each one's geometric mean of paired round ratios; "
      f"[95%]: a t interval over the invocations (they, not the rounds, are the "
      f"independent draws); '~': it holds 1.0.")
    P("")
    judged = [c for c in ("none", "auto") if c in configs]
    P("| files | tuple | " + " | ".join(f"{c} / {BASE}" for c in configs)
      + (" | issue 46 (" + ", ".join(judged) + ")" if judged else "") + " |")
    P("|---:|---:|" + "---|" * len(configs) + ("---|" if judged else ""))
    summ = {}
    for cell in cells:
        files, tup = cell
        invs = results.get(cell, [])
        row = [str(files), str(tup)]
        for c in configs:
            summ[(cell, c)] = summarize(invs, c)
            row.append(fmt_iv(summ[(cell, c)]["iv"]))
        if judged:
            bound = target_bound(tup)
            words = [stats.target(summ[(cell, c)]["iv"], bound) for c in judged]
            row.append(f"<= {bound:.2f}: " + ", ".join(words))
        P("| " + " | ".join(row) + " |")
    P("")
    P("Spread: each invocation's ratio; between, within: the variance components (the sd "
      "of an invocation's own effect and of a round's noise, as shares); pooled: the "
      "interval if all rounds were independent (what one invocation's table claims).")
    P("")
    P("| files | tuple | config | invocations | between | within | pooled rounds |")
    P("|---:|---:|---|---|---:|---:|---|")
    for cell in cells:
        for c in configs:
            s = summ[(cell, c)]
            P(f"| {cell[0]} | {cell[1]} | {c} | {' '.join(f'{g:.3f}' for g in s['per_inv'])} "
              f"| {_pct(s['s_u'])} | {_pct(s['s_e'])} | {fmt_iv(s['pooled'])} |")
    P("")
    P("Phases: medians over all rounds of all invocations, seconds (user, sys: the run's "
      "CPU time; raw: the share of blocks stored raw); wall: each invocation's wall time, "
      "median (total).")
    P("")
    P("| files | tuple | config | write_s | read_s | close_s | total_s | user_s | sys_s | raw "
      "| wall |")
    P("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for cell in cells:
        w = sorted(walls.get(cell, []))
        wall = f"{w[len(w) // 2]:.1f} s ({sum(w):.0f} s)" if w else "-"
        for c in [BASE] + configs:
            m = phase_medians(results.get(cell, []), c)
            if m is None:
                continue
            raw = f"{100 * m['raw']:.1f}%" if c in ("none", "lz4", "auto") else ""
            P(f"| {cell[0]} | {cell[1]} | {c} | {m['write']:.4f} | {m['read']:.4f} "
              f"| {m['close']:.4f} | {m['total']:.4f} | {_sec(m['user'])} | {_sec(m['sys'])} "
              f"| {raw} | {wall if c == BASE else ''} |")
    return "\n".join(L) + "\n"


def _sec(x):
    return "-" if math.isnan(x) else f"{x:.4f}"


def _pct(x):
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def command(a, cell, k):
    files, tup = cell
    cmd = [a.bin, f"--files={files}", f"--tuple={tup}", f"--mib={a.mib}",
           f"--rounds={a.rounds}", f"--temp-dir={a.temp_dir}", "--times",
           f"--seed={ROUND_SEED + k}",
           "--configs=" + ",".join(c for c in a.configs if c != BASE)]
    if a.fresh_dir:
        cmd.append("--fresh-dir")
    return cmd


def load(a, cell, k):
    """Invocation k of cell from --out: (parsed, wall seconds), or None when not run yet.
    SystemExit when it was run with other settings (mixing them would be wrong)."""
    base = os.path.join(a.out, f"{cell_name(*cell)}.inv{k}")
    if not (os.path.exists(base + ".txt") and os.path.exists(base + ".json")):
        return None
    with open(base + ".json", encoding="utf-8") as f:
        meta = json.load(f)
    with open(base + ".txt", encoding="utf-8") as f:
        parsed = parse_output(f.read())
    want = {"mib": a.mib, "rounds": a.rounds, "configs": sorted(a.configs),
            "fresh_dir": bool(a.fresh_dir)}
    have = {key: meta.get(key) for key in want}
    if have != want:
        raise SystemExit(f"bench-spill-runs: {base}.txt was run with {have}, not {want}: "
                         f"use another --out")
    return parsed, meta["seconds"]


def run_one(a, cell, k):
    """Run invocation k of cell, keep its output and its .json; (parsed, wall seconds)."""
    base = os.path.join(a.out, f"{cell_name(*cell)}.inv{k}")
    cmd = command(a, cell, k)
    started = time.time()
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       check=False)
    seconds = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"bench-spill-runs: {' '.join(cmd)} failed ({p.returncode}): "
                         f"{p.stderr.strip()}")
    parsed = parse_output(p.stdout)
    if (parsed["files"], parsed["tuple"]) != cell:
        raise SystemExit(f"bench-spill-runs: {' '.join(cmd)} ran another cell")
    meta = {"command": cmd, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "seconds": round(seconds, 3), "mib": a.mib, "rounds": a.rounds,
            "configs": sorted(a.configs), "fresh_dir": bool(a.fresh_dir)}
    for ext, text in ((".txt", p.stdout), (".json", json.dumps(meta, indent=1) + "\n")):
        with open(base + ext + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
    # The .json last: an invocation counts as done only when both are in place.
    os.replace(base + ".txt.tmp", base + ".txt")
    os.replace(base + ".json.tmp", base + ".json")
    return parsed, seconds


def _ints(s):
    return [int(x) for x in s.split(",") if x]


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="bench-spill-runs",
        description="bench_spill's cells over several interleaved invocations, with intervals "
                    "over the invocations (see the docstring of bench/bench_spill_runs.py).")
    ap.add_argument("--bin", default=os.path.join(_HERE, "..", "build", "bench", "bench_spill"),
                    help="bench_spill's path (default: the source tree's build/)")
    ap.add_argument("--files", type=_ints, default=[8, 32, 256], help="batch files, e.g. 8,32,256")
    ap.add_argument("--tuple", type=_ints, default=[40, 100, 1000],
                    help="tuple bytes, e.g. 40,100,1000")
    ap.add_argument("--configs", default="none,auto,control",
                    help=f"compared with {BASE}, from {','.join(CONFIGS)}")
    ap.add_argument("--invocations", type=int, default=6, help="invocations per cell (K >= 2)")
    ap.add_argument("--rounds", type=int, default=7, help="rounds per invocation (>= 2)")
    ap.add_argument("--mib", type=int, default=128, help="MiB spilled per run")
    ap.add_argument("--temp-dir", default=os.environ.get("TMPDIR") or "/tmp",
                    help="where bench_spill spills (and keeps its rows)")
    ap.add_argument("--fresh-dir", action="store_true",
                    help="bench_spill --fresh-dir: every run in a new subdirectory")
    ap.add_argument("--out", required=True,
                    help="directory of the invocations' outputs and report.md (resumable)")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: the report of what --out holds")
    a = ap.parse_args(argv)
    a.configs = [c for c in a.configs.split(",") if c]
    bad = [c for c in a.configs if c not in CONFIGS]
    if bad or not a.configs:
        ap.error(f"--configs: {','.join(bad) or 'none given'} not among {','.join(CONFIGS)}")
    if a.invocations < 2 or a.rounds < 2 or a.mib < 1 or not a.files or not a.tuple:
        ap.error("--invocations and --rounds must be >= 2, --mib >= 1, cells given")
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    os.makedirs(a.out, exist_ok=True)
    cells = [(f, t) for f in a.files for t in a.tuple]
    results = {c: [] for c in cells}
    walls = {c: [] for c in cells}
    todo = []
    for k, cell in plan(cells, a.invocations):
        got = load(a, cell, k)
        if got is None:
            todo.append((k, cell))
        else:
            results[cell].append(got[0])
            walls[cell].append(got[1])
    if todo and not a.report_only:
        print(f"bench-spill-runs: {len(todo)} invocations to run "
              f"({len(cells) * a.invocations - len(todo)} already in {a.out})", file=sys.stderr)
        t0 = time.monotonic()
        for i, (k, cell) in enumerate(todo):
            parsed, seconds = run_one(a, cell, k)
            results[cell].append(parsed)
            walls[cell].append(seconds)
            spent = time.monotonic() - t0
            left = spent / (i + 1) * (len(todo) - i - 1)
            print(f"[{i + 1}/{len(todo)}] {cell[0]} files x {cell[1]} B, invocation {k}: "
                  f"{seconds:.1f} s (elapsed {spent:.0f} s, ~{left:.0f} s left)",
                  file=sys.stderr)
    text = report(a, cells, results, walls)
    with open(os.path.join(a.out, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

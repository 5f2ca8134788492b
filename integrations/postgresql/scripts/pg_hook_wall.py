#!/usr/bin/python3
"""The wall-time measurement of pg-hook-wall.sh: BufFile-heavy queries on two running
servers, pristine PostgreSQL and the same build with the BufFile storage hook (no module
loaded, or with --method pg_buffile preloaded with that method), paired and shuffled
rounds, the ratio hook / pristine per query and for the suite with its 95% interval.
Prints a Markdown report on stdout.

A round runs each query once on both servers, the two runs of a pair one right after the
other in the order tpch_report.stats.shuffle gives for (seed, pair index), so that neither
server always goes first; each run is a fresh psql session whose \\timing of the query is
its time (connection start is not in it). A warm-up round before the first is not counted
and checks that both servers give the same answer and spill temp files. The interval code
is tpch_report.stats' (paired.c): a ratio is the geometric mean of the rounds' ratios with
a Student t interval on their logarithms; the suite's is the same over each round's
geometric mean across the queries.

With --matrix (pg-hook-wall.sh --matrix) it runs issue 46's hash-join matrix instead: one
join in cells of (D, connections), C sessions at once on a server, the rounds appended to
a results file as they run (a second invocation continues), the report made from that
file; with pg_buffile's method auto, also the share of blocks auto stored raw. With a list
of methods (--method=none,auto) each round runs the cell on pristine and once per method
on the hook's server, all in shuffled order, and the report adds the later methods' ratio
to the first's from the same rounds. See the section "the hash-join matrix" below and the
script's header.
"""

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from statistics import median

from pg_device import Device, auto_device, auto_rows, postmaster_of, summary_rows
from tpch_report import stats

# name, settings, statement: each spills through BufFiles at work_mem = 64kB (the
# queries of pg-hook-cost.sh)
QUERIES = [
    ("sort", "", "select count(*) from (select c from t1 order by c) s"),
    ("hash join", "-c enable_mergejoin=off -c enable_nestloop=off",
     "select count(*) from t1 join t2 using (a)"),
    ("hash aggregate", "-c enable_sort=off",
     "select count(*) from (select a % 100000, count(*) from t1 group by 1) s"),
    ("window", "",
     "select max(s) from (select sum(a) over (order by a rows between 10 preceding and "
     "10 following) s from t1) w"),
]
BASE = "-c work_mem=64kB -c max_parallel_workers_per_gather=0 -c jit=off"
# The targets: the unset hook's (issue 47) and none's and auto's through pg_buffile
# (issue 46); the other methods are reported without one.
TARGETS = {"": 1.01, "none": 1.03, "auto": 1.03}
# psql adds the duration as (mm:ss.fff) from one second up: "Time: 1679.123 ms (00:01.679)"
TIME = re.compile(r"^Time: ([0-9.]+) ms(?: \([0-9:.]+\))?$", re.M)


def psql(a, port, sql, opts=""):
    """Run sql in a fresh session; its output (timing lines included)."""
    env = dict(os.environ, PGOPTIONS=f"{BASE} {opts}".strip())
    r = subprocess.run([a.psql, "-X", "-q", "-A", "-t", "-h", a.sock, "-p", str(port),
                        "-d", "postgres", "-v", "ON_ERROR_STOP=1"], input=sql, env=env,
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"psql on port {port} failed: {r.stderr.strip()}")
    return r.stdout


def timed(a, port, q):
    """Seconds the query took, and its answer."""
    out = psql(a, port, f"\\timing on\n{q[2]};\n", q[1])
    m = TIME.findall(out)
    if len(m) != 1:
        sys.exit(f"no timing in psql's output on port {port}: {out!r}")
    answer = TIME.sub("", out).strip()
    return float(m[0]) / 1000.0, answer


def temp_files(a, port):
    out = psql(a, port, "select sum(temp_files) from pg_stat_database;\n")
    return int(out.strip() or 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in ("psql", "sock", "major", "command", "pristine-version"):
        p.add_argument(f"--{f}", required=True)
    p.add_argument("--method", default="", help="pg_buffile's method on the hook's server "
                   "(empty: no module loaded)")
    for f in ("pristine-port", "hook-port", "rounds", "seed", "rows"):
        p.add_argument(f"--{f}", type=int, required=True)
    a = p.parse_args()
    ports = {"pristine": a.pristine_port, "hook": a.hook_port}
    servers = ("pristine", "hook")

    # the hook's server runs the method asked for (pg_buffile loaded), or no module
    if a.method:
        shown = psql(a, ports["hook"], "show pg_buffile.method;\n").strip()
        if shown != a.method:
            sys.exit(f"the hook's server has pg_buffile.method {shown!r}, not {a.method!r}")
    # warm-up: the same answers, and every query spills on both
    spills = {}
    for q in QUERIES:
        answers = {}
        for s in servers:
            before = temp_files(a, ports[s])
            _, answers[s] = timed(a, ports[s], q)
            # (a backend reports its statistics at exit, just after psql returns)
            for _ in range(50):
                after = temp_files(a, ports[s])
                if after > before:
                    break
                subprocess.run(["sleep", "0.1"], check=True)
            spills[(q[0], s)] = after - before
            if after <= before:
                sys.exit(f"{q[0]} wrote no temp file on {s}: it measures no BufFile")
        if answers["pristine"] != answers["hook"]:
            sys.exit(f"{q[0]}: pristine answers {answers['pristine']!r}, hook {answers['hook']!r}")

    times = {}
    pair = 0
    for r in range(a.rounds):
        for q in QUERIES:
            order = stats.shuffle(a.seed, pair, 2)
            pair += 1
            for k in order:
                s = servers[k]
                times[(r, q[0], s)], _ = timed(a, ports[s], q)

    names = [q[0] for q in QUERIES]
    target = TARGETS.get(a.method)
    P = print
    if a.method:
        P(f"# pg_buffile with method {a.method}, in wall time: PostgreSQL {a.major}, "
          "pristine against the hook with pg_buffile (generated by pg-hook-wall.sh)")
        loaded = (f"the hook's server preloads pg_buffile with pg_buffile.method = "
                  f"{a.method}, pristine's loads nothing")
        goal = (f"Target (issue 46): at most {target}; MET here means the interval's upper "
                f"end is at most {target}." if target else
                "No target for this method: the figures are reported.")
    else:
        P(f"# The BufFile storage hook unset, in wall time: PostgreSQL {a.major}, pristine "
          "against the hook (generated by pg-hook-wall.sh)")
        loaded = "no module loaded"
        goal = (f"Target (issue 47): the interval holds 1 or lies below {target}; MET here "
                f"means its upper end is at most {target}, and an interval that holds 1 but "
                "reaches higher is shown as such.")
    P()
    P(f"Command: `{a.command}`")
    P()
    P(f"{a.pristine_version}; both builds without assertions, differing only by buffile.o "
      f"(pg-hook-pristine.sh); {loaded}. Two servers side by side on copies of one "
      f"cluster: t1 and t2 of {a.rows} rows; work_mem 64kB, no parallel workers, no JIT. "
      f"{a.rounds} rounds after a warm-up, each query's pair in shuffled order (seed "
      f"{a.seed}). Ratio: hook / pristine, the geometric mean of the rounds' ratios, 95% "
      f"interval (Student t on their logarithms, tpch_report.stats). {goal}")
    P()
    P("| query | temp files a run | pristine median (s) | hook median (s) "
      "| hook / pristine (95%) | target |")
    P("|---|---:|---:|---:|---|---|")

    def median(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    def passes(iv):
        """MET only when the whole interval is at most TARGET; an interval that holds 1
        but reaches above TARGET says so, rather than pass for a bound it did not show."""
        if target is None:
            return "(none)"
        word = stats.target_text(iv, target)
        if iv.n >= 2 and iv.hi > target and iv.holds_one():
            return f"holds 1, up to {iv.hi:.3f}: {word}"
        return word

    for n in names:
        pt = [times[(r, n, "pristine")] for r in range(a.rounds)]
        ht = [times[(r, n, "hook")] for r in range(a.rounds)]
        iv = stats.ratio(ht, pt)
        P(f"| {n} | {spills[(n, 'pristine')]} | {median(pt):.3f} | {median(ht):.3f} | "
          f"{stats.fmt_ratio(iv, digits=3)} | {passes(iv)} |")
    iv = stats.suite_interval(times, names, "hook", "pristine")
    P(f"| suite (geometric mean) | | | | {stats.fmt_ratio(iv, digits=3)} | {passes(iv)} |")
    P()
    P("Raw times (s), round by round, pristine/hook:")
    P()
    for r in range(a.rounds):
        P(f"- round {r + 1}: " + "; ".join(
            f"{n} {times[(r, n, 'pristine')]:.3f}/{times[(r, n, 'hook')]:.3f}" for n in names))


# --- the hash-join matrix (pg-hook-wall.sh --matrix) ---------------------------------
# Issue 46's matrix: the hash join of the retired pg-bench-hashmatrix.sh (ae3c57d^) at
# one row count, D = duplicates of each key on the probe side (what makes half the spill
# compressible), C concurrent connections, each cell paired and shuffled between the two
# servers as above. Every pair (a cell's round: C sessions on one server, then C on the
# other) is one JSON line appended to the results file as soon as it ran, so that a
# second invocation continues where the first stopped; the report is made from that file.
# Invariant: a line is written only for a complete pair, so a round is either wholly in
# the file or not at all.
#
# With several methods (--method=none,auto) a round is pristine's run and one hook run per
# method, all in an order shuffled per round (paired.c's shuffle over all of them), the
# method set per session (PGOPTIONS -c pg_buffile.method=M) on the one hook server; the
# line keeps each hook run under "hook:M" (hook_labels), the cell's "method" is the list
# as given, so such lines never mix with one method's, whose lines keep "hook" as before.

# the target of the hook's raw share of blocks under auto with every core busy (issue 46)
RAW_TARGET = 0.99
# pg_buffile's line under log_temp_files when a space that used auto goes (pg_buffile.c)
AUTO_LINE = re.compile(r"temporary file compression auto: blocks written none (\d+), "
                       r"lz4 (\d+), zstd (\d+), gzip (\d+)")
CODECS = ("none", "lz4", "zstd", "gzip")


def parse_count(s):
    """10M -> 10000000, 200k -> 200000, 2500 -> 2500 (as pg-hook-wall.sh takes --rows)."""
    mult = {"k": 10**3, "M": 10**6}.get(s[-1:], 1)
    return int(s[:-1] if mult > 1 else s) * mult


def count_label(n):
    return (f"{n // 10**6}M" if n % 10**6 == 0 else
            f"{n // 10**3}k" if n % 10**3 == 0 else str(n))


def auto_blocks(text):
    """The blocks auto wrote per codec in a stretch of the hook's log, and the number of
    auto's lines in it (one per space that used auto: at least one per session)."""
    blocks = dict.fromkeys(CODECS, 0)
    n = 0
    for m in AUTO_LINE.finditer(text):
        n += 1
        for c, v in zip(CODECS, m.groups()):
            blocks[c] += int(v)
    return blocks, n


def methods_of(method):
    """--method's list: [] for no module, ["auto"], ["none", "auto"]."""
    return [m for m in method.split(",") if m] if method else []


def hook_labels(method):
    """(key in a results line, pg_buffile's method) of each hook run of a round: one method
    (or none loaded) is "hook" as it always was, a list one "hook:M" per method."""
    ms = methods_of(method)
    if len(ms) <= 1:
        return [("hook", method)]
    return [(f"hook:{m}", m) for m in ms]


def round_plan(method, seed, rnd):
    """A round's runs in the order they go: (key in the results line, pg_buffile's method
    set in the session or None), pristine's and each of hook_labels', shuffled by
    paired.c's pd_shuffle for (seed, rnd); one method gives the pair of old."""
    runs = [("pristine", None)] + hook_labels(method)
    return [runs[i] for i in stats.shuffle(seed, rnd, len(runs))]


def cell_key(c):
    """What makes two lines of the results file the same cell (the device: pg-device.sh's
    spec, page for the lines written before --device)."""
    return (c["rows"], c["d"], c["conns"], bool(c["burner"]), c["method"], c["work_mem"],
            c.get("device", "page"))


def cell_title(c):
    dev = c.get("device", "page")
    return (f"{count_label(c['rows'])} rows, D = {c['d']}, {c['conns']} connection"
            f"{'s' if c['conns'] > 1 else ''}{', CPU burner' if c['burner'] else ''}"
            f"{'' if dev == 'page' else ', ' + dev}")


def is_pair(r):
    """A line of the matrix's results: a cell's round."""
    return "cell" in r and "round" in r


def load_results(path, keep=is_pair):
    """The results file's lines that keep takes (the matrix's pairs by default); a last line
    cut short (a run killed while writing it) is left out, as is any line keep refuses
    (pg_hook_tpch.py keeps its own)."""
    out = []
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        return out
    with f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and keep(r):
                out.append(r)
    return out


def cell_pairs(records, cell, rounds):
    """The pairs of the cell for rounds 0 .. rounds-1, the first of each round (a round
    run twice, by two invocations racing, counts once)."""
    k = cell_key(cell)
    got = {}
    for r in records:
        if cell_key(r["cell"]) == k and 0 <= r["round"] < rounds and r["round"] not in got:
            got[r["round"]] = r
    return [got[i] for i in sorted(got)]


def raw_text(frac, bound=RAW_TARGET):
    """The raw share of auto's blocks against 'at least bound': a count, not a sample, so
    MET or MISSED (not run without a block)."""
    if frac is None:
        return stats.NOT_RUN
    return stats.MET if frac >= bound else stats.MISSED


def summarize(pairs, method, label="hook"):
    """A cell's figures from its pairs: medians, the hook / pristine interval and its word
    against the method's target, and with auto the blocks stored raw; label: which hook run
    of the pairs (hook_labels) is method's."""
    pt = [p["pristine"]["s"] for p in pairs]
    ht = [p[label]["s"] for p in pairs]
    e = {"rounds": len(pairs), "same_answers": all(p.get("same_answer") for p in pairs)}
    if not pairs:
        e["iv"] = stats.Interval(math.nan, math.nan, math.nan, 0)
        e["word"] = stats.NOT_RUN
        return e
    e["pristine_median"], e["hook_median"] = median(pt), median(ht)
    e["iv"] = stats.ratio(ht, pt)
    target = TARGETS.get(method)
    e["word"] = stats.target_text(e["iv"], target) if target else "(none)"
    if method == "auto":
        blocks = dict.fromkeys(CODECS, 0)
        shares = []
        logical = stored = 0
        for p in pairs:
            raw = p[label].get("raw") or {}
            b = raw.get("blocks") or {}
            for c in CODECS:
                blocks[c] += int(b.get(c, 0))
            total = sum(int(b.get(c, 0)) for c in CODECS)
            if total:
                shares.append(int(b.get("none", 0)) / total)
            s = (raw.get("stats") or {}).get("auto") or [0, 0, 0]
            logical += s[1]
            stored += s[2]
        total = sum(blocks.values())
        e["blocks"] = blocks
        e["raw_share"] = blocks["none"] / total if total else None
        e["raw_min"] = min(shares) if shares else None
        e["stored_per_logical"] = stored / logical if logical else None
    return e


def matrix_cells(rows, ds, conns, burner, method, work_mem, device="page"):
    """The cells in the order they run: connections, then D (as the retired script); a
    device other than the page cache is part of the cell (page cells keep their old form)."""
    cells = [{"rows": rows, "d": d, "conns": c, "burner": burner, "method": method,
              "work_mem": work_mem} for c in conns for d in ds]
    if device != "page":
        for c in cells:
            c["device"] = device
    return cells


# issue 46 on slowfs: auto within 5% of the best fixed codec in every cell by its point
# estimate, and no cell resolved above that
BEST_TARGET = 1.05


def best_fixed(pairs, labels):
    """auto / the best fixed method of a cell (the one whose rounds' median is lowest),
    from the same rounds: (method, interval, word), or None without auto and another."""
    fixed = [(lab, m) for lab, m in labels if m != "auto"]
    if "hook:auto" not in [lab for lab, _ in labels] or not fixed or not pairs:
        return None
    lab, m = min(fixed, key=lambda x: median([p[x[0]]["s"] for p in pairs]))
    iv = stats.ratio([p["hook:auto"]["s"] for p in pairs], [p[lab]["s"] for p in pairs])
    word = stats.MISSED if iv.est > BEST_TARGET or (iv.n >= 2 and iv.lo > BEST_TARGET) \
        else stats.MET
    return m, iv, word


def _burner_text(a):
    """How the runs were loaded, for a report's description."""
    return ("with a CPU burner on every core during the runs" if a.burner
            else "without a CPU burner")


def matrix_report(a, cells, records):
    """The Markdown report: a summary line per cell, then a table per cell."""
    if len(methods_of(a.method)) > 1:
        return _methods_report(a, cells, records)
    lines = []
    P = lines.append
    m = a.method or "(no module)"
    target = TARGETS.get(a.method)
    P(f"# The hash-join matrix, pg_buffile with method {m}: PostgreSQL {a.major}, pristine "
      "against the hook (generated by pg-hook-wall.sh --matrix)")
    P("")
    P(f"Command: `{a.command}`")
    P("")
    P(f"Temp files on {_device(a).title()}.")
    P("")
    burner = _burner_text(a)
    hook = (f"pg_buffile preloaded, pg_buffile.method = {a.method}" if a.method
            else "no module loaded")
    P(f"{a.pristine_version}; two servers side by side on copies of one cluster (pristine, "
      f"and the hook's with {hook}). "
      f"The join `select count(*), max(t.p), max(u.p) from hm_t_D t join hm_u u on "
      f"t.k = u.k` of {a.rows} rows a side, D copies of each key in a row on hm_t_D's "
      f"side; work_mem {a.work_mem}, hash join only, no parallel workers, no JIT; C "
      f"sessions at once on a server, a run's time the longest session's \\timing; "
      f"{a.rounds} round{'s' if a.rounds > 1 else ''} a cell after a warm-up, the two "
      f"servers' runs of a round in shuffled order (seed {a.seed}); {burner}. Ratio: hook / pristine, the geometric "
      f"mean of the rounds' ratios with its 95% interval (Student t on their logarithms, "
      f"tpch_report.stats). " +
      (f"Target (issue 46): at most {target}; MET means the interval's upper end is at "
       f"most {target}, MISSED that its lower end is above, not resolved otherwise."
       if target else "No target for this method: the figures are reported."))
    if a.method == "auto":
        P("")
        P(f"Blocks stored raw (auto): the blocks auto wrote with codec none over all it "
          f"wrote, summed from pg_buffile's log line of each space that used auto "
          f"(\"temporary file compression auto: blocks written none N, lz4 N, zstd N, "
          f"gzip N\", log_temp_files = 0) in the hook's log between the start and the end "
          f"of the run; pg_buffile_stats (reset before each hook run, read after) counts "
          f"bytes, not blocks, and gives the cross-check: row method = 'auto', "
          f"stored_bytes / logical_bytes (about 1 when nearly every block is raw). "
          + (f"Target (issue 46, with the burner): at least {RAW_TARGET} of the blocks raw."
             if a.burner else "No target without the burner: reported."))
    P("")
    summ = [(c, summarize(cell_pairs(records, c, a.rounds), a.method)) for c in cells]
    trees = sorted({p.get("tree", "unknown") for c in cells
                    for p in cell_pairs(records, c, a.rounds)})
    if len(trees) > 1:
        P("")
        P(f"**The rounds come from {len(trees)} trees ({', '.join(trees)}): the results "
          "file mixes builds.**")
    head = "| cell | rounds | hook / pristine (95%) | target |"
    rule = "|---|---:|---|---|"
    if a.method == "auto":
        head += " blocks raw | target (raw) |"
        rule += "---:|---|"
    P(head)
    P(rule)
    for c, e in summ:
        row = (f"| {cell_title(c)} | {e['rounds']} | {stats.fmt_ratio(e['iv'], digits=3)} "
               f"| {e['word']} |")
        if a.method == "auto":
            row += f" {_share(e.get('raw_share'))} | {_raw_word(a, e)} |"
        P(row)
    words = [e["word"] for _, e in summ] if target else []
    if a.method == "auto" and a.burner:
        words += [_raw_word(a, e) for _, e in summ]
    if words:
        P("")
        P(f"The matrix as a whole: {stats.overall(words)} "
          f"({sum(1 for w in words if w == stats.MET)} of {len(words)} targets met).")
    for c, e in summ:
        P("")
        P(f"## {cell_title(c)}")
        P("")
        if not e["rounds"]:
            P("Not run yet.")
            continue
        P("| measure | pristine | hook | hook / pristine (95%) | target |")
        P("|---|---:|---:|---|---|")
        P(f"| time of a run, median (s) | {e['pristine_median']:.3f} | {e['hook_median']:.3f} "
          f"| {stats.fmt_ratio(e['iv'], digits=3)} | {e['word']} |")
        if a.method == "auto":
            b = e["blocks"]
            P(f"| blocks auto wrote: none / lz4 / zstd / gzip | | {b['none']} / {b['lz4']} / "
              f"{b['zstd']} / {b['gzip']} | | |")
            P(f"| blocks stored raw (lowest round) | | {_share(e['raw_share'])} "
              f"({_share(e['raw_min'])}) | | {_raw_word(a, e)} |")
            spl = e["stored_per_logical"]
            P(f"| pg_buffile_stats, auto: stored_bytes / logical_bytes | | "
              f"{'-' if spl is None else f'{spl:.4f}'} | | |")
        if not e["same_answers"]:
            P("")
            P("**The two servers' answers DIFFER in some round.**")
        P("")
        P("Times (s) round by round, pristine/hook: " + "; ".join(
            f"{p['pristine']['s']:.3f}/{p['hook']['s']:.3f}"
            for p in cell_pairs(records, c, a.rounds)))
    lines += _device_lines(a, cells, records, hook_labels(a.method))
    return "\n".join(lines) + "\n"


def _methods_report(a, cells, records):
    """matrix_report with several methods: per cell each method / pristine against its
    target and each later method / the first (the same rounds' paired ratio), auto's raw
    share from auto's runs only."""
    lines = []
    P = lines.append
    labels = hook_labels(a.method)
    first = labels[0]
    later = labels[1:]
    has_auto = any(m == "auto" for _, m in labels)
    P(f"# The hash-join matrix, pg_buffile with methods {', '.join(m for _, m in labels)} in "
      f"the same rounds: PostgreSQL {a.major}, pristine against the hook (generated by "
      "pg-hook-wall.sh --matrix)")
    P("")
    P(f"Command: `{a.command}`")
    P("")
    P(f"Temp files on {_device(a).title()}.")
    P("")
    burner = _burner_text(a)
    targets = "; ".join(f"{m} at most {TARGETS[m]}" for _, m in labels if m in TARGETS)
    P(f"{a.pristine_version}; two servers side by side on copies of one cluster (pristine, "
      f"and the hook's with pg_buffile preloaded, pg_buffile.method = {first[1]} by default "
      f"and set per session for each method's runs). "
      f"The join `select count(*), max(t.p), max(u.p) from hm_t_D t join hm_u u on "
      f"t.k = u.k` of {a.rows} rows a side, D copies of each key in a row on hm_t_D's "
      f"side; work_mem {a.work_mem}, hash join only, no parallel workers, no JIT; C "
      f"sessions at once on a server, a run's time the longest session's \\timing; "
      f"{a.rounds} round{'s' if a.rounds > 1 else ''} a cell after a warm-up, a round "
      f"being pristine's run and one hook run per method, all {1 + len(labels)} in an order "
      f"shuffled per round (seed {a.seed}); {burner}. Ratios: the geometric mean of the "
      f"rounds' paired ratios with its 95% interval (Student t on their logarithms, "
      f"tpch_report.stats); a method / pristine against its target (issue 46: "
      f"{targets or 'none'}; MET means the interval's upper end is at most the target, "
      f"MISSED that its lower end is above, not resolved otherwise), and "
      + ", ".join(f"{m} / {first[1]}" for _, m in later)
      + ": the difference between the methods, pristine's share of the noise left out "
      "(no target).")
    if has_auto:
        P("")
        P("Blocks stored raw (auto): from auto's runs only, as with one method: pg_buffile's "
          "log line of each space that used auto in the hook's log between the start and "
          "the end of the run, and pg_buffile_stats (reset before each auto run) as the "
          "cross-check in bytes. "
          + (f"Target (issue 46, with the burner): at least {RAW_TARGET} of the blocks raw."
             if a.burner else "No target without the burner: reported."))
    P("")
    summ = []
    for c in cells:
        pairs = cell_pairs(records, c, a.rounds)
        es = {lab: summarize(pairs, m, lab) for lab, m in labels}
        vs = {}
        for lab, _ in later:
            vs[lab] = (stats.ratio([p[lab]["s"] for p in pairs],
                                   [p[first[0]]["s"] for p in pairs]) if pairs else
                       stats.Interval(math.nan, math.nan, math.nan, 0))
        summ.append((c, pairs, es, vs))
    trees = sorted({p.get("tree", "unknown") for _, pairs, _, _ in summ for p in pairs})
    if len(trees) > 1:
        P("")
        P(f"**The rounds come from {len(trees)} trees ({', '.join(trees)}): the results "
          "file mixes builds.**")
    head = "| cell | rounds |"
    rule = "|---|---:|"
    for _, m in labels:
        head += f" {m} / pristine (95%) | target |"
        rule += "---|---|"
    for _, m in later:
        head += f" {m} / {first[1]} (95%) |"
        rule += "---|"
    if has_auto:
        head += " blocks raw | target (raw) |"
        rule += "---:|---|"
    # off the page cache: auto against the best fixed method of the cell (issue 46 on slowfs)
    best = has_auto and len(labels) > 1 and _device(a).kind != "page"
    if best:
        head += f" auto / best fixed (estimate at most {BEST_TARGET}) | target (best) |"
        rule += "---|---|"
    P(head)
    P(rule)
    words = []
    for c, pairs, es, vs in summ:
        row = f"| {cell_title(c)} | {len(pairs)} |"
        for lab, m in labels:
            e = es[lab]
            row += f" {stats.fmt_ratio(e['iv'], digits=3)} | {e['word']} |"
            if m in TARGETS:
                words.append(e["word"])
        for lab, _ in later:
            row += f" {stats.fmt_ratio(vs[lab], digits=3)} |"
        if has_auto:
            e = es["hook:auto"]
            row += f" {_share(e.get('raw_share'))} | {_raw_word(a, e)} |"
            if a.burner:
                words.append(_raw_word(a, e))
        if best:
            b = best_fixed(pairs, labels)
            if b is None:
                row += " - | not run |"
            else:
                row += f" / {b[0]}: {stats.fmt_ratio(b[1], digits=3)} | {b[2]} |"
                words.append(b[2])
        P(row)
    if words:
        P("")
        P(f"The matrix as a whole: {stats.overall(words)} "
          f"({sum(1 for w in words if w == stats.MET)} of {len(words)} targets met).")
    for c, pairs, es, vs in summ:
        P("")
        P(f"## {cell_title(c)}")
        P("")
        if not pairs:
            P("Not run yet.")
            continue
        P("| measure | time of a run, median (s) | ratio (95%) | target |")
        P("|---|---:|---|---|")
        P(f"| pristine | {median([p['pristine']['s'] for p in pairs]):.3f} | | |")
        for lab, m in labels:
            e = es[lab]
            P(f"| {m} / pristine | {e['hook_median']:.3f} | "
              f"{stats.fmt_ratio(e['iv'], digits=3)} | {e['word']} |")
        for lab, m in later:
            P(f"| {m} / {first[1]} | | {stats.fmt_ratio(vs[lab], digits=3)} | (none) |")
        if has_auto:
            e = es["hook:auto"]
            b = e["blocks"]
            P(f"| blocks auto wrote: none / lz4 / zstd / gzip | {b['none']} / {b['lz4']} / "
              f"{b['zstd']} / {b['gzip']} | | |")
            P(f"| blocks stored raw (lowest round) | {_share(e['raw_share'])} "
              f"({_share(e['raw_min'])}) | | {_raw_word(a, e)} |")
            spl = e["stored_per_logical"]
            P(f"| pg_buffile_stats, auto: stored_bytes / logical_bytes | "
              f"{'-' if spl is None else f'{spl:.4f}'} | | |")
        if not all(p.get("same_answer") for p in pairs):
            P("")
            P("**The servers' answers DIFFER in some round.**")
        P("")
        P(f"Times (s) round by round, pristine/{'/'.join(m for _, m in labels)} (run order "
          "in brackets): " + "; ".join(
              "/".join(f"{p[k]['s']:.3f}" for k in ["pristine"] + [lab for lab, _ in labels])
              + f" ({', '.join(o.split(':')[-1] for o in p.get('order', []))})"
              for p in pairs))
    lines += _device_lines(a, cells, records, labels)
    return "\n".join(lines) + "\n"


def _device(a):
    return Device.load(getattr(a, "device", "page"), getattr(a, "device_info", ""))


def _device_lines(a, cells, records, labels):
    """The report's section on the device: what each server's runs made it see (medians
    over every cell's rounds), and auto's own figures of it."""
    dev = _device(a)
    per = {"pristine": []}
    per.update({m or "hook": [] for _, m in labels})
    autos = []
    for c in cells:
        for p in cell_pairs(records, c, a.rounds):
            per["pristine"].append(p["pristine"].get("device", {}))
            for lab, m in labels:
                per[m or "hook"].append(p[lab].get("device", {}))
                if (m or a.method) == "auto":
                    autos.append(p[lab].get("auto_device", {}))
    out = ["", f"## The device: {dev.name}", "",
           "Per run (a cell's C sessions), the medians over the cells' rounds: what the "
           "server's processes read from storage and wrote to it below the page cache (the "
           "postmaster's /proc/PID/io once the run's backends are reaped: read_bytes, and "
           "write_bytes less cancelled_write_bytes)"
           + (", what slowfs served, the time its model held requests and its daemon's CPU"
              if dev.kind == "slowfs" else "")
           + (", the cgroup's limit hits, its peak and the machine's disk (diskstats)"
              if dev.kind == "cgroup" else "") + ":", ""]
    out += summary_rows(dev, per)
    if autos:
        out += ["", auto_rows(autos)]
    return out


def _share(x):
    return "-" if x is None else f"{x:.4f}"


def _raw_word(a, e):
    if not a.burner:
        return "(none)"
    return raw_text(e.get("raw_share"))


# A burner process: spins, and every ~10 million turns (a fraction of a second) checks
# that the process that started it is still its parent (its pid passed as an argument: one
# the child read itself would be init's if the runner had died first), so that it cannot
# outlive a runner that was killed (SIGKILL, or SIGTERM before the handler below is set):
# one stopped with pkill once left two spinning at nice -10 under every later measurement.
BURNER = ("import os, sys\np = int(sys.argv[1])\nwhile os.getppid() == p:\n"
          "    for _ in range(10000000):\n        pass\n")


def start_burners(n):
    """n spinning processes; SIGTERM of this process then raises SystemExit, so that the
    finally that stops them runs (the default action would kill it without)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return [subprocess.Popen([sys.executable, "-c", BURNER, str(os.getpid())],
                             stdin=subprocess.DEVNULL) for _ in range(n)]


class Matrix:
    """The runs: sessions on the two servers, the burner, the results file."""

    def __init__(self, a):
        self.a = a
        self.ports = {"pristine": a.pristine_port, "hook": a.hook_port}
        self.burners = []
        self.dev = _device(a)
        self.data = {"pristine": getattr(a, "pristine_data", ""),
                     "hook": getattr(a, "hook_data", "")}

    @staticmethod
    def quiet(pm):
        """Wait until the postmaster's backends of the last run are reaped (pg_hook_tpch's
        wait: its import here would be circular at load time)."""
        from pg_hook_tpch import wait_quiet  # pylint: disable=import-outside-toplevel
        wait_quiet(pm)

    def opts(self):
        return (f"-c work_mem={self.a.work_mem} -c enable_mergejoin=off "
                "-c enable_nestloop=off")

    @staticmethod
    def query(cell):
        return (f"select count(*), max(t.p), max(u.p) from hm_t_{cell['d']} t "
                "join hm_u u on t.k = u.k")

    def sessions(self, server, cell, method=None):
        """Run the cell's join in C sessions at once on a server: the longest session's
        time, every session's, and their answer (None if they differ). method: pg_buffile's
        method set in each session (several methods in a round), None to leave the
        server's."""
        a = self.a
        env = dict(os.environ, PGOPTIONS=f"{BASE} {self.opts()}{self.method_opt(method)}")
        sql = f"\\timing on\n{self.query(cell)};\n"
        procs = [subprocess.Popen([a.psql, "-X", "-q", "-A", "-t", "-h", a.sock, "-p",
                                   str(self.port(server)), "-d", "postgres", "-v",
                                   "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  text=True) for _ in range(cell["conns"])]
        for p in procs:
            p.stdin.write(sql)
            p.stdin.close()
        secs, answers = [], set()
        for p in procs:
            out, err = p.stdout.read(), p.stderr.read()
            if p.wait() != 0:
                sys.exit(f"psql on {server} failed: {err.strip()}")
            m = TIME.findall(out)
            if len(m) != 1:
                sys.exit(f"no timing in psql's output on {server}: {out!r}")
            secs.append(float(m[0]) / 1000.0)
            answers.add(TIME.sub("", out).strip())
        return max(secs), secs, (answers.pop() if len(answers) == 1 else None)

    def port(self, label):
        """pristine's port, or the hook's for any of its runs ("hook", "hook:M")."""
        return self.ports["pristine" if label == "pristine" else "hook"]

    @staticmethod
    def method_opt(method):
        return f" -c pg_buffile.method={method}" if method else ""

    def hook_stats(self):
        out = psql(self.a, self.ports["hook"], "select method, sum(files), sum(logical_bytes), "
                   "sum(stored_bytes) from pg_buffile_stats group by method;\n")
        res = {}
        for line in out.splitlines():
            f = line.split("|")
            if len(f) == 4:
                res[f[0]] = [int(x or 0) for x in f[1:]]
        return res

    def run(self, server, cell, method=None):
        """One run of a cell (server: a key of round_plan, method: the one set in the
        session or None); with auto on the hook, what auto stored. Runs go one at a time,
        so the hook log's auto lines between this run's start and its end (waited for) are
        this run's: a run of another method writes none."""
        auto = server != "pristine" and (method or self.a.method) == "auto"
        if auto:
            psql(self.a, self.ports["hook"], "select pg_buffile_stats_reset();\n")
            start = os.path.getsize(self.a.hook_log)
        data = self.data["pristine" if server == "pristine" else "hook"]
        pm = postmaster_of(data) if data else None
        if pm:
            self.quiet(pm)
            d0 = self.dev.snapshot(pm, self.port(server), data)
        t, secs, answer = self.sessions(server, cell, method)
        res = {"s": t, "sessions": secs}
        if pm:
            # the sessions' backends reaped: their I/O is in the postmaster's
            self.quiet(pm)
            res["device"] = self.dev.figures(d0, self.dev.snapshot(pm, self.port(server), data))
        if auto:
            # a space logs when it goes, at the end of its transaction or at exit, which
            # may come just after psql returns: wait for a line per session
            for _ in range(100):
                with open(self.a.hook_log, "rb") as f:
                    f.seek(start)
                    blocks, n = auto_blocks(f.read().decode("utf-8", "replace"))
                if n >= cell["conns"]:
                    break
                time.sleep(0.05)
            res["raw"] = {"blocks": blocks, "lines": n, "stats": self.hook_stats()}
            with open(self.a.hook_log, "rb") as f:
                f.seek(start)
                res["auto_device"] = auto_device(f.read().decode("utf-8", "replace"))
        return res, answer

    def burner_start(self):
        if not self.a.burner or self.burners:
            return
        self.burners = start_burners(os.cpu_count() or 1)

    def burner_stop(self):
        for p in self.burners:
            p.terminate()
        for p in self.burners:
            p.wait()
        self.burners = []

    def warm(self, cell):
        """A run on each server (each method's with several), not counted: the same
        answer, and the join spills."""
        answers = {}
        for s, m in [("pristine", None)] + self.methods():
            before = temp_files(self.a, self.port(s))
            _, _, answers[s] = self.sessions(s, cell, m)
            for _ in range(50):
                after = temp_files(self.a, self.port(s))
                if after > before:
                    break
                time.sleep(0.1)
            if after <= before:
                sys.exit(f"{cell_title(cell)}: the join wrote no temp file on {s}")
        if answers["pristine"] is None or len(set(answers.values())) != 1:
            sys.exit(f"{cell_title(cell)}: the answers differ: {answers!r}")

    def methods(self):
        """The hook's runs of a round: (key, the method set per session or None)."""
        labels = hook_labels(self.a.method)
        return [(k, m if len(labels) > 1 else None) for k, m in labels]

    def run_cell(self, cell, records, k, n):
        a = self.a
        done = {p["round"] for p in cell_pairs(records, cell, a.rounds)}
        todo = [r for r in range(a.rounds) if r not in done]
        tag = f"[{k}/{n} {cell_title(cell)}]"
        if not todo:
            print(f"{tag} all {a.rounds} rounds in the results file", file=sys.stderr,
                  flush=True)
            return
        t0 = time.monotonic()
        self.warm(cell)
        print(f"{tag} warm-up: {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
        seed = a.seed + (zlib.crc32(json.dumps(cell_key(cell)).encode()) & 0xffff)
        for r in todo:
            t1 = time.monotonic()
            sess = dict(self.methods())
            plan = [(k, sess.get(k)) for k, _ in round_plan(a.method, seed, r)]
            rec = {"cell": cell, "round": r, "order": [k for k, _ in plan], "tree": a.tree}
            answers = {}
            for s, meth in plan:
                rec[s], answers[s] = self.run(s, cell, meth)
            rec["same_answer"] = answers["pristine"] is not None and \
                len(set(answers.values())) == 1
            with open(a.results, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec, sort_keys=True) + "\n")
            records.append(rec)
            extra = ""
            for k, _ in hook_labels(a.method):
                raw = rec[k].get("raw")
                if raw:
                    tot = sum(raw["blocks"].values())
                    extra = f", raw {raw['blocks']['none'] / tot:.4f}" if tot else ", no block"
            hooks = ", ".join(f"{k} {rec[k]['s']:.3f} s" for k, _ in hook_labels(a.method))
            print(f"{tag} round {r + 1}/{a.rounds}: pristine {rec['pristine']['s']:.3f} s, "
                  f"{hooks}{extra}"
                  f"{'' if rec['same_answer'] else ', ANSWERS DIFFER'} "
                  f"({time.monotonic() - t1:.1f} s)", file=sys.stderr, flush=True)
        print(f"{tag} warm-up and {len(todo)} round{'s' if len(todo) > 1 else ''}: "
              f"{time.monotonic() - t0:.1f} s", file=sys.stderr,
              flush=True)


def matrix_main(argv=None):
    p = argparse.ArgumentParser(description="pg-hook-wall.sh's hash-join matrix")
    p.add_argument("--matrix", action="store_true")
    for f in ("psql", "sock", "major", "command", "pristine-version", "results", "hook-log",
              "work-mem"):
        p.add_argument(f"--{f}", required=True)
    p.add_argument("--method", default="")
    p.add_argument("--burner", action="store_true")
    p.add_argument("--tree", default="unknown", help="the tree's commit, kept in each line")
    p.add_argument("--device", default="page", help="pg-device.sh's spec")
    p.add_argument("--device-info", default="", help="pg-device.sh's device.json")
    p.add_argument("--pristine-data", default="", help="pristine's data directory")
    p.add_argument("--hook-data", default="", help="the hook's data directory")
    p.add_argument("--conns", required=True)
    p.add_argument("--d", required=True)
    for f in ("pristine-port", "hook-port", "rounds", "seed", "rows"):
        p.add_argument(f"--{f}", type=int, required=True)
    a = p.parse_args(argv)
    cells = matrix_cells(a.rows, [int(x) for x in a.d.split(",")],
                         [int(x) for x in a.conns.split(",")], a.burner, a.method, a.work_mem,
                         a.device)
    records = load_results(a.results)
    m = Matrix(a)
    # the hook's server preloads pg_buffile with the (first) method; with several, each is
    # set per session: check that a session takes it
    for _, meth in m.methods() if a.method else []:
        want = meth or methods_of(a.method)[0]
        shown = psql(a, m.ports["hook"], "show pg_buffile.method;\n",
                     Matrix.method_opt(meth).strip()).strip()
        if shown != want:
            sys.exit(f"the hook's server has pg_buffile.method {shown!r}, not {want!r}")
    t0 = time.monotonic()
    try:
        m.burner_start()
        for k, c in enumerate(cells, 1):
            m.run_cell(c, records, k, len(cells))
    finally:
        m.burner_stop()
    print(f"the matrix's runs: {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    sys.stdout.write(matrix_report(a, cells, records))


if __name__ == "__main__":
    if "--matrix" in sys.argv[1:]:
        matrix_main()
    else:
        main()

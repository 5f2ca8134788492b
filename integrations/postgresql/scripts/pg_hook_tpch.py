#!/usr/bin/python3
"""The TPC-H measurement of pg-hook-tpch.sh: TPC-H queries on one PostgreSQL server with
the BufFile storage hook and pg_buffile preloaded, pg_buffile's methods (off: PostgreSQL's
own buffile.c path; none, lz4, zstd, gzip, auto through libbuffile) set per session, paired
and shuffled rounds; per query and for the suite the ratio of each later method to the first
(issue 46: auto / off) in wall and in CPU time. Prints a Markdown report on stdout.

The method is that of the retired pg-bench.sh (docs/results/postgresql-scale.md, "How it is
measured"), on the hook's build:
- one server, so caches, plans and data are the same for every method;
- per query a warm-up run of each method, not counted: the answers (a hash of psql's output)
  must be equal across methods, and the plans (EXPLAIN, as text) too, else the run stops; a
  query whose warm-up hits the statement timeout is left out and named;
- rounds, each running every method once per query in an order shuffled per (query, round)
  (tpch_report.stats.shuffle: paired.c's pd_shuffle);
- per run: wall time (psql's \\timing, summed over the query's statements), CPU time of the
  backend and its parallel workers (the postmaster's cutime + cstime once they are reaped,
  less what the backend used before its query started), temp files and bytes
  (pg_stat_database's deltas, and the run's log_temp_files lines through templog), the
  answer's hash, and under auto the blocks auto wrote per codec (pg_buffile's log line);
- ratios: the geometric mean of the rounds' paired ratios with a 95% Student t interval on
  their logarithms (stats.ratio), the suite's the same over each round's geometric mean
  across the queries that spilled (stats.suite_interval).

Every (query, round) is one JSON line appended to the results file once all its methods ran,
so a second invocation runs only what is missing (invariant: a round of a query is wholly in
the file or not at all). A warm-up's outcome is a line too ("warm": its answers, plans,
temp files, or the timeout that left the query out).
"""

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib
from statistics import median

import templog
from pg_device import CLK_TCK, Device, auto_device, auto_rows, parse_stat, summary_rows, total
from pg_hook_wall import TIME, auto_blocks, load_results
from tpch_report import stats

# The postmaster's long-lived children; every other child is a backend or a parallel
# worker of a run (18's names; "io worker" is 18's asynchronous I/O).
AUX = ("checkpointer", "background writer", "walwriter", "autovacuum launcher",
       "logical replication launcher", "archiver", "logger", "startup", "io worker",
       "walsummarizer")
# issue 46's target for the suite's CPU time, auto / off: at most 1.01 by the estimate, the
# interval's half-width (log domain, as a share) at most 2%
CPU_TARGET = 1.01
HALF_TARGET = 0.02
# the 16 spilling queries of docs/results/postgresql-scale.md at SF 10, work_mem 4MB
# (2..22 that spilled, minus the control Q6, which does not)
SPILLING = "2,3,4,5,7,8,10,11,12,13,14,15,16,18,21,22"


# --- CPU time from /proc -------------------------------------------------------------
def proc_stat(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None


def is_transient(state, cmdline):
    """A child of the postmaster that a run made: a backend or a parallel worker, alive, or
    a zombie whatever it was (its times reach the postmaster's cutime when it is reaped)."""
    return state == "Z" or not any(("postgres: " + a) in cmdline for a in AUX)


def transient_children(pm):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = proc_stat(d)
        if st is None or st[1] != pm:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if is_transient(st[0], cmd):
            out.append(int(d))
    return out


def wait_quiet(pm, timeout=60.0):
    """Wait until every backend and worker of the postmaster has exited and been reaped."""
    deadline = time.monotonic() + timeout
    while transient_children(pm):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# --- parsing -------------------------------------------------------------------------
def parse_list(s):
    """--queries: "2-5,8" -> [2, 3, 4, 5, 8], in the order given, no repeats."""
    out = []
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        for n in range(int(lo), int(hi or lo) + 1):
            if n not in out:
                out.append(n)
    return out


def wall_of(out):
    """A session's wall time: psql's \\timing lines summed (seconds), and their count."""
    ms = [float(x) for x in TIME.findall(out)]
    return sum(ms) / 1000.0, len(ms)


def plan_of(out):
    """EXPLAIN's text without what varies between equal plans (nothing at costs off)."""
    return "\n".join(line.rstrip() for line in out.strip().splitlines())


def explainable(sql):
    """The statements of a query file that EXPLAIN takes (selects), for the plan check;
    Q15's create view / drop view are left out, its select (on the view) needs the view,
    so a file with other statements gives none."""
    stmts = [s.strip() for s in re.sub(r"--[^\n]*", "", sql).split(";") if s.strip()]
    if all(s.lower().startswith("select") for s in stmts):
        return stmts
    return []


def key_of(a):
    """What makes two lines of the results file the same measurement."""
    k = {"sf": a.sf, "workers": a.workers, "work_mem": a.work_mem, "methods": a.method,
         "timeout": a.timeout}
    # the page cache's lines keep the key they had before --device
    dev = getattr(a, "device", "page")
    if dev != "page":
        k["device"] = dev
    return k


def same_key(r, key):
    return r.get("key") == key


# --- the runs ------------------------------------------------------------------------
class Runner:
    """Sessions on the one server, each measured alone."""

    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="pgtpch.")
        self.methods = a.method.split(",")
        self.dev = Device.load(getattr(a, "device", "page"), getattr(a, "device_info", ""))

    def pm(self):
        with open(os.path.join(self.a.data, "postmaster.pid"), encoding="utf-8") as f:
            return int(f.readline())

    def opts(self, method):
        a = self.a
        return (f"-c work_mem={a.work_mem} -c max_parallel_workers_per_gather={a.workers} "
                f"-c jit=off -c statement_timeout={a.timeout}s -c pg_buffile.method={method}")

    def psql(self, sql, method=None, check=True):
        env = dict(os.environ)
        env.pop("PGOPTIONS", None)
        if method:
            env["PGOPTIONS"] = self.opts(method)
        r = subprocess.run([self.a.psql, "-X", "-q", "-A", "-t", "-h", self.a.sock, "-p",
                            str(self.a.port), "-d", self.a.db, "-v", "ON_ERROR_STOP=1"],
                           input=sql, env=env, capture_output=True, text=True, check=False)
        if check and r.returncode != 0:
            sys.exit(f"psql failed: {r.stderr.strip()}")
        return r

    def stat(self):
        out = self.psql("select temp_files, temp_bytes from pg_stat_database where "
                        "datname = current_database();\n").stdout.split("|")
        return int(out[0]), int(out[1])

    def run(self, q, method):
        """One measured session of query q under method: a dict."""
        a = self.a
        base = os.path.join(self.tmp, "run")
        pidf, statf, ansf = base + ".pid", base + ".stat", base + ".out"
        for p in (pidf, statf, ansf):
            if os.path.exists(p):
                os.unlink(p)
        script = (f"\\o {pidf}\nselect pg_backend_pid();\n\\o\n"
                  f"\\! cat /proc/$(cat {pidf})/stat > {statf}\n"
                  f"\\o {ansf}\n\\timing on\n\\i {os.path.join(a.qdir, f'{q}.sql')}\n")
        pm = self.pm()
        f0, b0 = self.stat()
        # the stat connection's backend is reaped before the CPU baseline is read, ours
        # before its end is: the window holds this run's backend and workers only
        wait_quiet(pm)
        pos = os.path.getsize(a.log)
        d0 = self.dev.snapshot(pm, a.port, a.data)
        c0 = proc_stat(pm)[3]
        r = self.psql(script, method, check=False)
        quiet = wait_quiet(pm)
        c1 = proc_stat(pm)[3]
        d1 = self.dev.snapshot(pm, a.port, a.data)
        res = {"method": method, "device": self.dev.figures(d0, d1)}
        if r.returncode == 0:
            res["status"] = "ok"
        elif "statement timeout" in r.stderr:
            res["status"] = "timeout"
        else:
            res["status"] = "error"
            res["error"] = r.stderr.strip()[-500:]
        res["wall_s"], res["statements"] = wall_of(r.stdout)
        try:
            with open(statf, encoding="utf-8") as f:
                before = parse_stat(f.read())[2]
        except (OSError, ValueError, IndexError):
            before = 0.0
            res["cpu_before_missing"] = True
        res["cpu_s"] = c1 - c0 - before if quiet else math.nan
        if not quiet and res["status"] == "ok":
            # a backend or worker still unreaped after a minute: the CPU is not this run's
            # alone, so the round is kept in the file but left out of the report
            res["status"] = "unquiet"
        res["cpu_whole_s"] = c1 - c0
        try:
            with open(ansf, "rb") as f:
                res["answer"] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            res["answer"] = None
        # temp files: every backend has flushed its statistics at exit (they have exited);
        # the log's lines may come a moment later
        deadline = time.monotonic() + 10
        while True:
            f1, b1 = self.stat()
            with open(a.log, "rb") as lf:
                lf.seek(pos)
                text = lf.read().decode("utf-8", "replace")
            files = templog.parse(text)
            if (f1 - f0, b1 - b0) == (len(files), sum(x.size for x in files)) or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.05)
        res["temp_files"], res["temp_bytes"] = f1 - f0, b1 - b0
        res["log_files"], res["log_bytes"] = len(files), sum(x.size for x in files)
        res["log_logical"] = sum(x.size if x.logical is None else x.logical for x in files)
        blocks, n = auto_blocks(text)
        if n:
            res["auto_blocks"] = blocks
            res["auto_device"] = auto_device(text)
        return res

    def plans(self, q, method):
        with open(os.path.join(self.a.qdir, f"{q}.sql"), encoding="utf-8") as f:
            stmts = explainable(f.read())
        if not stmts:
            return None
        sql = "".join(f"explain (costs off) {s};\n" for s in stmts)
        return plan_of(self.psql(sql, method).stdout)


def warm(runner, q, key):
    """The warm-up of query q: a run per method, answers and plans compared; its line."""
    w = {"key": key, "warm": True, "query": q, "runs": {}, "plans": {},
         "device": runner.dev.name}
    for m in runner.methods:
        w["plans"][m] = runner.plans(q, m)
        res = runner.run(q, m)
        w["runs"][m] = res
        if res["status"] == "timeout":
            w["status"] = "timeout"
            return w
        if res["status"] not in ("ok", "unquiet"):
            sys.exit(f"Q{q} under {m} failed: {res.get('error')}")
    answers = {m: r["answer"] for m, r in w["runs"].items()}
    if len(set(answers.values())) != 1:
        sys.exit(f"Q{q}: the answers DIFFER between methods: {answers}")
    if len({p for p in w["plans"].values()}) != 1:
        sys.exit(f"Q{q}: the plans DIFFER between methods: {w['plans']}")
    w["status"] = "ok"
    w["answer"] = answers[runner.methods[0]]
    return w


def warm_of(records, key, q):
    for r in records:
        if r.get("warm") and r["query"] == q and same_key(r, key):
            return r
    return None


def rounds_of(records, key, q, n):
    """The rounds 0 .. n-1 of query q in the results, the first of each."""
    got = {}
    for r in records:
        if not r.get("warm") and r.get("query") == q and same_key(r, key) and \
                0 <= r["round"] < n and r["round"] not in got:
            got[r["round"]] = r
    return [got[i] for i in sorted(got)]


def measure(a, queries, records):
    runner = Runner(a)
    key = key_of(a)
    # a session takes each method (pg_buffile loaded, the value known)
    for m in runner.methods:
        shown = runner.psql("show pg_buffile.method;\n", m).stdout.strip()
        if shown != m:
            sys.exit(f"a session's pg_buffile.method is {shown!r}, not {m!r}")
    phases = {}
    t0 = time.monotonic()
    for q in queries:
        if warm_of(records, key, q) is None:
            t1 = time.monotonic()
            w = warm(runner, q, key)
            append(a.results, w)
            records.append(w)
            print(f"[Q{q}] warm-up: {w['status']}, temp files "
                  f"{w['runs'][runner.methods[0]]['temp_files']} "
                  f"({time.monotonic() - t1:.1f} s)", file=sys.stderr, flush=True)
    phases["warm-up"] = time.monotonic() - t0
    t0 = time.monotonic()
    live = [q for q in queries if warm_of(records, key, q)["status"] == "ok"]
    seed = a.seed
    for r in range(a.rounds):
        for q in live:
            if any(x["round"] == r for x in rounds_of(records, key, q, a.rounds)):
                continue
            t1 = time.monotonic()
            order = [runner.methods[i] for i in
                     stats.shuffle(seed + q, r, len(runner.methods))]
            rec = {"key": key, "query": q, "round": r, "order": order, "tree": a.tree,
                   "device": runner.dev.name}
            ref = warm_of(records, key, q)["answer"]
            for m in order:
                res = runner.run(q, m)
                if res["status"] == "error":
                    sys.exit(f"Q{q} round {r + 1} under {m} failed: {res.get('error')}")
                if res["status"] == "ok" and res["answer"] != ref:
                    sys.exit(f"Q{q} round {r + 1} under {m}: the answer DIFFERS from the "
                             f"warm-up's ({res['answer']} against {ref})")
                rec[m] = res
            append(a.results, rec)
            records.append(rec)
            print(f"[Q{q} round {r + 1}/{a.rounds}] " + ", ".join(
                f"{m} {rec[m]['wall_s']:.2f} s wall {rec[m]['cpu_s']:.2f} s CPU"
                for m in runner.methods) + f" ({time.monotonic() - t1:.1f} s)",
                file=sys.stderr, flush=True)
    phases["rounds"] = time.monotonic() - t0
    return phases


def append(path, rec):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


# --- the report ----------------------------------------------------------------------
def cpu_word(iv):
    """issue 46's target on auto / off CPU: MET when the estimate is at most CPU_TARGET and
    the half-width at most HALF_TARGET; MISSED when the whole interval is above CPU_TARGET;
    not resolved otherwise (say why)."""
    if iv.n < 2 or math.isnan(iv.est):
        return stats.NOT_RUN if iv.n == 0 else f"{stats.NOT_RESOLVED} (fewer than 2 rounds)"
    hw = iv.halfwidth()
    if iv.lo > CPU_TARGET:
        return stats.MISSED
    if hw > HALF_TARGET:
        return f"{stats.NOT_RESOLVED} (half-width {100 * hw:.1f}% > {100 * HALF_TARGET:.0f}%)"
    if iv.est <= CPU_TARGET:
        return stats.MET
    return stats.MISSED


def summarize(records, key, queries, methods, rounds):
    """Per query its complete rounds, and the suite's: a dict."""
    s = {"queries": [], "left_out": [], "not_spilling": []}
    for q in queries:
        w = warm_of(records, key, q)
        if w is None:
            continue
        if w["status"] != "ok":
            s["left_out"].append(q)
            continue
        rs = [r for r in rounds_of(records, key, q, rounds)
              if all(r[m]["status"] == "ok" for m in methods)]
        # the reference (off: stock's own path) wrote temp files in the warm-up or a round:
        # a method that keeps such a query in memory still counts in the suite
        spilled = any(x[methods[0]]["temp_files"] > 0 for x in [w["runs"]] + rs)
        if not spilled:
            s["not_spilling"].append(q)
        s["queries"].append({"q": q, "rounds": rs, "spilled": spilled, "warm": w})
    return s


def device_targets(dev, times, names, methods):
    """Issue 46's targets on a device other than the page cache, in wall time over the
    suite: on slowfs auto at most lz4's time + 5% (auto / lz4 at most 1.05), on the disk
    (cgroup) auto within 2% of the best fixed method of the list (off included): auto / the
    method whose suite time is lowest (the largest auto / m). [(text, word)]."""
    if "auto" not in methods:
        return []
    out = []
    if dev.kind == "slowfs" and "lz4" in methods:
        iv = stats.suite_interval(times, names, "auto", "lz4")
        out.append((f"auto / lz4 wall {stats.fmt_ratio(iv, digits=3)}, at most 1.05",
                    stats.target_text(iv, 1.05)))
    if dev.kind == "cgroup":
        fixed = [m for m in methods if m != "auto"]
        ivs = {m: stats.suite_interval(times, names, "auto", m) for m in fixed}
        ivs = {m: iv for m, iv in ivs.items() if iv.n >= 1 and not math.isnan(iv.est)}
        if ivs:
            best = max(ivs, key=lambda m: ivs[m].est)
            out.append((f"auto / {best} (the best fixed method's suite time) wall "
                        f"{stats.fmt_ratio(ivs[best], digits=3)}, at most 1.02",
                        stats.target_text(ivs[best], 1.02)))
    return out


def report(a, records, phases=None):
    key = key_of(a)
    dev = Device.load(getattr(a, "device", "page"), getattr(a, "device_info", ""))
    methods = a.method.split(",")
    first, later = methods[0], methods[1:]
    queries = parse_list(a.queries)
    s = summarize(records, key, queries, methods, a.rounds)
    lines = []
    P = lines.append
    P(f"# TPC-H SF {a.sf} through pg_buffile: {', '.join(methods)}, PostgreSQL {a.major} "
      "with the hook (generated by pg-hook-tpch.sh)")
    P("")
    P(f"Command: `{a.command}`")
    P("")
    P(f"{a.version}, the hook's build without assertions (pg-hook-pristine.sh), pg_buffile "
      f"preloaded; one server on a cluster loaded once, the method set per session "
      f"(`off` is PostgreSQL's own buffile.c path). work_mem {a.work_mem}, "
      f"max_parallel_workers_per_gather {a.workers}, no JIT, statement_timeout {a.timeout} s, "
      f"temp files on {dev.title()}. A warm-up run of each method per "
      f"query (answers and plans equal across methods), then {a.rounds} rounds, each "
      f"running every method once per query in shuffled order (seed {a.seed}). Wall: psql's "
      f"\\timing; CPU: the backend and its parallel workers (the postmaster's cutime + "
      f"cstime once reaped, less the backend's CPU before its query). Ratios: the geometric "
      f"mean of the rounds' paired ratios with its 95% interval (Student t on their "
      f"logarithms, tpch_report.stats); the suite: per round the geometric mean over the "
      f"queries that spilled ({first} wrote temp files in the warm-up or a round), the same "
      f"interval over the rounds that all of them have. Target (issue 46, auto / "
      f"off CPU over the spilling queries): at most {CPU_TARGET} with a half-width of at "
      f"most {100 * HALF_TARGET:.0f}%.")
    P("")
    if s["left_out"]:
        P(f"Left out (the warm-up hit the statement timeout): "
          f"{', '.join(f'Q{q}' for q in s['left_out'])}.")
        P("")
    if s["not_spilling"]:
        P(f"{methods[0]} wrote no temp file in the warm-up or a round (reported, not in "
          f"the suite): "
          f"{', '.join(f'Q{q}' for q in s['not_spilling'])}.")
        P("")
    trees = sorted({r.get("tree", "unknown") for e in s["queries"] for r in e["rounds"]})
    if len(trees) > 1:
        P(f"**The rounds come from {len(trees)} trees ({', '.join(trees)}).**")
        P("")
    suite_qs = [e for e in s["queries"] if e["spilled"] and e["rounds"]]
    # the suite: rounds every suite query has
    common = None
    for e in suite_qs:
        rr = {r["round"] for r in e["rounds"]}
        common = rr if common is None else common & rr
    common = sorted(common or [])
    times = {"wall": {}, "cpu": {}}
    for e in suite_qs:
        for r in e["rounds"]:
            if r["round"] in common:
                for m in methods:
                    times["wall"][(r["round"], e["q"], m)] = r[m]["wall_s"]
                    times["cpu"][(r["round"], e["q"], m)] = max(r[m]["cpu_s"], 1.0 / CLK_TCK)
    names = [e["q"] for e in suite_qs]
    P("## The suite")
    P("")
    P(f"{len(names)} queries ({', '.join(f'Q{q}' for q in names) or 'none'}), "
      f"{len(common)} rounds.")
    P("")
    P("| ratio | wall (95%) | CPU (95%) | CPU half-width | target (CPU) |")
    P("|---|---|---|---:|---|")
    words = []
    for m in later:
        wv = stats.suite_interval(times["wall"], names, m, first)
        cv = stats.suite_interval(times["cpu"], names, m, first)
        hw = cv.halfwidth() if cv.n >= 2 else math.nan
        word = cpu_word(cv) if (m, first) == ("auto", "off") else "(none)"
        if word != "(none)":
            words.append(word)
        P(f"| {m} / {first} | {stats.fmt_ratio(wv, digits=3)} | "
          f"{stats.fmt_ratio(cv, digits=3)} | {'-' if math.isnan(hw) else f'{100 * hw:.1f}%'}"
          f" | {word} |")
    if words and dev.kind == "page":
        P("")
        P(f"Issue 46's TPC-H target in the page cache: {stats.overall(words)}.")
    elif words:
        P("")
        P(f"(The CPU target is the page cache's; on {dev.name} it is reported only.)")
    for text, word in device_targets(dev, times["wall"], names, methods):
        P("")
        P(f"Issue 46's target on {dev.name}: {text}: {word}.")
    P("")
    P(f"## The device: {dev.name}")
    P("")
    P(f"Temp files on {dev.title()}. Per round of the suite (its queries' runs summed), "
      "the medians over the rounds of what the server's processes read from storage and wrote to it, below the page "
      "cache (the postmaster's /proc/PID/io after the run's processes are reaped: "
      "read_bytes, and write_bytes less cancelled_write_bytes; slowfs's direct I/O counts "
      "whole)"
      + (", what slowfs served and the time its model held requests, its daemon's CPU "
         "(not in the backends' CPU)" if dev.kind == "slowfs" else "")
      + (", the times the cgroup's usage hit its limit (memory.failcnt) and the machine's "
         "disk as /proc/diskstats counts it (every process of the machine)"
         if dev.kind == "cgroup" else "") + ":")
    P("")
    per = {m: [total([r[m].get("device", {}) for e in suite_qs for r in e["rounds"]
                      if r["round"] == rnd]) for rnd in common] for m in methods}
    for line in summary_rows(dev, per):
        P(line)
    if "auto" in methods:
        P("")
        P(auto_rows([r["auto"].get("auto_device", {}) for e in suite_qs for r in e["rounds"]]))
    P("")
    P("## Per query")
    P("")
    head = "| query | rounds |"
    rule = "|---|---:|"
    for m in methods:
        head += f" {m} wall / CPU median (s) | {m} temp MB |"
        rule += "---:|---:|"
    for m in later:
        head += f" {m} / {first} wall (95%) | {m} / {first} CPU (95%) |"
        rule += "---|---|"
    if "auto" in methods:
        head += " auto blocks raw |"
        rule += "---:|"
    P(head)
    P(rule)
    for e in s["queries"]:
        rs = e["rounds"]
        row = f"| Q{e['q']}{'' if e['spilled'] else ' (no spill)'} | {len(rs)} |"
        for m in methods:
            if rs:
                row += (f" {median([r[m]['wall_s'] for r in rs]):.2f} / "
                        f"{median([r[m]['cpu_s'] for r in rs]):.2f} | "
                        f"{median([r[m]['temp_bytes'] for r in rs]) / 1e6:.0f} |")
            else:
                row += " - | - |"
        for m in later:
            if rs:
                wv = stats.ratio([r[m]["wall_s"] for r in rs], [r[first]["wall_s"] for r in rs])
                cv = stats.ratio([max(r[m]["cpu_s"], 1.0 / CLK_TCK) for r in rs],
                                 [max(r[first]["cpu_s"], 1.0 / CLK_TCK) for r in rs])
                row += f" {stats.fmt_ratio(wv, digits=3)} | {stats.fmt_ratio(cv, digits=3)} |"
            else:
                row += " - | - |"
        if "auto" in methods:
            b = {c: sum(r["auto"].get("auto_blocks", {}).get(c, 0) for r in rs)
                 for c in ("none", "lz4", "zstd", "gzip")}
            tot = sum(b.values())
            row += f" {b['none'] / tot:.4f} of {tot} |" if tot else " - |"
        P(row)
    if phases:
        P("")
        P("Time of each phase: " + "; ".join(f"{k} {v:.0f} s" for k, v in phases.items())
          + ".")
    P("")
    P("Raw times (s) round by round, wall/CPU per method in the order "
      f"{', '.join(methods)}:")
    P("")
    for e in s["queries"]:
        if e["rounds"]:
            P(f"- Q{e['q']}: " + "; ".join(
                " ".join(f"{r[m]['wall_s']:.2f}/{r[m]['cpu_s']:.2f}" for m in methods)
                for r in e["rounds"]))
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description="pg-hook-tpch.sh's runs and report")
    for f in ("psql", "sock", "db", "data", "log", "qdir", "major", "command", "version",
              "results", "method", "queries", "work-mem", "sf"):
        p.add_argument(f"--{f}", required=True)
    for f in ("port", "rounds", "seed", "workers", "timeout"):
        p.add_argument(f"--{f}", type=int, required=True)
    p.add_argument("--tree", default="unknown")
    p.add_argument("--device", default="page", help="pg-device.sh's spec")
    p.add_argument("--device-info", default="", help="pg-device.sh's device.json")
    p.add_argument("--report-only", action="store_true")
    a = p.parse_args(argv)
    records = load_results(a.results, lambda r: "key" in r and "query" in r)
    phases = None
    if not a.report_only:
        phases = measure(a, parse_list(a.queries), records)
    sys.stdout.write(report(a, records, phases))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs and reports scripts/pg-bench.sh's TPC-H phases (stock PostgreSQL against
PostgreSQL on libbuffile, of the major PG_MAJOR). pg-bench.sh prepares the builds, the
data and the two servers, then calls this; alone it needs the same flags (see
pg-bench.sh).

Method (spillbench's paired mode, docs/executor.md): per phase and query, one warm-up run
of the reference configuration (not counted; its answer is the reference, and a query
that hits statement_timeout there is left out), then R rounds, each running every
configuration once in an order shuffled per round and query (pd_shuffle). A
configuration's time against the reference is the geometric mean of its per-round
paired ratios with a 95% Student t interval on the log ratios (pd_ratio); a suite
figure takes per round the geometric mean over the chosen queries, then the same
interval over rounds (pd_suite). Both are tpch/exec/paired.c itself, through ctypes.

Per run: the time is the sum of psql's \\timing over the query's statements (the
server's execution and the result's transfer; connection start is not in it); temp
files and bytes are pg_stat_database's deltas for the database, read once the backend
has exited and checked against the run's log_temp_files lines (whose sum of sizes they
must equal); the logical bytes come from those lines (stock's files are not compressed:
logical = physical there)."""

import argparse
import ctypes
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time

NQ = 22


# --- paired.c through ctypes --------------------------------------------------------
class PdInterval(ctypes.Structure):
    _fields_ = [("est", ctypes.c_double), ("lo", ctypes.c_double), ("hi", ctypes.c_double),
                ("n", ctypes.c_int)]


class Paired:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        dp = ctypes.POINTER(ctypes.c_double)
        lib.pd_ratio.restype = PdInterval
        lib.pd_ratio.argtypes = [dp, dp, ctypes.c_int]
        lib.pd_suite.restype = PdInterval
        lib.pd_suite.argtypes = [dp, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_ubyte)]
        lib.pd_shuffle.restype = None
        lib.pd_shuffle.argtypes = [ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_int)]
        self.lib = lib

    def ratio(self, num, den):
        n = len(num)
        a = (ctypes.c_double * n)(*num)
        b = (ctypes.c_double * n)(*den)
        iv = self.lib.pd_ratio(a, b, n)
        return (iv.est, iv.lo, iv.hi, iv.n)

    def suite(self, t, rounds, nq, nc, c, use):
        arr = (ctypes.c_double * len(t))(*t)
        u = (ctypes.c_ubyte * nq)(*use)
        iv = self.lib.pd_suite(arr, rounds, nq, nc, c, u)
        return (iv.est, iv.lo, iv.hi, iv.n)

    def shuffle(self, seed, rnd, n):
        order = (ctypes.c_int * n)()
        self.lib.pd_shuffle(seed, rnd, n, order)
        return list(order)


# --- options ------------------------------------------------------------------------
def parse_queries(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    bad = [q for q in out if not 1 <= q <= NQ]
    if bad:
        sys.exit(f"pg_bench.py: --queries: {bad[0]} is not a TPC-H query number")
    return sorted(set(out))


def rate_kb(s):
    """'200MB' -> 204800 (kB per second, PostgreSQL's units: 1MB = 1024kB)."""
    if s == "0":
        return 0
    m = re.fullmatch(r"(\d+)(kB|MB|GB)", s)
    return int(m.group(1)) * {"kB": 1, "MB": 1024, "GB": 1024 * 1024}[m.group(2)]


CODEC_OPTS = {
    "stock": "",
    "none": "-c temp_file_compression=none",
    "lz4": "-c temp_file_compression=lz4",  # level 0: the codec's default, acceleration 1
    "zstd": "-c temp_file_compression=zstd:level=1",
    "zlib": "-c temp_file_compression=zlib",
    "auto": "-c temp_file_compression=auto",
}


class Phase:
    def __init__(self, name, workers, configs, io_kb, queries, title):
        self.name, self.workers, self.configs, self.io_kb = name, workers, configs, io_kb
        self.queries, self.title = queries, title

    def opts(self, cfg, timeout):
        o = [f"-c max_parallel_workers_per_gather={self.workers}",
             f"-c statement_timeout={timeout}s"]
        if CODEC_OPTS[cfg]:
            o.append(CODEC_OPTS[cfg])
        return " ".join(o)


# --- running ------------------------------------------------------------------------
TEMP_RE = re.compile(r"\[(\d+)\] LOG:  temporary file: path \"([^\"]*)\", size (\d+)"
                     r"(?:, logical size (\d+), compression (\w+))?")
AUTO_RE = re.compile(r"\[(\d+)\] LOG:  temporary file compression auto: blocks written none (\d+), "
                     r"lz4 (\d+), zstd (\d+), zlib (\d+), probing ([\d.]+) ms\n"
                     r"(?:[^\n]*DETAIL:  Last decision: ([^\n]*))?")


class Runner:
    def __init__(self, a):
        self.a = a
        self.tmp = os.path.join(a.out, "tmp")
        os.makedirs(self.tmp, exist_ok=True)

    def port(self, cfg):
        return self.a.stock_port if cfg == "stock" else self.a.patched_port

    def logfile(self, cfg):
        return self.a.stock_log if cfg == "stock" else self.a.patched_log

    def psql(self, port, *args, env=None, check=True):
        cmd = [self.a.psql, "-X", "-q", "-h", self.a.sock, "-p", str(port), "-U", self.a.user,
               "-d", "tpch"] + list(args)
        e = dict(os.environ)
        e.pop("PGOPTIONS", None)
        if env:
            e.update(env)
        return subprocess.run(cmd, capture_output=True, text=True, env=e, check=check)

    def stat(self, port):
        r = self.psql(port, "-At", "-F", " ", "-c",
                      "select temp_files, temp_bytes from pg_stat_database where datname = 'tpch'")
        f, b = r.stdout.split()
        return int(f), int(b)

    def run(self, phase, cfg, q, qfile, tag):
        """One run: a dict with status, ms, answer hash, temp files and bytes."""
        port, logf = self.port(cfg), self.logfile(cfg)
        base = os.path.join(self.tmp, f"{phase.name}-q{q}-{tag}")
        pidf, ansf, scr = base + ".pid", base + ".out", base + ".sql"
        with open(scr, "w") as f:
            f.write("\\set ON_ERROR_STOP 1\n\\o %s\nselect pg_backend_pid();\n" % pidf)
            if q == 15:  # a run cancelled between its create and drop leaves the view
                f.write("set client_min_messages = warning;\ndrop view if exists revenue0;\n"
                        "reset client_min_messages;\n")
            f.write("\\o %s\n\\timing on\n\\i %s\n" % (ansf, qfile))
        for p in (pidf, ansf):
            if os.path.exists(p):
                os.unlink(p)
        opts = phase.opts(cfg, self.a.timeout)
        f0, b0 = self.stat(port)
        pos = os.path.getsize(logf)
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        r = self.psql(port, "-A", "-t", "-F", "|", "-f", scr, env={"PGOPTIONS": opts}, check=False)
        wall = time.monotonic() - t0
        times = [float(x) for x in re.findall(r"^Time: ([\d.]+) ms", r.stdout, re.M)]
        res = {"phase": phase.name, "query": q, "config": cfg, "tag": tag, "opts": opts,
               "wall_s": wall, "load1": load, "rc": r.returncode}
        if r.returncode == 0:
            res["status"] = "ok"
        elif "statement timeout" in r.stderr:
            res["status"] = "timeout"
        else:
            res["status"] = "error"
            res["error"] = r.stderr.strip()[-500:]
        # statements timed: 1 (Q15: create view, select, drop view: 3)
        res["ms"] = sum(times)
        # The backend's usage is complete once it has exited: its log lines are
        # written and its statistics flushed (before_shmem_exit).
        try:
            pid = int(open(pidf).read().split()[0])
        except (OSError, ValueError, IndexError):
            pid = None
        deadline = time.monotonic() + 30
        while pid and os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.005)
        deadline = time.monotonic() + 10
        while True:
            f1, b1 = self.stat(port)
            with open(logf, "rb") as lf:
                lf.seek(pos)
                text = lf.read().decode("utf-8", "replace")
            lines = TEMP_RE.findall(text)
            lfiles = len(lines)
            lphys = sum(int(x[2]) for x in lines)
            if (f1 - f0, b1 - b0) == (lfiles, lphys) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        res["temp_files"], res["temp_bytes"] = f1 - f0, b1 - b0
        res["log_files"], res["log_bytes"] = lfiles, lphys
        res["log_logical"] = sum(int(x[3]) if x[3] else int(x[2]) for x in lines)
        res["stat_matches_log"] = (f1 - f0, b1 - b0) == (lfiles, lphys)
        codecs = {}
        for x in lines:
            c = x[4] or "stock"
            codecs[c] = codecs.get(c, 0) + 1
        res["codecs"] = codecs
        res["log_pids"] = len({x[0] for x in lines})
        autos = AUTO_RE.findall(text)
        if autos:
            res["auto_blocks"] = [sum(int(x[i]) for x in autos) for i in range(1, 5)]
            res["auto_probe_ms"] = sum(float(x[5]) for x in autos)
            res["auto_reasons"] = [x[6] for x in autos if x[6]]
        if os.path.exists(ansf):
            data = open(ansf, "rb").read()
            res["answer"] = hashlib.sha256(data).hexdigest()
            res["rows"] = data.count(b"\n")
        return res, ansf


def cache_path(a, phase, q, tag):
    return os.path.join(a.out, "runs", phase.name, f"q{q:02d}", tag + ".json")


def load_cached(a, phase, q, tag, cfg):
    p = cache_path(a, phase, q, tag)
    try:
        r = json.load(open(p))
    except (OSError, ValueError):
        return None
    return r if r.get("opts") == phase.opts(cfg, a.timeout) else None


def save(a, phase, q, tag, res):
    p = cache_path(a, phase, q, tag)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(p + ".tmp", p)


def phase_order(a, pd, phase, q, rnd):
    """Configurations of round rnd of query q, shuffled as spillbench does it."""
    order = pd.shuffle(a.seed + phase.workers + (1000 if phase.io_kb else 0),
                       rnd * (NQ + 1) + q, len(phase.configs))
    return [phase.configs[i] for i in order]


def make_phases(a, spilled_w0=None):
    workers = [int(w) for w in a.workers.split(",")]
    configs = a.configs.split(",")
    phases = [Phase(f"w{w}", w, configs, 0, a.qlist,
                    f"max_parallel_workers_per_gather = {w}") for w in workers]
    # The throttled phase (temp_file_io_limit) went with that GUC (issue 24);
    # a slow temp device comes back as a FUSE mount (issue 26).
    if rate_kb(a.io_limit):
        sys.exit("pg_bench.py: --io-limit: temp_file_io_limit is gone; a slow device is issue 26's")
    return phases


def spilled_queries(a, phase):
    """Queries with temp files in any cached run of the phase (None: phase not run)."""
    d = os.path.join(a.out, "runs", phase.name)
    if not os.path.isdir(d):
        return None
    out = set()
    for q in a.qlist:
        qd = os.path.join(d, f"q{q:02d}")
        if not os.path.isdir(qd):
            continue
        for fn in os.listdir(qd):
            if fn.endswith(".json"):
                r = json.load(open(os.path.join(qd, fn)))
                if r.get("temp_files", 0) > 0 or r.get("log_files", 0) > 0:
                    out.add(q)
    return out


def run_phase(a, pd, runner, phase):
    ref = phase.configs[0]
    t_phase = time.monotonic()
    for qi, q in enumerate(phase.queries):
        qfile = os.path.join(a.qdir, f"{q}.sql")
        w = load_cached(a, phase, q, "warm", ref)
        if w is None:
            w, ansf = runner.run(phase, ref, q, qfile, "warm")
            keep = os.path.join(a.out, "answers", phase.name, f"q{q:02d}.out")
            os.makedirs(os.path.dirname(keep), exist_ok=True)
            if os.path.exists(ansf):
                os.replace(ansf, keep)
            save(a, phase, q, "warm", w)
        prog = f"[{phase.name} {qi + 1}/{len(phase.queries)}] Q{q}"
        if w["status"] != "ok":
            print(f"{prog}: warm-up {w['status']} after {w['wall_s']:.0f} s: left out",
                  file=sys.stderr, flush=True)
            continue
        for rnd in range(a.rounds):
            for cfg in phase_order(a, pd, phase, q, rnd):
                tag = f"r{rnd}-{cfg}"
                if load_cached(a, phase, q, tag, cfg) is not None:
                    continue
                res, ansf = runner.run(phase, cfg, q, qfile, tag)
                res["same_answer"] = res.get("answer") == w.get("answer")
                if not res["same_answer"] and os.path.exists(ansf):
                    keep = os.path.join(a.out, "answers", phase.name, f"q{q:02d}-{tag}.out")
                    os.replace(ansf, keep)
                save(a, phase, q, tag, res)
                flag = "" if res["same_answer"] else "  ANSWER DIFFERS"
                print(f"{prog} round {rnd + 1}/{a.rounds} {cfg:5s} {res['status']:7s} "
                      f"{res['ms'] / 1000:8.2f} s  temp {res['temp_bytes'] / 2**20:9.1f} MiB  "
                      f"load {res['load1']:.2f}{flag}", file=sys.stderr, flush=True)
    print(f"[{phase.name}] done in {time.monotonic() - t_phase:.0f} s", file=sys.stderr, flush=True)


# --- report -------------------------------------------------------------------------
def median(v):
    v = sorted(v)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def gmean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def fmt_iv(iv):
    est, lo, hi, n = iv
    if n == 0 or math.isnan(est):
        return "-"
    mark = "~" if lo <= 1.0 <= hi else ""
    if n < 2:
        return f"{est:.3f}"
    return f"{est:.3f} [{lo:.3f}, {hi:.3f}]{mark}"


def mib(b):
    return f"{b / 2**20:.1f}"


def collect(a, phase):
    """Per query: warm-up, runs[cfg][round] (None when missing)."""
    data = {}
    for q in phase.queries:
        ref = phase.configs[0]
        w = load_cached(a, phase, q, "warm", ref)
        runs = {c: [load_cached(a, phase, q, f"r{r}-{c}", c) for r in range(a.rounds)]
                for c in phase.configs}
        data[q] = {"warm": w, "runs": runs}
    return data


def analyse(a, pd, phase, data, base=None):
    """Figures of one phase: per query and suite; answers also against phase base's warm-ups."""
    cfgs = phase.configs
    out = {"phase": phase.name, "title": phase.title, "configs": cfgs, "queries": [],
           "reference": cfgs[0]}
    complete = []  # queries with every run ok
    for q in phase.queries:
        d = data[q]
        w = d["warm"]
        e = {"query": q}
        if w is None:
            e["status"] = "not run"
            out["queries"].append(e)
            continue
        if w["status"] != "ok":
            e["status"] = w["status"]
            e["warm_s"] = w["wall_s"]
            out["queries"].append(e)
            continue
        allruns = [r for c in cfgs for r in d["runs"][c]]
        if not allruns:  # --rounds=0
            e["status"] = "warm-up only"
            e["warm_s"] = w["ms"] / 1000
            e["spills"] = w["temp_files"] > 0
            e["warm_bytes"] = w["temp_bytes"]
            out["queries"].append(e)
            continue
        if any(r is None for r in allruns):
            e["status"] = "incomplete"
        elif any(r["status"] != "ok" for r in allruns):
            e["status"] = "failed: " + ", ".join(sorted({f"{r['config']} {r['status']}"
                                                        for r in allruns if r["status"] != "ok"}))
        else:
            e["status"] = "ok"
        done = [r for r in allruns if r is not None]
        e["spills"] = any(r["temp_files"] > 0 or r["log_files"] > 0 for r in done) or \
            w["temp_files"] > 0
        e["answers"] = "identical" if all(r.get("same_answer") for r in done) else "DIFFER"
        # the warm-up's answer against the first phase's (stock without workers)
        if base is not None and base is not phase:
            bw = load_cached(a, base, q, "warm", base.configs[0])
            if bw is not None and bw["status"] == "ok" and bw.get("answer") != w.get("answer"):
                e["answers"] = f"DIFFER from {base.name}'s {base.configs[0]}"
        e["stat_vs_log"] = all(r["stat_matches_log"] for r in done) and w["stat_matches_log"]
        e["rows"] = w.get("rows")
        per = {}
        for c in cfgs:
            rs = [r for r in d["runs"][c] if r is not None and r["status"] == "ok"]
            if not rs:
                continue
            p = {"time_s": median([r["ms"] / 1000 for r in rs]),
                 "temp_bytes": median([r["temp_bytes"] for r in rs]),
                 "temp_files": median([r["temp_files"] for r in rs]),
                 "logical": median([r["log_logical"] for r in rs]),
                 "bytes_range": [min(r["temp_bytes"] for r in rs), max(r["temp_bytes"] for r in rs)]}
            if c == "auto":
                blocks = [0, 0, 0, 0]
                reasons = []
                for r in rs:
                    for i, b in enumerate(r.get("auto_blocks", [0, 0, 0, 0])):
                        blocks[i] += b
                    reasons += r.get("auto_reasons", [])
                p["auto_blocks"] = blocks
                p["auto_reason"] = reasons[-1] if reasons else ""
            per[c] = p
        e["per"] = per
        if e["status"] == "ok":
            complete.append(q)
            ref_t = [d["runs"][cfgs[0]][r]["ms"] for r in range(a.rounds)]
            e["ratios"] = {c: pd.ratio([d["runs"][c][r]["ms"] for r in range(a.rounds)], ref_t)
                           for c in cfgs[1:]}
        out["queries"].append(e)
    # suites
    byq = {e["query"]: e for e in out["queries"]}
    spill = [q for q in complete if byq[q]["spills"]]
    control = [q for q in complete if not byq[q]["spills"]]
    out["spilling"], out["control"] = spill, control
    nq, nc = len(complete), len(cfgs)
    t = [0.0] * (a.rounds * max(nq, 1) * nc)
    for r in range(a.rounds):
        for i, q in enumerate(complete):
            for k, c in enumerate(cfgs):
                t[(r * nq + i) * nc + k] = data[q]["runs"][c][r]["ms"]
    suites = {}
    for name, qs in (("spilling", spill), ("control", control)):
        use = [1 if q in qs else 0 for q in complete]
        s = {}
        for k, c in enumerate(cfgs[1:], 1):
            s[c] = pd.suite(t, a.rounds, nq, nc, k, use) if qs and nq else (float("nan"),) * 3 + (0,)
        suites[name] = s
    out["suites"] = suites
    # bytes over the spilling queries: against the reference and against stock
    by = {}
    for c in cfgs:
        if not spill:
            continue
        tot = sum(byq[q]["per"][c]["temp_bytes"] for q in spill)
        logi = sum(byq[q]["per"][c]["logical"] for q in spill)
        by[c] = {"total": tot, "logical": logi}
        if c != cfgs[0]:
            by[c]["fewer_total"] = by[cfgs[0]]["total"] / tot if tot else float("nan")
            rs = [byq[q]["per"][cfgs[0]]["temp_bytes"] / byq[q]["per"][c]["temp_bytes"]
                  for q in spill if byq[q]["per"][c]["temp_bytes"] > 0]
            by[c]["fewer_gmean"] = gmean(rs)
    out["bytes"] = by
    return out


def scrub_paths(a, text):
    """The committed report must not name this machine's folders: the output folder
    becomes <out> and the checkout's own path becomes relative to it."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = text.replace(a.out, "<out>")
    return text.replace(top + "/", "").replace(top, ".")


def render(a, results, meta):
    L = []
    P = L.append
    P(f"# TPC-H SF {a.sf} in PostgreSQL {os.environ.get('PG_MAJOR', '15')}: stock against libbuffile (generated by pg-bench.sh)")
    P("")
    P(f"Command: `{a.command}`  ")
    P(f"Rounds: {a.rounds}; seed {a.seed}; statement_timeout {a.timeout} s; "
      f"queries {a.queries}; generated {time.strftime('%Y-%m-%d %H:%M:%S')}  ")
    for k, v in meta.items():
        P(f"{k}: {v}  ")
    P("")
    P("Times: per query the median of the rounds in seconds for the reference, and for each "
      "other configuration the geometric mean of its per-round ratios to the reference with "
      "the 95% Student t interval on the log ratios (tpch/exec/paired.c: pd_ratio; `~`: the "
      "interval holds 1.0). Suites: pd_suite over the rounds. Bytes: medians over the rounds "
      "of pg_stat_database.temp_bytes deltas (MiB); `x` = reference bytes / these bytes.")
    for res in results:
        cfgs = res["configs"]
        ref = res["reference"]
        P("")
        P(f"## Phase {res['phase']}: {res['title']} (reference: {ref})")
        P("")
        # the throttled phase: stock's and none's unthrottled medians from w0, for context
        w0 = None
        if res["phase"] == "throttled":
            w0 = next((r for r in results if r["phase"] == "w0"), None)
        ctx = ["stock", "none"] if w0 else []
        P("| query | spills | rows | " + f"{ref} s | " +
          " | ".join(f"{c} / {ref}" for c in cfgs[1:]) + " | answers |" +
          "".join(f" {c} s unthrottled (w0) |" for c in ctx))
        P("|---|---|---:|---:|" + "---:|" * (len(cfgs) - 1) + "---|" + "---:|" * len(ctx))
        for e in res["queries"]:
            q = e["query"]
            if e["status"] == "warm-up only":
                P(f"| Q{q} | {'yes' if e['spills'] else 'no'} | | {e['warm_s']:.2f} (warm-up; "
                  f"{mib(e['warm_bytes'])} MiB) |" + " |" * len(cfgs))
                continue
            if e["status"] in ("timeout", "error", "not run"):
                extra = f" after {e.get('warm_s', 0):.0f} s" if e["status"] == "timeout" else ""
                P(f"| Q{q} | {e['status']}{extra} in the warm-up: left out |" + " |" * (len(cfgs) + 2))
                continue
            per = e["per"]
            cells = [f"Q{q}", "yes" if e["spills"] else "no", str(e.get("rows", ""))]
            cells.append(f"{per[ref]['time_s']:.2f}" if ref in per else "-")
            for c in cfgs[1:]:
                cells.append(fmt_iv(e["ratios"][c]) if "ratios" in e else "-")
            st = e["answers"] + ("" if e["status"] == "ok" else f" ({e['status']})")
            if not e["stat_vs_log"]:
                st += "; pg_stat != log"
            cells.append(st)
            if w0:
                e0 = next((x for x in w0["queries"] if x["query"] == q), {})
                for c in ctx:
                    p0 = e0.get("per", {}).get(c)
                    cells.append(f"{p0['time_s']:.2f}" if p0 else "-")
            P("| " + " | ".join(cells) + " |")
        for name in ("spilling", "control"):
            qs = res[name]
            cells = [f"**{name} geomean**", f"{len(qs)} queries", "", ""]
            for c in cfgs[1:]:
                cells.append("**" + fmt_iv(res["suites"][name][c]) + "**")
            cells.append("")
            cells += [""] * len(ctx)
            P("| " + " | ".join(cells) + " |")
        P("")
        P("Temp bytes (MiB, physical, pg_stat_database) and logical MiB (log lines), spilling queries:")
        P("")
        P("| query | " + " | ".join(f"{c} MiB" for c in cfgs) + " | " +
          " | ".join(f"{c} logical" for c in cfgs if c != "stock") + " | files |")
        P("|---|" + "---:|" * len(cfgs) + "---:|" * len([c for c in cfgs if c != "stock"]) + "---|")
        for e in res["queries"]:
            if not e.get("spills") or "per" not in e:
                continue
            per = e["per"]
            cells = [f"Q{e['query']}"]
            for c in cfgs:
                if c not in per:
                    cells.append("-")
                    continue
                s = mib(per[c]["temp_bytes"])
                lo, hi = per[c]["bytes_range"]
                if hi > lo * 1.01:
                    s += f" ({mib(lo)}-{mib(hi)})"
                if c != ref and per[c]["temp_bytes"] > 0:
                    s += f" ({per[ref]['temp_bytes'] / per[c]['temp_bytes']:.2f}x)"
                cells.append(s)
            for c in cfgs:
                if c != "stock":
                    cells.append(mib(per[c]["logical"]) if c in per else "-")
            cells.append("/".join(f"{per[c]['temp_files']:.0f}" for c in cfgs if c in per))
            P("| " + " | ".join(cells) + " |")
        if res["bytes"]:
            by = res["bytes"]
            cells = ["**total**"]
            for c in cfgs:
                s = mib(by[c]["total"])
                if c != ref:
                    s += f" ({by[c]['fewer_total']:.2f}x; geomean {by[c]['fewer_gmean']:.2f}x)"
                cells.append("**" + s + "**")
            for c in cfgs:
                if c != "stock":
                    cells.append(mib(by[c]["logical"]))
            cells.append("")
            P("| " + " | ".join(cells) + " |")
        if "auto" in cfgs:
            P("")
            P("auto: extents written per codec (none/lz4/zstd/zlib, summed over the rounds) and "
              "its last decision in the last process that used it:")
            P("")
            for e in res["queries"]:
                if e.get("spills") and "per" in e and "auto" in e["per"]:
                    p = e["per"]["auto"]
                    P(f"- Q{e['query']}: {'/'.join(map(str, p['auto_blocks']))}; {p['auto_reason']}")
    return "\n".join(L) + "\n"


def time_verdict(iv, limit):
    """A time target holds only if the whole interval is under it, fails only if the
    whole interval is over it; otherwise the run cannot tell."""
    est, lo, hi = iv[:3]
    if hi <= limit:
        return "PASS"
    if lo > limit:
        return "MISS"
    return f"not resolved (the interval holds {limit}; point estimate {'within' if est <= limit else 'over'})"


def bytes_verdict(by, limit):
    g, t = by["fewer_gmean"], by["fewer_total"]
    return (f"{g:.2f}x fewer temp bytes by the per-query geomean ({'PASS' if g >= limit else 'MISS'}), "
            f"{t:.2f}x by the totals ({'PASS' if t >= limit else 'MISS'}); target >= {limit}x")


def targets(results):
    """The issue's targets per unthrottled phase: time from the intervals, bytes both ways."""
    L = []
    for res in results:
        if res["phase"] == "throttled" or res["reference"] != "stock":
            continue
        s = res["suites"]["spilling"]
        by = res["bytes"]
        if not res["spilling"]:
            L.append(f"{res['phase']}: no spilling query measured: no target evaluated")
            continue
        ph = res["phase"]
        if "none" in s:
            L.append(f"{ph}: none vs stock, spilling geomean {fmt_iv(s['none'])}; "
                     f"target <= 1.03: {time_verdict(s['none'], 1.03)}")
        if "lz4" in s and "lz4" in by:
            L.append(f"{ph}: lz4 {bytes_verdict(by['lz4'], 2.5)}; time {fmt_iv(s['lz4'])}, "
                     f"target <= 1.05: {time_verdict(s['lz4'], 1.05)}")
        if "zstd" in s and "zstd" in by:
            L.append(f"{ph}: zstd {bytes_verdict(by['zstd'], 3.5)}; time {fmt_iv(s['zstd'])} (no time target)")
        if "auto" in s and "auto" in by:
            L.append(f"{ph}: auto {by['auto']['fewer_gmean']:.2f}x fewer temp bytes "
                     f"(geomean), time {fmt_iv(s['auto'])} (no target)")
    return L


def plan(a, pd, phases):
    """Cached runs and an estimate of the time left."""
    known = {}
    for ph in phases:
        for q in ph.queries:
            d = os.path.join(a.out, "runs", ph.name, f"q{q:02d}")
            if os.path.isdir(d):
                for fn in os.listdir(d):
                    r = json.load(open(os.path.join(d, fn)))
                    if r["status"] == "ok":
                        known.setdefault((ph.name, q), []).append(r["wall_s"])
                        known.setdefault(("any", q), []).append(r["wall_s"])
    total_left, total_runs = 0.0, 0
    for ph in phases:
        left = 0.0
        nleft = 0
        for q in ph.queries:
            w = load_cached(a, ph, q, "warm", ph.configs[0])
            per = known.get((ph.name, q)) or known.get(("any", q))
            est = median(per) if per else float("nan")
            if w is None:
                nleft += 1
                left += est
            elif w["status"] != "ok":
                continue
            for rnd in range(a.rounds):
                for c in ph.configs:
                    if load_cached(a, ph, q, f"r{rnd}-{c}", c) is None:
                        nleft += 1
                        # patched runs cost ~ the same as stock's; throttled ones more (unknown)
                        left += est
        total_left += left if not math.isnan(left) else 0
        total_runs += nleft
        print(f"{ph.name}: {len(ph.queries)} queries x {len(ph.configs)} configurations x "
              f"{a.rounds} rounds (+ warm-ups); {nleft} runs left, about {left / 60:.0f} min"
              + (" (some queries never timed: nan)" if math.isnan(left) else ""))
    print(f"total: {total_runs} runs left, about {total_left / 60:.0f} min "
          "(plus per run ~0.1 s of bookkeeping; throttled runs take longer than this estimate)")


def main():
    ap = argparse.ArgumentParser()
    for f in ("sf", "workers", "configs", "io-limit", "queries", "out", "qdir", "command", "sock",
              "psql", "user", "stock-log", "patched-log", "stock-bin", "patched-bin"):
        ap.add_argument("--" + f, default="")
    for f in ("rounds", "timeout", "seed", "stock-port", "patched-port"):
        ap.add_argument("--" + f, type=int, default=0)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--plan", action="store_true")
    a = ap.parse_args()
    a.qlist = parse_queries(a.queries)
    pd = Paired(os.path.join(a.out, "libpaired.so"))
    # tpch/exec/tests/test_paired.c's known interval, through ctypes
    iv = pd.ratio([10, 11, 9, 10.5, 9.5], [10] * 5)
    if max(abs(x - y) for x, y in zip(iv[:3], (0.997492456, 0.903950987, 1.100713660))) > 1e-6:
        sys.exit(f"pg_bench.py: libpaired.so gives {iv[:3]} for test_paired.c's known interval")
    phases = make_phases(a)
    if a.plan:
        plan(a, pd, phases)
        return 0
    if not a.report_only:
        runner = Runner(a)
        meta_run = {"load_start": os.getloadavg()}
        for ph in phases:
            if ph.name == "throttled":
                w0 = [p for p in phases if p.workers == 0 and not p.io_kb]
                sp = spilled_queries(a, w0[0]) if w0 else None
                ph.queries = a.qlist if sp is None else [q for q in a.qlist if q in sp]
            run_phase(a, pd, runner, ph)
        meta_run["load_end"] = os.getloadavg()
        json.dump(meta_run, open(os.path.join(a.out, "load.json"), "w"))
    # report
    for ph in phases:
        if ph.name == "throttled":
            w0 = [p for p in phases if p.workers == 0 and not p.io_kb]
            sp = spilled_queries(a, w0[0]) if w0 else None
            ph.queries = a.qlist if sp is None else [q for q in a.qlist if q in sp]
    results = [analyse(a, pd, ph, collect(a, ph), phases[0]) for ph in phases]
    meta = {}
    try:
        meta["Machine"] = (f"{os.cpu_count()} CPUs, "
                           f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; "
                           f"{open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}")
    except (OSError, IndexError, ValueError):
        pass
    try:
        lj = json.load(open(os.path.join(a.out, "load.json")))
        meta["Load average (1 min) at start and end of the last run"] = \
            f"{lj['load_start'][0]:.2f}, {lj['load_end'][0]:.2f}"
    except (OSError, ValueError, KeyError):
        pass
    loads = []
    for ph in phases:
        for q in ph.queries:
            d = os.path.join(a.out, "runs", ph.name, f"q{q:02d}")
            if os.path.isdir(d):
                for fn in os.listdir(d):
                    loads.append(json.load(open(os.path.join(d, fn)))["load1"])
    if loads:
        meta["Load average (1 min) over the runs"] = \
            f"median {median(loads):.2f}, max {max(loads):.2f}, {len(loads)} runs"
    try:
        for line in open(os.path.join(a.out, "server-info.txt")):
            k, v = line.rstrip("\n").split(": ", 1)
            meta[k[0].upper() + k[1:]] = v
    except (OSError, ValueError):
        pass
    md = scrub_paths(a, render(a, results, meta))
    tl = targets(results)
    md += "\n## Targets\n\n" + "".join(f"- {x}\n" for x in tl)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"sf": a.sf, "rounds": a.rounds, "seed": a.seed, "timeout_s": a.timeout,
                   "command": a.command, "meta": meta, "phases": results, "targets": tl}, f, indent=1)
    print("\n".join(tl))
    print(f"report: {os.path.join(a.out, 'report.md')}")
    bad = [f"{r['phase']} Q{e['query']}" for r in results for e in r["queries"]
           if str(e.get("answers", "")).startswith("DIFFER") or str(e.get("status", "")).startswith("failed")
           or e.get("status") in ("incomplete", "error")]
    if bad:
        print("answers differ, runs failed or missing: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

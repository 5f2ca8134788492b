#!/usr/bin/python3
"""Runs and reports pg-bench.sh's TPC-H phases in PostgreSQL (PG_MAJOR, 15 by default) with
temp_file_compression. pg-bench.sh prepares the builds, the data and the servers, then calls
this; alone it needs the same flags (see pg-bench.sh) and PYTHONPATH=tpch/report.

Configurations (pg_measure.Config): `stock` is the stock binary's server on a copy of the
cluster; every other configuration is a value of temp_file_compression in ONE patched
server, set per session (`off` is PostgreSQL's own BufFile code), so caches, plans and data
are the same for all of them.

Phases: one per (work_mem, device, workers); a device is the page cache or slowfs at a
rate (pg_measure.Device). A slowfs phase takes the queries that spilled in the page-cache
phase of the same work_mem and workers, when that phase has run.

Method (spillbench's paired mode, docs/executor.md): per phase and query, one warm-up run
of the reference configuration (the first; not counted; its answer is the reference, and
a query that hits statement_timeout there is left out and named), EXPLAIN under every
configuration (the plans must be the same), then R rounds, each running every
configuration once in an order shuffled per round and query (pd_shuffle). Wall and CPU
time ratios to the reference: pd_ratio per query, pd_suite over the spilling queries (and,
as the noise yardstick, over the queries that spill nothing). What a run records:
pg_measure.Runner.measure. Every run is cached (OUT/runs/<phase>/qNN/<tag>.json): a second
invocation resumes; the statement timeout is not part of a run's identity, but a run that
timed out under a shorter timeout is run again, and a query whose warm-up finished under a
longer timeout than the phase's keeps that one for its rounds (so one query can be given
more time: --queries=9 --timeout=5400 once, and later invocations continue it)."""

import argparse
import json
import os
import sys
import time
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from pg_measure import (Device, Runner, Server, Slowfs, check_configs, check_cpu,  # noqa: E402
                        cpu_check_lines, load_run, median, parse_configs, save_json, scrub_paths)
from tpch_report import stats  # noqa: E402


def fmt_iv(iv):
    """A ratio as every report writes it, to 3 places (the targets are 2% wide)."""
    return stats.fmt_ratio(iv, digits=3)

NQ = 22


def parse_queries(s):
    out = []
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    bad = [q for q in out if not 1 <= q <= NQ]
    if bad:
        sys.exit(f"pg_bench.py: --queries: {bad[0]} is not a TPC-H query number")
    return sorted(set(out))


class Phase:
    def __init__(self, workers, work_mem, device, configs, queries, timeout):
        self.workers, self.work_mem, self.device = workers, work_mem, device
        self.timeout = timeout
        self.configs, self.queries = configs, queries
        self.name = f"w{workers}-{work_mem}-{device.name}"
        self.title = (f"work_mem {work_mem}, max_parallel_workers_per_gather = {workers}, "
                      f"{device.title()}")

    def opts(self, cfg):
        """The session's settings: a run's identity in the cache (the timeout is not)."""
        g = [f"max_parallel_workers_per_gather={self.workers}", f"work_mem={self.work_mem}"]
        g += self.device.gucs() + cfg.gucs()
        return " ".join("-c " + x for x in g)


def make_phases(a):
    cfgs = parse_configs(a.configs)
    phases = []
    for wm in a.work_mem.split(","):
        for dev in a.devices.split(","):
            for w in a.workers.split(","):
                d = Device(dev)
                phases.append(Phase(int(w), wm, d, cfgs, a.qlist, a.fuse_timeout if d.rate else a.timeout))
    return phases


def run_dir(a, phase, q):
    return os.path.join(a.out, "runs", phase.name, f"q{q:02d}")


def query_timeout(a, phase, q):
    """The statement timeout of a query's runs: the phase's, or the longer one its
    warm-up was given (a query measured once under a longer timeout keeps it in every
    later invocation, so its rounds do not time out where its warm-up did not)."""
    w = load_run(os.path.join(run_dir(a, phase, q), "warm.json"), phase.opts(phase.configs[0]), 0)
    return max(phase.timeout, w["timeout_s"] if w and w["status"] == "ok" else 0)


def cached(a, phase, q, tag, cfg):
    # only a run (not a report) re-runs what timed out under a shorter timeout
    timeout = 0 if a.report_only or a.plan else query_timeout(a, phase, q)
    return load_run(os.path.join(run_dir(a, phase, q), tag + ".json"), phase.opts(cfg), timeout)


def page_twin(phases, phase):
    return next((p for p in phases if p.device.rate is None and p.workers == phase.workers
                 and p.work_mem == phase.work_mem), None)


def spilled_queries(a, phase):
    """Queries with temp files in any cached run of the phase (None: never run)."""
    d = os.path.join(a.out, "runs", phase.name)
    if not os.path.isdir(d):
        return None
    out = set()
    for q in a.qlist:
        qd = run_dir(a, phase, q)
        for fn in (os.listdir(qd) if os.path.isdir(qd) else []):
            if fn.endswith(".json") and not fn.startswith("plan"):
                r = json.load(open(os.path.join(qd, fn)))
                if r.get("temp_files", 0) > 0 or r.get("log_files", 0) > 0:
                    out.add(q)
    return out


def resolve_queries(a, phases):
    """A slowfs phase runs the queries its page-cache twin found spilling."""
    for ph in phases:
        if ph.device.rate:
            twin = page_twin(phases, ph)
            sp = spilled_queries(a, twin) if twin else None
            ph.queries = a.qlist if sp is None else [q for q in a.qlist if q in sp]


def phase_order(a, phase, q, rnd):
    seed = a.seed + (zlib.crc32(phase.name.encode()) & 0xffff)
    return [phase.configs[i] for i in stats.shuffle(seed, rnd * (NQ + 1) + q, len(phase.configs))]


# --- running ----------------------------------------------------------------------------
class Bench:
    def __init__(self, a):
        self.a = a
        self.servers = {"patched": Server("patched", a.patched_port, a.patched_log, a.patched_data)}
        if a.stock_port:
            self.servers["stock"] = Server("stock", a.stock_port, a.stock_log, a.stock_data)
        self.slowfs = Slowfs(a.slowfs, a.slow_dir, a.out) if a.slowfs else None
        self.runner = Runner(a.psql, a.sock, a.user, "tpch", os.path.join(a.out, "tmp"), self.slowfs)

    def device(self, dev):
        if dev.rate:
            if not self.slowfs:
                sys.exit("pg_bench.py: a slowfs device without --slowfs")
            self.slowfs.ensure(dev.rate)

    def run(self, phase, cfg, q, tag):
        qfile = os.path.join(self.a.qdir, f"{q}.sql")
        base = os.path.join(self.runner.tmp, f"{phase.name}-q{q}-{tag}")
        # a run cancelled between Q15's create and drop leaves the view
        pre = ("set client_min_messages = warning;\ndrop view if exists revenue0;\n"
               "reset client_min_messages;\n") if q == 15 else ""
        s = self.runner.script(base, qfile, pre)
        self.device(phase.device)
        res = self.runner.measure(self.servers[cfg.server], [s], phase.opts(cfg),
                                  phase.device, query_timeout(self.a, phase, q))
        res.update({"phase": phase.name, "query": q, "config": cfg.name, "tag": tag})
        return res, s[3]

    def plan(self, phase, cfg, q):
        """EXPLAIN of the query's statements under cfg (in a transaction rolled back)."""
        text = open(os.path.join(self.a.qdir, f"{q}.sql")).read()
        stmts = [x.strip() for x in text.split(";") if x.strip()]
        body = ["begin;"] + (["drop view if exists revenue0;"] if q == 15 else [])
        body += [("explain " + x if x.lower().startswith("select") else x) + ";" for x in stmts]
        body.append("rollback;")
        r = self.runner.psql(self.servers[cfg.server], "-A", "-t", "-c", "\n".join(body),
                             opts=phase.opts(cfg), check=False)
        return r.stdout if r.returncode == 0 else "EXPLAIN failed: " + r.stderr

    def run_phase(self, phase):
        a = self.a
        ref = phase.configs[0]
        t_phase = time.monotonic()
        print(f"[{phase.name}] {phase.title}: {len(phase.queries)} queries; " + estimate(a, [phase]),
              file=sys.stderr, flush=True)
        for qi, q in enumerate(phase.queries):
            d = run_dir(a, phase, q)
            w = cached(a, phase, q, "warm", ref)
            if w is None:
                w, ansf = self.run(phase, ref, q, "warm")
                keep = os.path.join(a.out, "answers", phase.name, f"q{q:02d}.out")
                os.makedirs(os.path.dirname(keep), exist_ok=True)
                if os.path.exists(ansf):
                    os.replace(ansf, keep)
                save_json(os.path.join(d, "warm.json"), w)
            prog = f"[{phase.name} {qi + 1}/{len(phase.queries)}] Q{q}"
            if w["status"] != "ok":
                print(f"{prog}: warm-up {w['status']} after {w['wall_s']:.0f} s: left out",
                      file=sys.stderr, flush=True)
                continue
            for c in phase.configs:
                pf = os.path.join(d, f"plan-{c.label}.txt")
                if not os.path.exists(pf):
                    with open(pf, "w") as f:
                        f.write(self.plan(phase, c, q))
            for rnd in range(a.rounds):
                for cfg in phase_order(a, phase, q, rnd):
                    tag = f"r{rnd}-{cfg.label}"
                    if cached(a, phase, q, tag, cfg) is not None:
                        continue
                    res, ansf = self.run(phase, cfg, q, tag)
                    res["same_answer"] = res.get("answer") == w.get("answer")
                    if not res["same_answer"] and os.path.exists(ansf):
                        os.replace(ansf, os.path.join(a.out, "answers", phase.name,
                                                      f"q{q:02d}-{tag}.out"))
                    save_json(os.path.join(d, tag + ".json"), res)
                    flag = "" if res["same_answer"] else "  ANSWER DIFFERS"
                    print(f"{prog} round {rnd + 1}/{a.rounds} {cfg.label:7s} {res['status']:7s} "
                          f"{res['ms'] / 1000:8.2f} s  cpu {res['cpu_s']:8.2f} s  temp "
                          f"{res['temp_bytes'] / 2**20:9.1f} MiB  load {res['load1']:.2f}{flag}",
                          file=sys.stderr, flush=True)
        print(f"[{phase.name}] done in {time.monotonic() - t_phase:.0f} s", file=sys.stderr, flush=True)


# --- analysis --------------------------------------------------------------------------
def collect(a, phase):
    data = {}
    for q in phase.queries:
        ref = phase.configs[0]
        runs = {c.label: [cached(a, phase, q, f"r{r}-{c.label}", c) for r in range(a.rounds)]
                for c in phase.configs}
        plans = {}
        for c in phase.configs:
            try:
                plans[c.label] = open(os.path.join(run_dir(a, phase, q), f"plan-{c.label}.txt")).read()
            except OSError:
                pass
        data[q] = {"warm": cached(a, phase, q, "warm", ref), "runs": runs, "plans": plans}
    return data


def per_config(rs, label):
    """Medians of a configuration's ok runs of one query."""
    p = {"time_s": median([r["ms"] / 1000 for r in rs]),
         "cpu_s": median([r["cpu_s"] for r in rs]),
         "temp_bytes": median([r["temp_bytes"] for r in rs]),
         "temp_files": median([r["temp_files"] for r in rs]),
         "logical": median([r["log_logical"] for r in rs]),
         "bytes_range": [min(r["temp_bytes"] for r in rs), max(r["temp_bytes"] for r in rs)]}
    if all("device" in r for r in rs):
        p["device"] = {k: median([r["device"][k] for r in rs]) for k in rs[0]["device"]}
    if label == "auto":
        blocks = [0, 0, 0, 0]
        reasons = []
        for r in rs:
            for i, b in enumerate(r.get("auto_blocks", [0, 0, 0, 0])):
                blocks[i] += b
            reasons += r.get("auto_reasons", [])
        p["auto_blocks"] = blocks
        p["auto_reason"] = reasons[-1] if reasons else ""
    return p


def analyse(a, phase, data, base=None):
    labels = [c.label for c in phase.configs]
    ref = labels[0]
    out = {"phase": phase.name, "title": phase.title, "configs": labels, "reference": ref,
           "workers": phase.workers, "work_mem": phase.work_mem, "device": phase.device.name,
           "queries": []}
    complete = []
    for q in phase.queries:
        d = data[q]
        w = d["warm"]
        e = {"query": q}
        out["queries"].append(e)
        if w is None:
            e["status"] = "not run"
            continue
        if w["status"] != "ok":
            e["status"], e["warm_s"] = w["status"], w["wall_s"]
            continue
        allruns = [r for c in labels for r in d["runs"][c]]
        # rounds 0 .. rq-1 are complete (every configuration ran, and ran ok)
        rq = next((r for r in range(a.rounds) if any(d["runs"][c][r] is None or
                                                     d["runs"][c][r]["status"] != "ok" for c in labels)),
                  a.rounds)
        e["rounds"] = rq
        if any(r is not None and r["status"] != "ok" for r in allruns):
            e["status"] = "failed: " + ", ".join(sorted({f"{r['config']} {r['status']}" for r in allruns
                                                        if r is not None and r["status"] != "ok"}))
        elif rq < a.rounds:
            e["status"] = f"incomplete ({rq} of {a.rounds} rounds)"
        else:
            e["status"] = "ok"
        done = [r for r in allruns if r is not None]
        e["spills"] = w["temp_files"] > 0 or any(r["temp_files"] > 0 or r["log_files"] > 0 for r in done)
        e["answers"] = "identical" if all(r.get("same_answer") for r in done) else "DIFFER"
        if base is not None and base is not phase:
            bw = cached(a, base, q, "warm", base.configs[0])
            if bw is not None and bw["status"] == "ok" and bw.get("answer") != w.get("answer"):
                e["answers"] = f"DIFFER from {base.name}'s {base.configs[0].label}"
        plans = set(d["plans"].values())
        e["plans"] = ("-" if not plans else "same" if len(plans) == 1 and len(d["plans"]) == len(labels)
                      else "DIFFER")
        e["stat_vs_log"] = all(r["stat_matches_log"] for r in done) and w["stat_matches_log"]
        e["rows"] = w.get("rows")
        e["per"] = {}
        for c in labels:
            rs = [r for r in d["runs"][c] if r is not None and r["status"] == "ok"]
            if rs:
                e["per"][c] = per_config(rs, c)
        if rq >= 2:
            complete.append(q)
            runs = d["runs"]
            e["ratios"] = {kind: {c: stats.ratio([runs[c][r][key] for r in range(rq)],
                                                 [runs[ref][r][key] for r in range(rq)])
                                  for c in labels[1:]}
                           for kind, key in (("wall", "ms"), ("cpu", "cpu_s"))}
    # Suites over the rounds every query in them has: the fewest among the queries with
    # two rounds or more (a phase under way or extended reports what it has).
    byq = {e["query"]: e for e in out["queries"]}
    rs = min((byq[q]["rounds"] for q in complete), default=0)
    out["suite_rounds"] = rs
    spill = [q for q in complete if byq[q]["spills"]]
    control = [q for q in complete if not byq[q]["spills"]]
    out["spilling"], out["control"] = spill, control
    runs = {q: data[q]["runs"] for q in complete}
    out["suites"] = {}
    for name, qs in (("spilling", spill), ("control", control)):
        out["suites"][name] = {
            kind: {c: stats.suite_interval({(r, q, cc): runs[q][cc][r][key] for q in qs
                                            for r in range(rs) for cc in (ref, c)}, qs, c, ref)
                   for c in labels[1:]}
            for kind, key in (("wall", "ms"), ("cpu", "cpu_s"))}
    by = {}
    for c in labels:
        qs = [q for q in spill if c in byq[q]["per"]]
        if len(qs) != len(spill) or not spill:
            continue
        tot = sum(byq[q]["per"][c]["temp_bytes"] for q in spill)
        by[c] = {"total": tot, "logical": sum(byq[q]["per"][c]["logical"] for q in spill)}
        if c != ref and ref in by:
            by[c]["saved_total"] = 1 - tot / by[ref]["total"] if by[ref]["total"] else float("nan")
    out["bytes"] = by
    return out


# --- report ------------------------------------------------------------------------------
def mib(b):
    return f"{b / 2**20:.1f}"


def render_phase(res, P):
    labels, ref = res["configs"], res["reference"]
    others = labels[1:]
    P("")
    P(f"## Phase {res['phase']}: {res['title']} (reference: {ref})")
    P("")
    P("| query | spills | rows | " + f"{ref} s | {ref} CPU s | " +
      " | ".join(f"{c} wall / {ref} | {c} CPU / {ref}" for c in others) + " | plans | answers |")
    P("|---|---|---:|---:|---:|" + "---:|---:|" * len(others) + "---|---|")
    for e in res["queries"]:
        q = e["query"]
        blanks = " |" * (4 + 2 * len(others))
        if e["status"] in ("timeout", "error", "not run"):
            extra = f" after {e.get('warm_s', 0):.0f} s" if e["status"] == "timeout" else ""
            P(f"| Q{q} | {e['status']}{extra} in the warm-up: left out |" + blanks)
            continue
        per = e["per"]
        cells = [f"Q{q}", "yes" if e["spills"] else "no", str(e.get("rows", ""))]
        cells.append(f"{per[ref]['time_s']:.2f}" if ref in per else "-")
        cells.append(f"{per[ref]['cpu_s']:.2f}" if ref in per else "-")
        for c in others:
            for kind in ("wall", "cpu"):
                cells.append(fmt_iv(e["ratios"][kind][c]) if "ratios" in e else "-")
        st = e["answers"] + ("" if e["status"] == "ok" else f" ({e['status']})")
        if not e["stat_vs_log"]:
            st += "; pg_stat != log"
        cells += [e["plans"], st]
        P("| " + " | ".join(cells) + " |")
    for name in ("spilling", "control"):
        cells = [f"**{name} geomean**", f"{len(res[name])} queries", f"{res['suite_rounds']} rounds", "", ""]
        for c in others:
            for kind in ("wall", "cpu"):
                cells.append("**" + fmt_iv(res["suites"][name][kind][c]) + "**")
        P("| " + " | ".join(cells + ["", ""]) + " |")
    P("")
    P(f"Temp space per spilling query (MiB on disk, pg_stat_database; in parentheses the share "
      f"saved against {ref}) and the logical MiB written (log_temp_files):")
    P("")
    P("| query | " + " | ".join(f"{c} MiB" for c in labels) + " | logical MiB | files |")
    P("|---|" + "---:|" * len(labels) + "---:|---|")
    for e in res["queries"]:
        if not e.get("spills") or "per" not in e:
            continue
        per = e["per"]
        cells = [f"Q{e['query']}"]
        for c in labels:
            if c not in per:
                cells.append("-")
                continue
            s = mib(per[c]["temp_bytes"])
            lo, hi = per[c]["bytes_range"]
            if hi > lo * 1.01:
                s += f" ({mib(lo)}-{mib(hi)})"
            if c != ref and ref in per and per[ref]["temp_bytes"] > 0:
                s += f" ({100 * (1 - per[c]['temp_bytes'] / per[ref]['temp_bytes']):.0f}%)"
            cells.append(s)
        cells.append(mib(per[ref]["logical"]) if ref in per else "-")
        cells.append("/".join(f"{per[c]['temp_files']:.0f}" for c in labels if c in per))
        P("| " + " | ".join(cells) + " |")
    by = res["bytes"]
    if ref in by:
        cells = ["**total**"]
        for c in labels:
            s = mib(by[c]["total"]) if c in by else "-"
            if c in by and c != ref:
                s += f" ({100 * by[c]['saved_total']:.0f}%)"
            cells.append("**" + s + "**")
        P("| " + " | ".join(cells + [mib(by[ref]["logical"]), ""]) + " |")
    dev = [e for e in res["queries"] if e.get("per") and any("device" in p for p in e["per"].values())]
    if dev:
        P("")
        P("The device's traffic per spilling query (MiB written + read through slowfs, medians) and "
          "its daemon's CPU seconds (not in the backend's CPU time):")
        P("")
        P("| query | " + " | ".join(f"{c} MiB w+r | {c} slowfs CPU s" for c in labels) + " |")
        P("|---|" + "---:|---:|" * len(labels))
        for e in dev:
            cells = [f"Q{e['query']}"]
            for c in labels:
                dv = e["per"].get(c, {}).get("device")
                cells += ([f"{mib(dv['write_bytes'])} + {mib(dv['read_bytes'])}", f"{dv['daemon_cpu_s']:.2f}"]
                          if dv else ["-", "-"])
            P("| " + " | ".join(cells) + " |")
    if "auto" in labels:
        P("")
        P("auto: extents written per codec (none/lz4/zstd/zlib, summed over the rounds) and its "
          "last decision in the last process that used it:")
        P("")
        for e in res["queries"]:
            if e.get("spills") and "auto" in e.get("per", {}):
                p = e["per"]["auto"]
                P(f"- Q{e['query']}: {'/'.join(map(str, p['auto_blocks']))}; {p['auto_reason']}")


def render(a, results, meta, cpu_check):
    L = []
    P = L.append
    P(f"# TPC-H SF {a.sf} in PostgreSQL {os.environ.get('PG_MAJOR', '15')} with temp_file_compression (generated by pg-bench.sh)")
    P("")
    P(f"Command: `{a.command}`  ")
    P(f"Rounds: {a.rounds}; seed {a.seed}; statement_timeout {a.timeout} s (on slowfs "
      f"{a.fuse_timeout} s); queries {a.queries}; "
      f"generated {time.strftime('%Y-%m-%d %H:%M:%S')}  ")
    for k, v in meta.items():
        P(f"{k}: {v}  ")
    P("")
    P("Times: per query the median over the rounds of the reference's wall time (psql's \\timing) "
      "and CPU time (user + system of the backend and its parallel workers, /proc), and for each "
      "other configuration the geometric mean of its per-round ratios to the reference with the "
      "95% Student t interval on the log ratios (tpch/exec/paired.c: pd_ratio; an interval "
      "that holds 1.0 reads \"no measurable difference\"). Suites: pd_suite over the rounds. Plans: EXPLAIN "
      "under every configuration, compared as text.")
    if cpu_check:
        P("")
        P("CPU accounting checked against a CPU burner (md5 over a generated table; cgroup "
          "cpuacct and the backend's own /proc entry as independent measures):")
        P("")
        L.extend(cpu_check_lines(cpu_check))
    for res in results:
        render_phase(res, P)
    return "\n".join(L) + "\n"


def find(labels, *names):
    return next((x for x in names if x in labels), None)


def targets(results):
    """The targets at scale (lz4's CPU and wall time, lz4's and zstd's bytes saved against off;
    off against the stock binary), per phase, each stated met, missed or not resolved with its
    figure."""
    L = []
    for res in results:
        labels, ref, ph = res["configs"], res["reference"], res["phase"]
        if not res["spilling"]:
            continue
        s, by = res["suites"]["spilling"], res["bytes"]
        lz4, zstd, pglz = find(labels, "lz4"), find(labels, "zstd-1", "zstd"), find(labels, "pglz")
        if ref == "stock" and "off" in labels:
            same_bytes = all(e["per"]["off"]["temp_bytes"] == e["per"]["stock"]["temp_bytes"]
                             for e in res["queries"] if e.get("per") and "off" in e["per"] and "stock" in e["per"])
            plans = all(e.get("plans") == "same" for e in res["queries"] if "per" in e)
            L.append(f"{ph}: off against the stock binary: plans {'the same' if plans else 'DIFFER'}, temp "
                     f"bytes {'identical' if same_bytes else 'DIFFER'} per query; wall {fmt_iv(s['wall']['off'])}, "
                     f"CPU {fmt_iv(s['cpu']['off'])} (within noise when the interval holds 1)")
            continue
        if ref != "off":
            continue
        if lz4 and res["device"] == "page":
            iv = s["cpu"][lz4]
            hw = iv.halfwidth() if iv.n >= 2 else float("nan")
            v = stats.target_text(iv, 1.02)
            if v == stats.MET and not hw <= 0.02:
                v = f"{stats.NOT_RESOLVED} (half-width {100 * hw:.1f}% > 2%)"
            L.append(f"{ph}: lz4 CPU time / off over the spilling queries {fmt_iv(iv)} "
                     f"(half-width {100 * hw:.1f}%); target <= 1.02 with half-width <= 2%: {v}")
        for c, lim in ((lz4, 0.55), (zstd, 0.65)):
            if c and c in by:
                sv = by[c]["saved_total"]
                L.append(f"{ph}: {c} saves {100 * sv:.1f}% of off's temp bytes over the spilling "
                         f"queries; target >= {100 * lim:.0f}%: {stats.MET if sv >= lim else stats.MISSED}")
        if lz4 and res["device"] == "fuse200MB":
            L.append(f"{ph}: lz4 wall time / off {fmt_iv(s['wall'][lz4])}; target <= 0.80: "
                     f"{stats.target_text(s['wall'][lz4], 0.80)}")
        if pglz:
            worst = max((e["ratios"]["wall"][pglz][0], e["query"]) for e in res["queries"]
                        if "ratios" in e and e["query"] in res["spilling"])
            L.append(f"{ph}: pglz wall time / off {fmt_iv(s['wall'][pglz])} over the spilling queries, "
                     f"at most {worst[0]:.2f}x (Q{worst[1]}), against Tomas Vondra's 'about doubling'")
    return L


def estimate(a, phases):
    """Runs left and a time estimate from the runs cached so far (any phase's median wall
    time for the same query where this phase has none)."""
    known = {}
    root = os.path.join(a.out, "runs")
    for pn in (os.listdir(root) if os.path.isdir(root) else []):
        for qd in os.listdir(os.path.join(root, pn)):
            for fn in os.listdir(os.path.join(root, pn, qd)):
                if fn.endswith(".json"):
                    r = json.load(open(os.path.join(root, pn, qd, fn)))
                    if r.get("status") == "ok":
                        known.setdefault((pn, qd), []).append(r["wall_s"])
                        known.setdefault(("any", qd), []).append(r["wall_s"])
    left, n, unknown = 0.0, 0, 0
    for ph in phases:
        for q in ph.queries:
            qd = f"q{q:02d}"
            per = known.get((ph.name, qd)) or known.get(("any", qd))
            w = cached(a, ph, q, "warm", ph.configs[0])
            if w is not None and w["status"] != "ok":
                continue
            todo = (w is None) + sum(cached(a, ph, q, f"r{r}-{c.label}", c) is None
                                     for r in range(a.rounds) for c in ph.configs)
            n += todo
            if per:
                left += todo * median(per)
            elif todo:
                unknown += 1
    s = f"{n} runs left, about {left / 60:.0f} min"
    if unknown:
        s += f" plus {unknown} queries never timed (up to the timeout a run)"
    return s


def main():
    ap = argparse.ArgumentParser()
    for f in ("sf", "workers", "work-mem", "configs", "devices", "queries", "out", "qdir", "command",
              "sock", "psql", "user", "stock-log", "patched-log", "stock-data", "patched-data",
              "slowfs", "slow-dir"):
        ap.add_argument("--" + f, default="")
    for f in ("rounds", "timeout", "fuse-timeout", "seed", "stock-port", "patched-port"):
        ap.add_argument("--" + f, type=int, default=0)
    for f in ("report-only", "plan", "check-cpu"):
        ap.add_argument("--" + f, action="store_true")
    a = ap.parse_args()
    a.qlist = parse_queries(a.queries)
    phases = make_phases(a)
    resolve_queries(a, phases)
    if a.plan:
        for ph in phases:
            print(f"{ph.name}: {len(ph.queries)} queries x {len(ph.configs)} configurations x "
                  f"{a.rounds} rounds: {estimate(a, [ph])}")
        print(f"total: {estimate(a, phases)}")
        return 0
    cpu_check = None
    if not a.report_only:
        bench = Bench(a)
        check_configs(bench.runner, bench.servers, phases[0].configs)
        try:
            if a.check_cpu:
                r2 = Runner(a.psql, a.sock, a.user, "postgres", bench.runner.tmp, bench.slowfs)
                cpu_check = check_cpu(r2, bench.servers["patched"], a.out, Device("page"))
            load0 = os.getloadavg()
            for ph in phases:
                resolve_queries(a, phases)
                bench.run_phase(ph)
            save_json(os.path.join(a.out, "load.json"), {"load_start": load0, "load_end": os.getloadavg()})
        finally:
            if bench.slowfs:
                bench.slowfs.unmount()
    if cpu_check is None and os.path.exists(os.path.join(a.out, "cpu-check.json")):
        cpu_check = json.load(open(os.path.join(a.out, "cpu-check.json")))
    resolve_queries(a, phases)
    results = [analyse(a, ph, collect(a, ph), phases[0]) for ph in phases]
    meta = machine_meta(a, phases)
    md = scrub_paths(a.out, render(a, results, meta, cpu_check))
    tl = targets(results)
    md += "\n## Targets\n\n" + "".join(f"- {x}\n" for x in tl)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(md)
    save_json(os.path.join(a.out, "results.json"),
              {"sf": a.sf, "rounds": a.rounds, "seed": a.seed, "timeout_s": a.timeout,
               "fuse_timeout_s": a.fuse_timeout,
               "command": a.command, "meta": meta, "phases": results, "targets": tl,
               "cpu_check": cpu_check})
    import pgcharts  # matplotlib only once there is something to draw
    pgcharts.tpch_charts(results, os.path.join(a.out, "charts"), f"SF {a.sf}")
    print("\n".join(tl))
    print(f"report: {os.path.join(a.out, 'report.md')}")
    bad = [f"{r['phase']} Q{e['query']}" for r in results for e in r["queries"]
           if str(e.get("answers", "")).startswith("DIFFER") or e.get("plans") == "DIFFER"
           or str(e.get("status", "")).startswith(("failed", "incomplete")) or e.get("status") == "error"]
    if bad:
        print("answers or plans differ, runs failed or missing: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


def machine_meta(a, phases):
    meta = {}
    try:
        meta["Machine"] = (f"{os.cpu_count()} CPUs, "
                           f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; "
                           f"{open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}")
    except (OSError, IndexError, ValueError):
        pass
    loads = []
    for ph in phases:
        for q in ph.queries:
            d = run_dir(a, ph, q)
            for fn in (os.listdir(d) if os.path.isdir(d) else []):
                if fn.endswith(".json"):
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
    return meta


if __name__ == "__main__":
    sys.exit(main())

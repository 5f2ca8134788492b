#!/usr/bin/python3
"""Runs and reports pg-bench-hashmatrix.sh's hash-join matrix: a hash join that spills, at
several sizes, compressibilities and numbers of concurrent connections, on several temp
devices, temp_file_compression off against the codecs, all in one patched server.
pg-bench-hashmatrix.sh prepares the build, the cluster and the server, then calls this (see
its --help for the flags).

The workload (ours, in the spirit of the pgsql-hackers thread's run-hashjoins.sh, whose
script is not reproduced): per row count N two tables,
  hm_u_N   (k, p): k = 0 .. N-1 unique, p = md5(k)                     (32 hex characters)
  hm_t_N_D (k, p): k = (i - 1) / D for i = 1 .. N, p = md5(k): each key D times in a row
and the join
  select count(*), max(t.p), max(u.p) from hm_t_N_D t join hm_u_N u on t.k = u.k
which returns N rows' worth of matches (every t row meets one u row) whatever D is, so the
join's work does not grow with D. Both sides are N rows and spill their batches; rows with
the same key hash to the same batch and were scanned one after another, so the t side's
batch files hold runs of D identical tuples: D sets how compressible half the spill is
(D = 1: md5 hex text, which lz4 barely compresses; D = 1000: nearly all repetition). No
parallel workers, merge join off, work_mem as given (4MB by default).

A cell is (rows, duplicates, connections, device); `connections` sessions run the join at
once, each in its own connection. Per cell: a warm-up run of the reference (off), EXPLAIN
under every configuration (the plans must be the same), then R rounds each running every
configuration once in a shuffled order (pd_shuffle). A run's time is its longest session's
\\timing, its CPU time that of all its backends (pg_measure.Runner.measure), its temp bytes
the sum over the sessions. Cached per run (OUT/runs/<configurations>/<cell>/<tag>.json):
resumable."""

import argparse
import json
import os
import sys
import time
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from pg_measure import (Device, Runner, Server, Slowfs, check_configs, config_set,  # noqa: E402
                        load_run, median, parse_configs, save_json, scrub_paths)
from tpch_report import stats  # noqa: E402


def parse_count(s):
    """1M -> 1000000, 100k -> 100000, 2500 -> 2500."""
    mult = {"k": 10**3, "M": 10**6}.get(s[-1], 1)
    return int(s[:-1] if mult > 1 else s) * mult


def count_label(n):
    return f"{n // 10**6}M" if n % 10**6 == 0 else f"{n // 10**3}k" if n % 10**3 == 0 else str(n)


class Cell:
    def __init__(self, rows, dups, conns, device, work_mem):
        self.rows, self.dups, self.conns, self.device, self.work_mem = rows, dups, conns, device, work_mem
        self.name = f"r{count_label(rows)}-d{dups}-c{conns}-{device.name}"

    def opts(self, cfg):
        g = ["max_parallel_workers_per_gather=0", "enable_mergejoin=off", f"work_mem={self.work_mem}"]
        g += self.device.gucs() + cfg.gucs()
        return " ".join("-c " + x for x in g)

    def tables(self):
        return f"hm_t_{self.rows}_{self.dups}", f"hm_u_{self.rows}"


def make_cells(a):
    cells = []
    for rows in a.rows.split(","):
        for dev in a.devices.split(","):
            for conns in a.conns.split(","):
                for d in a.dups.split(","):
                    cells.append(Cell(parse_count(rows), int(d), int(conns), Device(dev), a.work_mem))
    return cells


class Matrix:
    def __init__(self, a):
        self.a = a
        self.cfgs = parse_configs(a.configs)
        self.server = Server("patched", a.port, a.log, a.data)
        self.slowfs = Slowfs(a.slowfs, a.slow_dir, a.out) if a.slowfs else None
        self.runner = Runner(a.psql, a.sock, a.user, "hashjoin", os.path.join(a.out, "tmp"), self.slowfs)

    def cell_dir(self, cell):
        return os.path.join(self.a.out, "runs", config_set(self.cfgs), cell.name)

    def path(self, cell, tag):
        return os.path.join(self.cell_dir(cell), tag + ".json")

    def records(self, cell):
        """Every run of the cell saved so far (warm-up included), whatever its options."""
        d = self.cell_dir(cell)
        return [json.load(open(os.path.join(d, f)))
                for f in (os.listdir(d) if os.path.isdir(d) else []) if f.endswith(".json")]

    def cached(self, cell, tag, cfg):
        return load_run(self.path(cell, tag), cell.opts(cfg), self.a.timeout)

    def ensure_tables(self, cell):
        """The cell's tables, made once (their making is timed into OUT/tables.json)."""
        t, u = cell.tables()
        info_p = os.path.join(self.a.out, "tables.json")
        info = json.load(open(info_p)) if os.path.exists(info_p) else {}
        for name, key in ((u, "(i - 1)"), (t, f"((i - 1) / {cell.dups})")):
            if name in info:
                continue
            t0 = time.monotonic()
            self.runner.psql(self.server, "-c", f"drop table if exists {name}", "-c",
                             f"create table {name} as select {key}::int8 as k, md5({key}::text) as p "
                             f"from generate_series(1, {cell.rows}) i", "-c", f"vacuum (freeze, analyze) {name}")
            size = self.runner.psql(self.server, "-At", "-c", f"select pg_table_size('{name}')").stdout
            info[name] = {"seconds": time.monotonic() - t0, "bytes": int(size)}
            save_json(info_p, info)

    def query_file(self, cell):
        t, u = cell.tables()
        p = os.path.join(self.runner.tmp, f"join-{cell.rows}-{cell.dups}.sql")
        with open(p, "w") as f:
            f.write(f"select count(*), max(t.p), max(u.p) from {t} t join {u} u on t.k = u.k;\n")
        return p

    def run(self, cell, cfg, tag):
        qf = self.query_file(cell)
        scripts = [self.runner.script(os.path.join(self.runner.tmp, f"{cell.name}-{tag}-s{i}"), qf)
                   for i in range(cell.conns)]
        if cell.device.rate:
            self.slowfs.ensure(cell.device.rate)
        res = self.runner.measure(self.server, scripts, cell.opts(cfg), cell.device, self.a.timeout)
        res.update({"cell": cell.name, "config": cfg.name, "tag": tag})
        return res

    def order(self, cell, rnd):
        seed = self.a.seed + (zlib.crc32(cell.name.encode()) & 0xffff)
        return [self.cfgs[i] for i in stats.shuffle(seed, rnd, len(self.cfgs))]

    def run_cell(self, cell, k, n):
        ref = self.cfgs[0]
        prog = f"[{k}/{n} {cell.name}]"
        w = self.cached(cell, "warm", ref)
        if w is None:
            self.ensure_tables(cell)
            w = self.run(cell, ref, "warm")
            save_json(self.path(cell, "warm"), w)
        if w["status"] != "ok":
            print(f"{prog} warm-up {w['status']} after {w['wall_s']:.0f} s: left out", file=sys.stderr, flush=True)
            return
        qf = self.query_file(cell)
        for c in self.cfgs:
            pf = os.path.join(self.cell_dir(cell), f"plan-{c.label}.txt")
            if not os.path.exists(pf):
                r = self.runner.psql(self.server, "-A", "-t", "-c", "explain " + open(qf).read(),
                                     opts=cell.opts(c), check=False)
                with open(pf, "w") as f:
                    f.write(r.stdout if r.returncode == 0 else "EXPLAIN failed: " + r.stderr)
        for rnd in range(self.a.rounds):
            for cfg in self.order(cell, rnd):
                tag = f"r{rnd}-{cfg.label}"
                if self.cached(cell, tag, cfg) is not None:
                    continue
                res = self.run(cell, cfg, tag)
                res["same_answer"] = res.get("answer") == w.get("answer")
                save_json(self.path(cell, tag), res)
                print(f"{prog} round {rnd + 1}/{self.a.rounds} {cfg.label:7s} {res['status']:7s} "
                      f"{res['ms'] / 1000:8.2f} s  cpu {res['cpu_s']:8.2f} s  temp "
                      f"{res['temp_bytes'] / 2**20:9.1f} MiB  load {res['load1']:.2f}"
                      + ("" if res["same_answer"] else "  ANSWER DIFFERS"), file=sys.stderr, flush=True)


# --- analysis --------------------------------------------------------------------------
def analyse(m, cell):
    a, cfgs = m.a, m.cfgs
    labels = [c.label for c in cfgs]
    ref = labels[0]
    e = {"cell": cell.name, "rows": cell.rows, "dups": cell.dups, "conns": cell.conns,
         "device": cell.device.name}
    w = m.cached(cell, "warm", cfgs[0])
    if w is None:
        e["status"] = "not run"
        return e
    if w["status"] != "ok":
        e["status"], e["warm_s"] = w["status"], w["wall_s"]
        return e
    runs = {c.label: [m.cached(cell, f"r{r}-{c.label}", c) for r in range(a.rounds)] for c in cfgs}
    done = [r for rs in runs.values() for r in rs if r is not None]
    # rounds 0 .. rq-1 are complete (every configuration ran, and ran ok)
    rq = next((r for r in range(a.rounds) if any(runs[c][r] is None or runs[c][r]["status"] != "ok"
                                                 for c in labels)), a.rounds)
    e["rounds"] = rq
    if any(r["status"] != "ok" for r in done):
        e["status"] = "failed: " + ", ".join(sorted({f"{r['config']} {r['status']}" for r in done
                                                    if r["status"] != "ok"}))
    elif rq < a.rounds:
        e["status"] = f"incomplete ({rq} of {a.rounds} rounds)"
    else:
        e["status"] = "ok"
    e["answers"] = "identical" if done and all(r.get("same_answer") for r in done) else "DIFFER"
    plans = []
    for c in labels:
        try:
            plans.append(open(os.path.join(m.cell_dir(cell), f"plan-{c}.txt")).read())
        except OSError:
            pass
    e["plans"] = "same" if len(plans) == len(labels) and len(set(plans)) == 1 else "DIFFER"
    e["per"] = {}
    for c in labels:
        rs = [r for r in runs[c] if r is not None and r["status"] == "ok"]
        if rs:
            e["per"][c] = {"time_s": median([r["ms"] / 1000 for r in rs]),
                           "cpu_s": median([r["cpu_s"] for r in rs]),
                           "temp_bytes": median([r["temp_bytes"] for r in rs]),
                           "logical": median([r["log_logical"] for r in rs])}
    if rq < 2:
        return e
    e["ratios"] = {kind: {c: stats.ratio([runs[c][r][key] for r in range(rq)],
                                         [runs[ref][r][key] for r in range(rq)])
                          for c in labels[1:]}
                   for kind, key in (("wall", "ms"), ("cpu", "cpu_s"))}
    if "auto" in labels:
        fixed = [c for c in labels if c != "auto"]
        best = min(fixed, key=lambda c: 1.0 if c == ref else e["ratios"]["wall"][c][0])
        e["auto_best"] = best
        e["auto_vs_best"] = stats.ratio([runs["auto"][r]["ms"] for r in range(rq)],
                                        [runs[best][r]["ms"] for r in range(rq)])
    return e


def pct_iv(iv):
    """A ratio as % of the reference with its interval, in the words of every report."""
    return stats.fmt_ratio(iv, digits=0, percent=True)


def fmt_iv(iv):
    return stats.fmt_ratio(iv, digits=3)


def render(m, cells, results):
    a = m.a
    labels = [c.label for c in m.cfgs]
    ref, others = labels[0], labels[1:]
    L = []
    P = L.append
    P(f"# Hash-join matrix in PostgreSQL {os.environ.get('PG_MAJOR', '15')} with temp_file_compression (generated by pg-bench-hashmatrix.sh)")
    P("")
    P(f"Command: `{a.command}`  ")
    P(f"Rounds: {a.rounds}; seed {a.seed}; statement_timeout {a.timeout} s; work_mem {a.work_mem}; "
      f"generated {time.strftime('%Y-%m-%d %H:%M:%S')}  ")
    # this report's cells only: the runs directory also holds other commands' cells
    loads = [r["load1"] for cell in cells for r in m.records(cell)]
    if loads:
        P(f"Load average (1 min) over the runs: median {median(loads):.2f}, max {max(loads):.2f}, "
          f"{len(loads)} runs  ")
    P("")
    P(f"Per cell: wall time (the longest session's) and CPU time (all backends) of each "
      f"configuration as % of {ref}'s, the geometric mean of the per-round paired ratios with "
      f"its 95% interval (\"no measurable difference\" when it holds 100%); temp MiB written in all "
      f"(pg_stat_database, summed over the sessions; medians); auto / best: auto's time against "
      f"the fastest fixed configuration of the cell (by the estimate), paired, with its interval.")
    for dev in dict.fromkeys(c.device.name for c in cells):
        P("")
        title = next(c.device.title() for c in cells if c.device.name == dev)
        P(f"## {title}")
        P("")
        P(f"| rows | dups | conns | {ref} s | " + " | ".join(f"{c} wall | {c} CPU" for c in others)
          + " | " + " | ".join(f"{c} MiB" for c in labels) + " | auto / best | plans, answers |")
        P("|---:|---:|---:|---:|" + "---:|---:|" * len(others) + "---:|" * len(labels) + "---|---|")
        for cell, e in zip(cells, results):
            if cell.device.name != dev:
                continue
            head = [count_label(cell.rows), str(cell.dups), str(cell.conns)]
            if "per" not in e:
                P("| " + " | ".join(head + [e["status"]] + [""] * (2 * len(others) + len(labels) + 2)) + " |")
                continue
            per = e["per"]
            cells_ = head + [f"{per[ref]['time_s']:.2f}" if ref in per else "-"]
            for c in others:
                for kind in ("wall", "cpu"):
                    cells_.append(pct_iv(e["ratios"][kind][c]) if "ratios" in e else "-")
            for c in labels:
                if c not in per:
                    cells_.append("-")
                    continue
                s = f"{per[c]['temp_bytes'] / 2**20:.0f}"
                if c != ref and ref in per and per[ref]["temp_bytes"]:
                    s += f" ({100 * (1 - per[c]['temp_bytes'] / per[ref]['temp_bytes']):.0f}%)"
                cells_.append(s)
            cells_.append(f"{fmt_iv(e['auto_vs_best'])} vs {e['auto_best']}" if "auto_vs_best" in e else "-")
            cells_.append(f"{e['plans']}, {e['answers']}, {e['rounds']} rounds"
                          + ("" if e["status"] == "ok" else f" ({e['status']})"))
            P("| " + " | ".join(cells_) + " |")
    return L


def targets(results):
    ab = [e for e in results if "auto_vs_best" in e]
    if not ab:
        return [f"auto within 5% of the best fixed codec in every cell: {stats.NOT_RUN} (no complete cell "
                "with auto)"]
    vs = [(stats.target(e["auto_vs_best"], 1.05), e) for e in ab]

    def cells_of(word):
        return [e["cell"] + " " + fmt_iv(e["auto_vs_best"]) + " vs " + e["auto_best"]
                for v, e in vs if v == word]

    missed, unres = cells_of(stats.MISSED), cells_of(stats.NOT_RESOLVED)
    met = sum(v == stats.MET for v, _ in vs)
    s = (f"auto within 5% of the best fixed configuration (upper bound of auto / best <= 1.05) in "
         f"every cell: {met} of {len(ab)} cells {stats.MET}")
    if missed:
        s += f"; {stats.MISSED} in {len(missed)}: " + "; ".join(missed)
    if unres:
        s += f"; {stats.NOT_RESOLVED} in {len(unres)}: " + "; ".join(unres)
    return [s + f". Overall: {stats.overall([v for v, _ in vs])}."]


def estimate(m, cells):
    per = {}
    for cell in cells:
        walls = [r["wall_s"] for r in m.records(cell)]
        if walls:
            per[cell.name] = walls
    left, n, unknown = 0.0, 0, 0
    for cell in cells:
        w = m.cached(cell, "warm", m.cfgs[0])
        if w is not None and w["status"] != "ok":
            continue
        todo = (w is None) + sum(m.cached(cell, f"r{r}-{c.label}", c) is None
                                 for r in range(m.a.rounds) for c in m.cfgs)
        n += todo
        if cell.name in per:
            left += todo * median(per[cell.name])
        else:
            # same rows and connections measured elsewhere: a rough stand-in
            like = [median(v) for k, v in per.items() if k.startswith(f"r{count_label(cell.rows)}-")
                    and f"-c{cell.conns}-" in k]
            if like and todo:
                left += todo * median(like)
            elif todo:
                unknown += 1
    s = f"{n} runs left, about {left / 60:.0f} min"
    return s + (f" plus {unknown} cells with nothing like them timed yet" if unknown else "")


def main():
    ap = argparse.ArgumentParser()
    for f in ("rows", "dups", "conns", "configs", "devices", "work-mem", "out", "command", "sock",
              "psql", "user", "log", "data", "slowfs", "slow-dir"):
        ap.add_argument("--" + f, default="")
    for f in ("rounds", "timeout", "seed", "port"):
        ap.add_argument("--" + f, type=int, default=0)
    for f in ("report-only", "plan"):
        ap.add_argument("--" + f, action="store_true")
    a = ap.parse_args()
    m = Matrix(a)
    cells = make_cells(a)
    if a.plan:
        for dev in dict.fromkeys(c.device.name for c in cells):
            for rows in dict.fromkeys(c.rows for c in cells):
                sub = [c for c in cells if c.device.name == dev and c.rows == rows]
                print(f"{count_label(rows)} rows, {dev}: {len(sub)} cells: {estimate(m, sub)}")
        print(f"total: {estimate(m, cells)}")
        return 0
    if not a.report_only:
        check_configs(m.runner, {"patched": m.server}, m.cfgs)
        t0 = time.monotonic()
        print(f"matrix: {len(cells)} cells; {estimate(m, cells)}", file=sys.stderr, flush=True)
        try:
            for k, cell in enumerate(cells, 1):
                m.run_cell(cell, k, len(cells))
        finally:
            if m.slowfs:
                m.slowfs.unmount()
        print(f"matrix: ran for {(time.monotonic() - t0) / 60:.1f} min", file=sys.stderr, flush=True)
    results = [analyse(m, c) for c in cells]
    tl = targets(results)
    md = scrub_paths(a.out, "\n".join(render(m, cells, results)) + "\n\n## Target\n\n"
                     + "".join(f"- {x}\n" for x in tl))
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(md)
    save_json(os.path.join(a.out, "results.json"),
              {"command": a.command, "rounds": a.rounds, "work_mem": a.work_mem,
               "configs": [c.label for c in m.cfgs], "cells": results, "targets": tl})
    import pgcharts  # matplotlib only once there is something to draw
    pgcharts.matrix_heatmaps(results, [c.label for c in m.cfgs], os.path.join(a.out, "charts"))
    print("\n".join(tl))
    print(f"report: {os.path.join(a.out, 'report.md')}")
    bad = [e["cell"] for e in results if e.get("answers") == "DIFFER" or e.get("plans") == "DIFFER"
           or e["status"] not in ("ok",)]
    if bad:
        print("incomplete, failed or differing cells: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""A stand-in for spillbench's paired mode in the tests: reads the same flags and writes the
same JSON (docs/report.md, "spillbench's paired JSON") from a hand-made table, so reports can
be checked against numbers worked out by hand.

Environment: FAKE_TABLE  CSV with wm,codec,query,wall,cpu,logical,physical,peak,rows (times
                         in seconds, bytes in MiB); codec is a label (none, lz4, zstd-3)
             FAKE_LOG    every call's arguments are appended here
             FAKE_FAIL   fail (exit 1) when this text occurs in the arguments
             FAKE_JITTER JSON {label: [factor per round]}: wall times of the spilling queries
             FAKE_NOISE  JSON {label: [factor per round]}: wall times of every query
             FAKE_AUTO_COST  auto = per query the fastest fixed codec of the table at that
                         rate, times this (default 1)
Time model: wall = table wall x factors (+ 2 x physical bytes / --io-limit when limited).
"""

import csv
import json
import os
import random
import statistics
import sys

from tpch_report.stats import suite_interval  # PYTHONPATH: testsupport sets it

M = 1024 * 1024


def rate(text):
    t = text[:-2] if text.endswith("/s") else text
    return int(t[:-2]) * M if t.endswith("MB") else int(t)


def main():
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if "=" in a)
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(" ".join(sys.argv[1:]) + "\n")
    if os.environ.get("FAKE_FAIL", "\0") in " ".join(sys.argv[1:]):
        print("spillbench: simulated failure", file=sys.stderr)
        return 1
    with open(os.environ["FAKE_TABLE"]) as f:
        table = {(r["wm"], r["codec"], r["query"]): r for r in csv.DictReader(f)}
    jitter = json.loads(os.environ.get("FAKE_JITTER", "{}"))
    noise = json.loads(os.environ.get("FAKE_NOISE", "{}"))
    auto_cost = float(os.environ.get("FAKE_AUTO_COST", "1"))
    wm, rounds, io = args["work-mem"], int(args["rounds"]), rate(args.get("io-limit", "0"))
    specs = args["codec"].split(",")
    labels = [s.replace(":", "-") for s in specs]
    queries = sorted({q for (w, _, q) in table if w == wm}, key=lambda q: int(q[1:]))
    if args.get("queries", "all") != "all":
        queries = [q for q in queries if q[1:] in args["queries"].split(",")]

    def row(label, q):
        """The table row of label (auto: the fastest fixed codec at this rate)."""
        if label != "auto":
            return dict(table[(wm, label, q)])
        fixed = [r for (w, _, qq), r in table.items() if w == wm and qq == q]
        best = dict(min(fixed, key=model))
        best.update(wall=model(best) * auto_cost, io_included=True)
        return best

    def model(r):
        """Wall seconds of a table row at this rate."""
        io_s = 2 * int(r["physical"]) * M / io if io and not r.get("io_included") else 0
        return float(r["wall"]) + io_s

    seed = int(args.get("seed", "1234567"))
    times, cpus, docs_q = {}, {}, []
    for q in queries:
        rows = [row(lab, q) for lab in labels]
        spills = any(int(r["logical"]) for r in rows)
        runs = []
        for rd in range(rounds):
            order = list(range(len(labels)))
            random.Random(seed * 31 + rd * 7 + int(q[1:])).shuffle(order)
            for pos, c in enumerate(order):
                lab, r = labels[c], rows[c]
                wall = model(r) * noise.get(lab, [1] * rounds)[rd]
                if spills:
                    wall *= jitter.get(lab, [1] * rounds)[rd]
                times[(rd, q, c)], cpus[(rd, q, c)] = wall, float(r["cpu"])
                runs.append({"round": rd, "position": pos + 1, "config": c, "wall_s": wall,
                             "cpu_s": float(r["cpu"]), "codec_ms": 1.0,
                             "logical_bytes": int(r["logical"]) * M,
                             "physical_bytes": int(r["physical"]) * M})
        cfgs = []
        for c, r in enumerate(rows):
            ws = [times[(rd, q, c)] for rd in range(rounds)]
            cfgs.append({"config": c, "wall_s_median": statistics.median(ws),
                         "cpu_s_median": float(r["cpu"]), "codec_ms_median": 1.0,
                         "logical_bytes": int(r["logical"]) * M,
                         "physical_bytes": int(r["physical"]) * M,
                         "peak_temp_bytes": int(r["peak"]) * M, "spill_files": 1,
                         "op_peak_bytes": 1, "mem": "ok",
                         "blocks_by_codec": [0, int(r["physical"]), 0, 0] if labels[c] == "auto"
                         else [0, 0, 0, 0],
                         "auto_probe_ms": 0.5 if labels[c] == "auto" else 0.0,
                         "auto_reason": "fake reason" if labels[c] == "auto" else ""})
        ratios = [{"config": c, "wall": interval(times, [q], c),
                   "cpu": interval(cpus, [q], c)} for c in range(1, len(labels))]
        docs_q.append({"query": q, "spills": spills, "rows": int(rows[0]["rows"]),
                       "answers": "identical", "configs": cfgs, "runs": runs,
                       "ratios": ratios})
    suite = {}
    for name, want in (("spilling", True), ("control", False)):
        qs = [d["query"] for d in docs_q if d["spills"] == want]
        suite[name] = {"queries": qs, "ratios": [
            {"config": c, "wall": interval(times, qs, c), "cpu": interval(cpus, qs, c)}
            for c in range(1, len(labels))] if qs else []}
    totals = []
    for c in range(len(labels)):
        cs = [d["configs"][c] for d in docs_q]
        totals.append({"config": c, **{k: sum(x[k] for x in cs) for k in
                                       ("logical_bytes", "physical_bytes")},
                       "peak_temp_bytes": max(x["peak_temp_bytes"] for x in cs),
                       "wall_s_median_sum": sum(x["wall_s_median"] for x in cs),
                       "cpu_s_median_sum": sum(x["cpu_s_median"] for x in cs),
                       "codec_ms_median_sum": sum(x["codec_ms_median"] for x in cs)})
    configs = [{"index": c, "label": specs[c], "codec": specs[c].partition(":")[0],
                "level": specs[c].partition(":")[2] or "default",
                "block_size": 8192, "work_mem": wm, "work_mem_bytes": 0, "io_limit": io}
               for c in range(len(labels))]
    doc = {"mode": "paired", "sf": float(args["sf"]), "rounds": rounds, "seed": seed,
           "warmup": "one run per query, configuration 0, not counted", "method": "fake",
           "load_start": [0.5, 0.4, 0.3], "load_end": [0.6, 0.5, 0.4], "configs": configs,
           "queries": docs_q, "suite": suite, "totals": totals}
    with open(args["out"], "w") as f:
        json.dump(doc, f)
    return 0


def interval(times, queries, c):
    iv = suite_interval(times, queries, c, 0)
    return {"est": iv.est, "lo": iv.lo, "hi": iv.hi, "n": iv.n}


if __name__ == "__main__":
    sys.exit(main())

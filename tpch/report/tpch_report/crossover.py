"""bench/bench-crossover: which codec makes the spilling TPC-H queries fastest
at which temp-device bandwidth, and is codec=auto close to the best at every one.

One paired spillbench run per I/O rate (--io-limit; 'unlimited' = the page cache) with all
codecs in it, cached and resumable like tpch-report's runs. The unlimited run goes first
over all 22 queries and names the spilling set (queries whose `spills` flag is set); the
limited runs take only those (unless --queries gives the set). Writes OUT.md (default
docs/results/crossover.md) and, next to it, OUT/ with cells/, charts/, command.txt and
machine.json.

Invariants: every figure of a rate comes from that rate's paired rounds over the same query
set; auto's distance to the best fixed codec is a paired ratio of the rounds (not a quotient
of two intervals); the checks are computed from the intervals and judged in stats' words:
MET only when the whole 95% interval is inside the bound, MISSED when none of it is, not
resolved when it straddles the bound.
"""

import os
import sys
import time
from dataclasses import dataclass

from . import machine, matrix, results, runner, tool
from .matrix import KIB, Run
from . import stats
from .stats import fmt_ratio, verdict

PROG = "bench-crossover"
MIB = KIB * KIB
DEFAULT_RATES = "50,100,200,400,800,1600,unlimited"
DEFAULT_CODECS = "none,lz4,zstd:1,zstd:3,auto"
AUTO_BOUND = 1.05        # auto's suite time within 5% of the best fixed codec, every rate
PAGE_CACHE_BOUND = 1.03  # and in the page cache no more than 3% slower than none


def parse_rates(text):
    """'50,100,unlimited' -> [50 MiB/s, 100 MiB/s, 0] in bytes/s (0 = unlimited)."""
    rates = []
    for part in text.split(","):
        p = part.strip().lower()
        if p == "unlimited":
            rate = 0
        else:
            p = p[:-len("mb/s")] if p.endswith("mb/s") else p
            if not p.isdigit() or int(p) <= 0:
                raise ValueError(f"bad rate '{part}' (MB/s as a whole number, or 'unlimited')")
            rate = int(p) * MIB
        if rate in rates:
            raise ValueError(f"rate '{part}' given twice")
        rates.append(rate)
    return rates


def parse_queries(text):
    qs = []
    for part in text.split(","):
        p = part.strip().upper().lstrip("Q")
        if not p.isdigit() or not 1 <= int(p) <= 22:
            raise ValueError(f"bad query '{part}' (1..22)")
        qs.append(int(p))
    return tuple(sorted(set(qs)))


def rate_label(rate):
    return f"{rate // MIB} MB/s" if rate else "unlimited"


def parse_args(argv):
    p = tool.Parser(prog=PROG,
                    description="Crossover benchmark: the spilling TPC-H queries in "
                                "paired mode for several codecs at several temp-device rates "
                                "(spillbench --io-limit); charts and crossover.md with the "
                                "checks of codec=auto. Results are derived from TPC-H, not "
                                "comparable to published TPC-H results.")
    p.add_argument("--out", default=os.path.join(machine.REPO, "docs", "results",
                                                 "crossover.md"),
                   help="the markdown file (default docs/results/crossover.md); runs, charts "
                        "and the command go into the directory of the same name without .md")
    p.add_argument("--sf", default="1", help="scale factor (default 1)")
    p.add_argument("--work-mem", default="4MB", help="work_mem (default 4MB)")
    p.add_argument("--block-size", default="8K", help="block size (default 8K)")
    p.add_argument("--codecs", default=DEFAULT_CODECS,
                   help=f"codec[:level] list, none first (default {DEFAULT_CODECS})")
    p.add_argument("--rates", default=DEFAULT_RATES,
                   help=f"I/O rates in MB/s and 'unlimited' (default {DEFAULT_RATES})")
    p.add_argument("--rounds", default="3", help="paired rounds per run (default 3)")
    p.add_argument("--queries", default="",
                   help="the queries to run (default: those that spill in the unlimited run, "
                        "which then runs all 22)")
    p.add_argument("--title", default="", help="report title")
    p.add_run_flags()
    args = p.parse_args(argv)
    try:
        if not args.out.endswith(".md"):
            raise ValueError(f"--out must name a .md file, not '{args.out}'")
        args.rate_list = parse_rates(args.rates)
        args.codec_list = matrix.codec_list(args.codecs.split(","))
        args.rounds_n = matrix.parse_rounds(args.rounds)
        args.wm_bytes = matrix.parse_size(args.work_mem)
        args.block_bytes = matrix.parse_size(args.block_size)
        args.query_list = parse_queries(args.queries) if args.queries else ()
        if not args.sf.replace(".", "", 1).isdigit() or float(args.sf) <= 0:
            raise ValueError(f"bad --sf '{args.sf}'")
        if not args.query_list and 0 not in args.rate_list:
            raise ValueError("without 'unlimited' in --rates there is no run to find the "
                             "spilling queries in: give --queries")
    except ValueError as e:
        p.error(str(e))
    return args


def make_run(args, rate, queries):
    return Run(args.sf, args.wm_bytes, args.block_bytes, args.codec_list, args.rounds_n, rate,
               queries)


def discovery_run(args):
    """The run that names the spilling set: unlimited over all queries (or the given set)."""
    return make_run(args, 0, args.query_list) if 0 in args.rate_list else None


def sweep_runs(args, spilling):
    """Every run of the sweep in run order (unlimited first, then the fastest rates), or
    only the discovery run while the spilling set is unknown."""
    first = discovery_run(args)
    queries = args.query_list or spilling
    if not queries:
        return [first]
    rest = [make_run(args, r, queries) for r in sorted(args.rate_list, reverse=True) if r]
    return ([first] if first else []) + rest


def spilling_set(out_dir, args):
    """The query numbers the sweep runs at the limited rates: --queries, or the spilling
    set of the cached unlimited run (None while it has not run)."""
    if args.query_list:
        return args.query_list
    run = discovery_run(args)
    doc = runner.load_json(runner.paths(out_dir, run)[0], run)
    if doc is None:
        return None
    return tuple(int(q[1:]) for q in doc["suite"]["spilling"]["queries"])


@dataclass
class RatePoint:
    """The figures of one rate, all over the same spilling queries."""
    rate: int
    res: object
    queries: list

    def rel(self, i, kind="wall"):
        """Suite time of configuration i against none (geomean over the queries)."""
        return self.res.paired(i, 0, self.queries, kind)

    def seconds(self, i, kind="wall"):
        return self.res.suite_seconds(i, self.queries, kind)

    def best_fixed(self):
        """Index of the fixed codec (not auto) with the lowest suite time estimate."""
        fixed = [i for i, lab in enumerate(self.res.labels) if lab != "auto"]
        return min(fixed, key=lambda i: 1.0 if i == 0 else self.rel(i).est)

    def auto_vs_best(self):
        if "auto" not in self.res.labels:
            return None
        return self.res.paired(self.res.index("auto"), self.best_fixed(), self.queries)

    def saved(self, i):
        return self.res.total_saved(i, self.queries)


def points(found, queries):
    names = [f"Q{q}" for q in queries]
    return sorted((RatePoint(res.run.io_limit, res, names) for res in found),
                  key=lambda p: (p.rate == 0, p.rate))


def _bound_text(iv, bound):
    """The ratio, and why it is outside the bound when it is."""
    if iv.hi <= bound:
        return fmt_ratio(iv)
    if iv.est <= bound or iv.holds_one():
        return (f"{fmt_ratio(iv)}: the interval reaches {iv.hi:.2f} (more rounds could "
                "narrow it)")
    return f"{fmt_ratio(iv)}: {verdict(iv)}"


def checks(pts, args):
    """[(name, verdict, explanation)] for the two checks of codec=auto; the verdict is a word
    of stats.target (MET, MISSED, not resolved) or not run."""
    out = []
    name_a = f"auto's suite time within {100 * (AUTO_BOUND - 1):.0f}% of the best fixed codec " \
             "at every rate"
    name_b = f"in the page cache (unlimited) auto no slower than none by more than " \
             f"{100 * (PAGE_CACHE_BOUND - 1):.0f}%"
    if ("auto", "") not in args.codec_list:
        return [(name_a, stats.NOT_RUN, "auto is not among --codecs"),
                (name_b, stats.NOT_RUN, "auto is not among --codecs")]
    have = {p.rate: p for p in pts}
    missing = [rate_label(r) for r in args.rate_list if r not in have]
    words, outside, detail = [], [], []
    for p in pts:
        iv = p.auto_vs_best()
        best = p.res.labels[p.best_fixed()]
        detail.append(f"{rate_label(p.rate)}: auto / {best} = {_bound_text(iv, AUTO_BOUND)}")
        words.append(stats.target(iv, AUTO_BOUND))
        if iv.hi > AUTO_BOUND:
            outside.append(rate_label(p.rate))
    words += [stats.NOT_RUN] * len(missing)
    head = stats.overall(words)
    why = f"Rates not measured: {', '.join(missing)}. " if missing else ""
    if outside:
        why = f"Upper 95% bound above {AUTO_BOUND:.2f} at {', '.join(outside)}. " + why
    elif not missing:
        why = f"Upper 95% bound at most {AUTO_BOUND:.2f} at every rate. "
    out.append((name_a, head, why + "; ".join(detail)))
    if 0 not in have:
        out.append((name_b, stats.NOT_RUN, "the unlimited rate was not measured"))
    else:
        p = have[0]
        iv = p.rel(p.res.index("auto"))
        out.append((name_b, stats.target(iv, PAGE_CACHE_BOUND),
                    f"auto / none = {_bound_text(iv, PAGE_CACHE_BOUND)}; upper 95% bound "
                    f"{iv.hi:.3f} against {PAGE_CACHE_BOUND:.2f}"))
    return out


INCOMPRESSIBLE = (
    "Not measured by this tool: spillbench spills only TPC-H tuples, which compress 2.5-4x. "
    "bench/bench_auto measures it on random bytes, side by side with none and a control "
    "(none run again): docs/results/auto-incompressible.md; tests/test_auto.c "
    "(test_incompressible_means_none, test_random_data_settles_on_none) checks the decision")


def write(path, work_dir, args, pts, found, missing, m):
    """OUT.md and OUT/charts/*.png."""
    from . import charts, report  # matplotlib only once there is something to draw
    rel_dir = os.path.basename(work_dir)
    cdir = os.path.join(work_dir, "charts")
    os.makedirs(cdir, exist_ok=True)
    labels = found[0].labels
    rel = {lab: [(p.rate // MIB, p.rel(i)) for p in pts] for i, lab in enumerate(labels)}
    secs = {lab: [(p.rate // MIB, p.seconds(i)) for p in pts] for i, lab in enumerate(labels)}
    saved = {lab: [(p.rate // MIB, 100 * (p.saved(i) or 0)) for p in pts]
             for i, lab in enumerate(labels)}
    setting = (f"SF {args.sf}, work_mem {matrix.size_label(args.wm_bytes)}, "
               f"{matrix.size_label(args.block_bytes)} blocks, {args.rounds_n} rounds")
    charts.crossover_chart(rel, os.path.join(cdir, "time-relative.png"),
                           f"Suite time relative to none at the same rate, {setting}",
                           "wall time / none (geomean over the spilling queries)", 1.0)
    charts.crossover_chart(secs, os.path.join(cdir, "time-seconds.png"),
                           f"Suite time, {setting}",
                           "wall seconds, summed over the spilling queries (geomean of the "
                           "rounds)", None, (0, None))
    charts.crossover_chart(saved, os.path.join(cdir, "space-saved.png"),
                           f"Temp space saved, {setting}",
                           "temp space saved (% of the bytes spilled)", None, (-5, 100))

    queries = pts[0].queries if pts else []
    L = [f"# {args.title or 'Spill codec against temp-device bandwidth (crossover)'}", "",
         f"> {report.DISCLAIMER}", ""]
    L += report.noise_section(found, f"{rel_dir}/cells")
    L += [f"{setting}; the {len(queries)} queries that spill ({', '.join(queries)}). One "
          "paired spillbench run per temp-device rate (`--io-limit`, which models a device of "
          "that bandwidth shared by spill reads and writes; *unlimited* = the page cache), "
          "with every codec in it: per query a warm-up with none, then rounds in which each "
          "codec runs once, in a shuffled order. *Suite time* of a codec = per round the "
          "geometric mean over the spilling queries of its wall time / none's in that round, "
          "then the geometric mean over the rounds with a 95% Student t interval on the logs "
          "(the method of spillbench's paired mode). *auto / best* is the same paired ratio "
          "of auto against the fixed codec whose suite time is lowest at that rate (chosen on "
          "the estimate). A check is MET only when the whole interval is inside its bound, MISSED "
          "when none of it is, and not resolved when the interval straddles the bound.",
          ""]
    L += ["## Checks", ""]
    for name, result, text in checks(pts, args):
        L.append(f"- **{result}**: {name}. {text}.")
    L += [f"- **{stats.NOT_RUN}**: on incompressible spill data auto settles on none and costs under "
          f"2% against none. {INCOMPRESSIBLE}", ""]

    L += ["## Charts", "",
          f"![suite time relative to none]({rel_dir}/charts/time-relative.png)", "",
          f"![suite time in seconds]({rel_dir}/charts/time-seconds.png)", "",
          f"![temp space saved]({rel_dir}/charts/space-saved.png)", "",
          "## Per rate", "", "Wall time of the suite relative to none at the same rate "
          "(geomean over the spilling queries, 95% interval):", ""]
    rows = []
    for p in pts:
        best = p.best_fixed()
        row = [rate_label(p.rate), f"{p.seconds(0).est:.2f}"]
        row += [fmt_ratio(p.rel(i)) for i in range(1, len(labels))]
        iv = p.auto_vs_best()
        row += [p.res.labels[best]] + ([fmt_ratio(iv), verdict(iv)] if iv else ["-", "-"])
        rows.append(row)
    L += [report.table(["rate", "none s (sum)"] + [f"{lab} / none" for lab in labels[1:]] +
                       ["best fixed", "auto / best", "auto against the best"], rows), ""]
    L += ["CPU time (user + system; the modelled device's waits are not CPU) relative to none:",
          ""]
    rows = [[rate_label(p.rate), f"{p.seconds(0, 'cpu').est:.2f}"] +
            [fmt_ratio(p.rel(i, "cpu")) for i in range(1, len(labels))] for p in pts]
    L += [report.table(["rate", "none CPU s (sum)"] +
                       [f"{lab} / none" for lab in labels[1:]], rows), ""]
    L += ["Temp space saved over the spilling queries (1 - physical / logical bytes; auto's "
          "are round 0's) and the codecs of auto's blocks:", ""]
    rows = []
    for p in pts:
        row = [rate_label(p.rate)] + [report.pct(p.saved(i)) for i in range(1, len(labels))]
        if "auto" in labels:
            blocks = [sum(p.res.cfg(q, p.res.index("auto")).get("blocks_by_codec", [0] * 4)[k]
                          for q in p.queries) for k in range(len(results.BLOCK_CODECS))]
            n = sum(blocks)
            row.append(", ".join(f"{c} {100 * b / n:.0f}%" for c, b in
                                 zip(results.BLOCK_CODECS, blocks) if b) if n else "-")
        rows.append(row)
    L += [report.table(["rate"] + [f"{lab} saved" for lab in labels[1:]] +
                       (["auto's blocks"] if "auto" in labels else []), rows), ""]

    L += ["## How this was made", ""]
    cmd = report.read_text(os.path.join(work_dir, "command.txt"))
    if cmd:
        L += ["```sh", cmd, "```", ""]
    minutes = sum(res.meta.get("wall_s", 0) for res in found) / 60
    L += [f"Run time: {minutes:.0f} min of spillbench wall time. Raw data: "
          f"`{rel_dir}/cells/<key>.json` (spillbench's JSON, every round of every query and "
          "codec) with `<key>.meta.json` (exact command, wall time, load average before and "
          "after). Rerunning the command reuses every finished run; `--report-only` redraws "
          "this file from them. The unlimited run also holds the queries that spill nothing: "
          "their control interval measures the machine's noise (the limited runs have no "
          "control queries).", ""]
    if missing:
        L += ["Missing runs: " + ", ".join(f"`{r.key}`" for r in missing), ""]
    L += report.runs_section(found)
    L += report.machine_section(m)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(L).rstrip() + "\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    out_md = args.out
    work_dir = out_md[:-len(".md")]
    data_dir = args.data_dir or os.path.join("tpch-data", f"sf{args.sf}")
    temp_dir = args.temp_dir or os.environ.get("TMPDIR", "/tmp")

    if args.dry_run:
        spilling = spilling_set(work_dir, args)
        for r in sweep_runs(args, spilling):
            print(f"{'cached' if runner.is_done(work_dir, r) else 'todo  '}  {r.key}")
        if spilling is None:
            print("then one run per limited rate over the queries the first run finds spilling")
        return tool.EXIT_OK

    failed = []
    if not args.report_only:
        if not tool.usable_spillbench(PROG, args.spillbench):
            return tool.EXIT_USAGE
        tool.record_command(work_dir, "bench/bench-crossover", argv, {"--out": "<out>.md"})
        os.makedirs(temp_dir, exist_ok=True)
        cached = [r for r in sweep_runs(args, spilling_set(work_dir, args))
                  if runner.is_done(work_dir, r)]
        machine.ensure(work_dir, args.spillbench, temp_dir, data_dir, fresh=not cached)
        t0 = time.monotonic()
        if spilling_set(work_dir, args) is None:   # the unlimited run names the spilling set
            failed = tool.run(PROG, work_dir, sweep_runs(args, None), args, data_dir, temp_dir)
            if failed is None:
                return tool.EXIT_INTERRUPTED
        spilling = spilling_set(work_dir, args)
        if spilling:
            more = tool.run(PROG, work_dir, sweep_runs(args, spilling), args, data_dir,
                            temp_dir)
            if more is None:
                return tool.EXIT_INTERRUPTED
            failed += more
        print(f"{PROG}: sweep finished in {(time.monotonic() - t0) / 60:.1f} min",
              file=sys.stderr)

    spilling = spilling_set(work_dir, args)
    if not spilling:
        print(f"{PROG}: no spilling queries known (the unlimited run is missing or nothing "
              "spilled)", file=sys.stderr)
        return tool.EXIT_FAILED
    runs = sweep_runs(args, spilling)
    found, missing = results.load(work_dir, runs)
    if not found:
        print(f"{PROG}: no finished runs in {work_dir}", file=sys.stderr)
        return tool.EXIT_FAILED
    m = machine.ensure(work_dir, args.spillbench, temp_dir, data_dir)
    write(out_md, work_dir, args, points(found, spilling), found, missing, m)
    print(f"{PROG}: wrote {out_md}", file=sys.stderr)
    return tool.exit_status(PROG, failed, missing, found, args.allow_noisy)

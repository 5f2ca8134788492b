"""Charts of the PostgreSQL benchmarks (pg_bench.py's TPC-H phases and pg_hashmatrix.py's
hash-join matrix), drawn with the TPC-H report's chart code (tpch_report.charts) so that
colours, error bars and the "no measurable difference" hatching are the report's own
(charts.py's invariants hold here too).

Inputs are those scripts' results.json structures: a ratio is a list [est, lo, hi, n]."""

import math
import os
import textwrap

from tpch_report import charts
from tpch_report.charts import KINDS, plt
from tpch_report.stats import Interval


def _iv(t):
    return None if t is None or t[3] == 0 or math.isnan(t[0]) else Interval(*t)


def tpch_charts(results, out_dir, setting):
    """Per phase: temp-<phase>.png (MiB on disk per spilling query and configuration) and
    time-<phase>.png (wall and CPU ratio to the reference per spilling query, with the
    spilling and control suites)."""
    os.makedirs(out_dir, exist_ok=True)
    for res in results:
        queries = [e for e in res["queries"] if e.get("spills") and e.get("per")]
        if not queries:
            continue
        labels, ref = res["configs"], res["reference"]
        groups = [f"Q{e['query']}" for e in queries] + ["total"]
        vals = {}
        for e in queries:
            for c in labels:
                p = e["per"].get(c)
                vals[(f"Q{e['query']}", c)] = p["temp_bytes"] / 2**20 if p and p["temp_bytes"] > 0 else None
        for c in labels:
            if c in res["bytes"]:
                vals[("total", c)] = res["bytes"][c]["total"] / 2**20
        fig, ax = plt.subplots(figsize=(12, 4.8))
        charts._grouped_bars(ax, groups, labels, vals)
        ax.set_yscale("log")
        ax.axvline(len(groups) - 1.5, color="grey", linewidth=0.8, linestyle=":")
        ax.set_ylabel("temp space written (MiB on disk, log scale)")
        ax.set_xlabel("query (only queries that spill); total over them")
        # A phase's description is long (device, workers, work_mem): wrapped, not clipped.
        ax.set_title(textwrap.fill(f"Temp bytes per query by configuration, {setting}, "
                                   f"{res['title']}", 110))
        ax.legend(handles=[charts.Patch(color=charts.colour(c), label=c) for c in labels],
                  title="temp_file_compression", ncol=len(labels), fontsize=8, title_fontsize=8)
        charts._finish(fig, os.path.join(out_dir, f"temp-{res['phase']}.png"))

        done = [e for e in queries if "ratios" in e]
        if not done:
            continue
        others = labels[1:]
        groups = [f"Q{e['query']}" for e in done] + ["spilling", "control"]
        values = {}
        for kind in KINDS:
            v = values[kind] = {}
            for c in others:
                for e in done:
                    v[(f"Q{e['query']}", c)] = _iv(e["ratios"][kind][c])
                for name in ("spilling", "control"):
                    v[(name, c)] = _iv(res["suites"][name][kind][c])
        charts.ratio_chart(groups, others, values, ref, len(done),
                           "query (only queries that spill); spilling = geomean over them; control "
                           "= geomean over the queries that spill nothing (machine noise)",
                           f"Paired time ratios, {setting}, {res['title']}",
                           os.path.join(out_dir, f"time-{res['phase']}.png"))


def cell_label(e, kind, c):
    """One heat-map cell: (text, estimate). The text is configuration c's ratio (`kind`) as %
    of the reference with its interval; for a cell with no ratios it says why (its status's
    first words: "not run", "incomplete", "failed", a warm-up's "timeout") and the estimate
    is None."""
    if not e or "ratios" not in e:
        return (e or {}).get("status", "not run").split(" (")[0].split(":")[0], None
    iv = Interval(*e["ratios"][kind][c])
    if iv.n < 2:
        return f"{100 * iv.est:.0f}%", iv.est
    return (f"{100 * iv.est:.0f}%" + ("~" if iv.holds_one() else "")
            + f"\n{100 * iv.lo:.0f}-{100 * iv.hi:.0f}"), iv.est


def matrix_heatmaps(cells, labels, out_dir):
    """matrix-wall.png and matrix-cpu.png: one panel per (configuration, device), rows =
    (rows, duplicates), columns = connections; each cell the configuration's time as % of
    the reference's with its interval; green faster, red slower, `~` where the interval
    holds 100% (no measurable difference)."""
    from matplotlib.colors import TwoSlopeNorm

    os.makedirs(out_dir, exist_ok=True)
    ref, others = labels[0], labels[1:]
    devices = list(dict.fromkeys(e["device"] for e in cells))
    ys = list(dict.fromkeys((e["rows"], e["dups"]) for e in cells))
    xs = sorted({e["conns"] for e in cells})
    by = {(e["device"], e["rows"], e["dups"], e["conns"]): e for e in cells}
    for kind in KINDS:
        ests = [e["ratios"][kind][c][0] for e in cells if "ratios" in e for c in others]
        if not ests:
            continue
        norm = TwoSlopeNorm(vcenter=1.0, vmin=min(ests + [0.9]), vmax=max(ests + [1.1]))
        fig, axes = plt.subplots(len(others), len(devices), squeeze=False, constrained_layout=True,
                                 figsize=(3.4 * len(devices) + 1.5,
                                          (0.45 * len(ys) + 0.9) * len(others) + 0.8))
        for i, c in enumerate(others):
            for j, dev in enumerate(devices):
                ax = axes[i][j]
                grid = [[float("nan")] * len(xs) for _ in ys]
                for yi, (rows, d) in enumerate(ys):
                    for xi, n in enumerate(xs):
                        e = by.get((dev, rows, d, n))
                        txt, est = cell_label(e, kind, c)
                        if est is None:
                            # a blank cell must say why, or it reads as a missing chart
                            ax.text(xi, yi, txt, ha="center", va="center", fontsize=6.5,
                                    color="grey", style="italic")
                            continue
                        grid[yi][xi] = est
                        # white on the dark ends of the scale
                        dark = abs(math.log(est)) > 0.35
                        ax.text(xi, yi, txt, ha="center", va="center", fontsize=6.5,
                                color="white" if dark else "black")
                im = ax.imshow(grid, cmap="RdYlGn_r", norm=norm, aspect="auto")
                ax.set_xticks(range(len(xs)))
                ax.set_xticklabels([str(n) for n in xs], fontsize=7)
                ax.set_yticks(range(len(ys)))
                ax.set_yticklabels([f"{r // 10**6}M d{d}" if r % 10**6 == 0 else f"{r} d{d}"
                                    for r, d in ys], fontsize=7)
                ax.set_title(f"{c}, {dev}", fontsize=8)
                if i == len(others) - 1:
                    ax.set_xlabel("connections", fontsize=7)
        fig.colorbar(im, ax=axes, shrink=0.6, label=f"{KINDS[kind]} / {ref}")
        # two lines: one device's panels are narrower than the title
        fig.suptitle(f"Hash-join matrix: {KINDS[kind]} as % of {ref}\n(95% interval below; "
                     "~ = no measurable difference)", fontsize=9)
        fig.savefig(os.path.join(out_dir, f"matrix-{kind}.png"), dpi=charts.DPI)
        plt.close(fig)

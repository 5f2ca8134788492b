"""The PNG charts of the report and of the crossover benchmark (matplotlib, Agg, 110 dpi).

Invariants: one colour per codec/level in every chart (CODEC_COLOURS, then a fallback
palette in first-seen order), so a reader can compare charts at a glance; every chart has a
title, axis labels with units and a legend; every time ratio carries its 95% interval as an
error bar, and a bar (or point) whose interval holds 1.0 (no measurable difference) is drawn
faded and hatched (hollow); a missing value (query without spill) is drawn as no bar, never
as zero, and a point left out is named in the chart. Scales show the figures: a whisker far
above the bars is cut at the top with its end written there, and a negative saving keeps its
point left of 0. A noisy run (control interval past NOISE_LIMIT) says so in red on the chart.
"""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .matrix import size_label  # noqa: E402
from .results import NOISE_LIMIT  # noqa: E402

DPI = 110
CODEC_COLOURS = {
    "off": "#404040", "stock": "#000000", "pglz": "#9467bd",
    "none": "#7f7f7f", "lz4": "#2ca02c",
    "zstd-1": "#9ecae1", "zstd-3": "#4292c6", "zstd-9": "#08519c",
    "zlib-1": "#fdae6b", "zlib-6": "#d94801", "auto": "#d62728",
}
FALLBACK = ["#8c564b", "#e377c2", "#bcbd22", "#17becf"]
BLOCK_MARKERS = ["o", "s", "^", "D", "v", "P"]
KINDS = {"wall": "wall-clock time", "cpu": "CPU time (user + system)"}
KIND_SHORT = {"wall": "wall", "cpu": "CPU"}

_extra_colours = {}


def colour(label):
    if label in CODEC_COLOURS:
        return CODEC_COLOURS[label]
    if label not in _extra_colours:
        _extra_colours[label] = FALLBACK[len(_extra_colours) % len(FALLBACK)]
    return _extra_colours[label]


def _finish(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _grouped_bars(ax, groups, series, values, colour_of=colour, ytop=None):
    """Bars for each group (x) and series (colour_of(series)). values[(group, series)] is a
    number, an Interval (drawn as its estimate with an error bar; faded and hatched when it
    holds 1.0) or None (no bar). With `ytop`, a whisker or bar past it is cut there and its
    value written at the top; returns how many were."""
    cut = 0
    width_total = 0.82
    width = width_total / max(len(series), 1)
    for i, s in enumerate(series):
        for g_i, g in enumerate(groups):
            v = values.get((g, s))
            if v is None:
                continue
            x = g_i - width_total / 2 + width * (i + 0.5)
            iv = v if hasattr(v, "est") else None
            faded = iv is not None and iv.holds_one()
            ax.bar(x, iv.est if iv else v, width=width, color=colour_of(s),
                   alpha=0.45 if faded else 1.0, hatch="///" if faded else None,
                   edgecolor="white", linewidth=0.3)
            if iv is not None and iv.n > 1:
                hi = iv.hi if ytop is None else min(iv.hi, ytop)
                ax.errorbar(x, min(iv.est, hi), yerr=[[max(iv.est - iv.lo, 0)],
                                                      [max(hi - iv.est, 0)]],
                            fmt="none", ecolor="black", elinewidth=0.8, capsize=1.5)
            top = iv.hi if iv is not None else v
            if ytop is not None and top > ytop:
                cut += 1
                ax.annotate(f"{top:.3g}", (x, ytop), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6, rotation=90, color="black",
                            annotation_clip=False)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return cut


def _noisy_note(fig, res):
    """A noisy run says so on its chart, as the report's text does."""
    if res.noisy():
        fig.text(0.5, 0.005, f"NOISY RUN: the control interval is ±{100 * res.noise():.1f}% "
                 f"(more than ±{100 * NOISE_LIMIT:.0f}%): the machine was too busy for "
                 "differences of a few percent to show", ha="center", va="bottom", color="red",
                 fontsize=9, fontweight="bold")


def _codec_legend(ax, labels, **kw):
    handles = [Patch(color=colour(s), label=s) for s in labels]
    handles.append(Patch(facecolor="white", edgecolor="grey", hatch="///",
                         label="no measurable difference"))
    ax.legend(handles=handles, title="codec", ncol=len(handles), fontsize=8, title_fontsize=8,
              **kw)


def _setting_text(res):
    r = res.run
    return f"SF {r.sf}, work_mem {size_label(r.work_mem)}, {size_label(r.block)} blocks"


def time_ratio_chart(res, path):
    """Per spilling query and codec, wall (top) and CPU (bottom): time / time with none with
    its interval; plus the suite geomean and the control geomean over the queries that spill
    nothing (the noise yardstick)."""
    queries = res.suite_queries("spilling")
    series = res.labels[1:]
    values = {}
    for kind in KINDS:
        v = values[kind] = {}
        for i, s in enumerate(series, 1):
            for q in queries:
                v[(q, s)] = res.ratio(q, i, kind)
            v[("geomean", s)] = res.suite("spilling", i, kind)
            v[("control", s)] = res.suite("control", i, kind)
    ratio_chart(queries + ["geomean", "control"], series, values, "none", len(queries),
                "query (only queries that spill); geomean over them; control = geomean over the "
                "queries that spill nothing (machine noise)",
                f"Paired time ratios, {_setting_text(res)}, {res.run.rounds} rounds", path,
                res=res)


def _ratio_top(ivs):
    """The top of a ratio axis: the whiskers' if they stay within twice the largest bar (and
    1.0), else 1.35 times that bar, the whiskers above it cut and written."""
    ests = [v.est for v in ivs] + [1.0]
    his = [v.hi for v in ivs] + [1.2]
    if max(his) <= 2 * max(ests):
        return max(his) * 1.2, False
    return max(ests) * 1.35, True


def ratio_chart(groups, series, values, ref, split, xlabel, suptitle, path, res=None):
    """Wall (top) and CPU (bottom) time of each series relative to ref, per group, with
    error bars: values[kind][(group, series)] is an Interval or None (no bar). A dotted line
    before groups[split] sets the suite figures apart."""
    fig, axes = plt.subplots(2, 1, figsize=(12, 8.4), sharex=True)
    for ax, kind in zip(axes, KINDS):
        top, clip = _ratio_top([v for v in values[kind].values() if v is not None])
        cut = _grouped_bars(ax, groups, series, values[kind], ytop=top if clip else None)
        ax.axhline(1.0, color="black", linewidth=0.9)
        ax.axvline(split - 0.5, color="grey", linewidth=0.8, linestyle=":")
        ax.set_ylabel(f"{KIND_SHORT[kind]} time / {ref}")
        ax.set_title(f"{KINDS[kind]} relative to {'no compression' if ref == 'none' else ref}, "
                     "95% intervals (below 1 = faster)"
                     + (f"; {cut} whisker(s) cut at the top, their end written" if cut else ""))
        ax.set_ylim(0, top)
        _codec_legend(ax, series, loc="upper left")
    axes[1].set_xlabel(xlabel)
    fig.suptitle(suptitle)
    if res is not None:
        _noisy_note(fig, res)
    fig.tight_layout(rect=(0, 0.03 if res is not None and res.noisy() else 0, 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def space_saved_chart(res, path):
    """Per spilling query and codec: % of the logical spill bytes that never reached disk."""
    queries = res.suite_queries("spilling")
    groups = queries + ["total"]
    series = res.labels[1:]
    values = {}
    for i, s in enumerate(series, 1):
        for q in queries:
            v = res.saved(q, i)
            values[(q, s)] = None if v is None else 100 * v
        t = res.total_saved(i)
        values[("total", s)] = None if t is None else 100 * t
    fig, ax = plt.subplots(figsize=(12, 4.6))
    _grouped_bars(ax, groups, series, values)
    ax.axvline(len(queries) - 0.5, color="grey", linewidth=0.8, linestyle=":")
    # Headroom above 100% for the legend, which must not hide bars; below 0 when some
    # configuration stored more than it was given, so that its bar shows.
    lows = [v for v in values.values() if v is not None] + [0]
    ax.set_ylim(min(0, math.floor((min(lows) - 3) / 5) * 5), 118)
    if min(lows) < 0:
        ax.axhline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("temp space saved (% of bytes spilled)")
    ax.set_xlabel("query (only queries that spill; total over all queries)")
    ax.set_title(f"Temp space saved by compression, {_setting_text(res)} "
                 "(1 - physical / logical bytes)")
    ax.legend(handles=[Patch(color=colour(s), label=s) for s in series], title="codec",
              ncol=len(series), loc="upper center", fontsize=8, title_fontsize=8,
              framealpha=0.95)
    _finish(fig, path)


def saved_axis_low(saved):
    """The left end of a space-saved axis (%) for the savings `saved`: a multiple of 10 at
    least 5 below the smallest. Not clamped at 0: a configuration that stores more than it
    was given (auto storing raw, headers included) saves less than nothing and keeps its
    point, left of the line at 0."""
    return math.floor((min(list(saved) + [100]) - 5) / 10) * 10


def tradeoff_chart(found, path, kind="wall"):
    """Scatter per work_mem panel: x = space saved over the suite, y = geomean time cost
    over the spilling queries (kind wall|cpu) with its interval; colour = codec/level,
    marker = block size."""
    wms = sorted({r.run.work_mem for r in found})
    blocks = sorted({r.run.block for r in found})
    marker = {b: BLOCK_MARKERS[i % len(BLOCK_MARKERS)] for i, b in enumerate(blocks)}
    fig, axes = plt.subplots(1, len(wms), figsize=(max(5.2 * len(wms), 8.5), 5.4),
                             sharey=True, squeeze=False)
    saved_all = [100 * s for r in found for i in range(1, len(r.labels))
                 for s in [r.total_saved(i)] if s is not None]
    x_lo = saved_axis_low(saved_all)
    labels = []
    noisy_any = hollow_any = False
    for ax, wm in zip(axes[0], wms):
        left_out = []
        for res in (r for r in found if r.run.work_mem == wm):
            noisy = res.noisy()
            for i, lab in enumerate(res.labels[1:], 1):
                iv, s = res.suite("spilling", i, kind), res.total_saved(i)
                if iv is None or s is None:
                    left_out.append(f"{lab} {size_label(res.run.block)}")
                    continue
                if lab not in labels:
                    labels.append(lab)
                hollow = iv.holds_one()
                noisy_any |= noisy
                hollow_any |= hollow
                ax.errorbar(100 * s, 100 * (iv.est - 1),
                            yerr=[[100 * (iv.est - iv.lo)], [100 * (iv.hi - iv.est)]],
                            fmt=marker[res.run.block], color=colour(lab), markersize=7,
                            markerfacecolor="white" if hollow else colour(lab),
                            markeredgecolor="black", markeredgewidth=0.5 if not hollow else 1.2,
                            ecolor=colour(lab), elinewidth=1.2, capsize=2, zorder=3)
                if noisy:  # a dotted ring: the run's noise is past the limit
                    ax.scatter([100 * s], [100 * (iv.est - 1)], s=260, facecolors="none",
                               edgecolors="black", linestyles=":", linewidths=1.1, zorder=4)
        ax.axhline(0, color="black", linewidth=0.8)
        if x_lo < 0:
            ax.axvline(0, color="grey", linewidth=0.8, linestyle=":")
        if left_out:
            ax.text(0.01, 0.01, "not drawn (no spill or no interval): " + ", ".join(left_out),
                    transform=ax.transAxes, fontsize=7, va="bottom", color="dimgrey")
        ax.set_xlim(x_lo, 100)
        ax.grid(alpha=0.3)
        ax.set_title(f"work_mem {size_label(wm)}")
        ax.set_xlabel("temp space saved over all queries (%)")
    axes[0][0].set_ylabel(f"{KIND_SHORT[kind]} time cost vs none: geomean over spilling "
                          "queries (%)")
    handles = [plt.Line2D([], [], linestyle="", marker="o", color=colour(lab),
                          markeredgecolor="black", label=lab) for lab in labels]
    handles += [plt.Line2D([], [], linestyle="", marker=marker[b], color="white",
                           markeredgecolor="black", label=f"{size_label(b)} blocks")
                for b in blocks]
    if hollow_any:
        handles.append(plt.Line2D([], [], linestyle="", marker="o", color="white",
                                  markeredgecolor="black", label="hollow: no measurable difference"))
    if noisy_any:
        handles.append(plt.Line2D([], [], linestyle="", marker="o", markersize=13,
                                  markerfacecolor="none", markeredgecolor="black",
                                  markeredgewidth=0.8,
                                  label=f"ringed: noisy run (control > ±{100 * NOISE_LIMIT:.0f}%)"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
               frameon=False)
    fig.suptitle(f"Trade-off map, SF {found[0].run.sf}: space saved against {KINDS[kind]} "
                 "cost (95% intervals)\none point per codec/level/block size; lower right is "
                 "better")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def block_size_chart(found, path):
    """For the runs of one work_mem: saved %, peak and geomean wall and CPU ratios per codec,
    one bar per block size, for the codecs measured at more than one block size."""
    blocks_of = {}
    for res in found:
        for lab in res.labels[1:]:
            blocks_of.setdefault(lab, set()).add(res.run.block)
    codecs = [lab for lab, bs in blocks_of.items() if len(bs) > 1]
    blocks = sorted({res.run.block for res in found})
    block_labels = [f"{size_label(b)} blocks" for b in blocks]
    palette = ["#9ecae1", "#3182bd", "#08306b", "#6a51a3", "#54278f", "#3f007d"]
    block_colour = {bl: palette[k % len(palette)] for k, bl in enumerate(block_labels)}
    panels = {"saved": {}, "peak": {}, "wall": {}, "cpu": {}}
    for res in found:
        bl = f"{size_label(res.run.block)} blocks"
        for i, lab in enumerate(res.labels):
            if lab not in codecs:
                continue
            s, p = res.total_saved(i), res.total_peak_ratio(i)
            panels["saved"][(lab, bl)] = None if s is None else 100 * s
            panels["peak"][(lab, bl)] = None if p is None else 100 * p
            panels["wall"][(lab, bl)] = res.suite("spilling", i, "wall")
            panels["cpu"][(lab, bl)] = res.suite("spilling", i, "cpu")
    titles = {"saved": ("space saved over all queries (%)", "Temp space saved"),
              "peak": ("peak temp bytes, % of none's peak", "Peak temp space"),
              "wall": ("wall time / none (geomean, spilling)", "Wall time relative to none"),
              "cpu": ("CPU time / none (geomean, spilling)", "CPU time relative to none")}
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    for ax, (name, vals) in zip(axes, panels.items()):
        _grouped_bars(ax, codecs, block_labels, vals, block_colour.get)
        ax.set_xlabel("codec")
        ax.set_ylabel(titles[name][0])
        ax.set_title(titles[name][1])
        if name in ("wall", "cpu"):
            ax.axhline(1.0, color="black", linewidth=0.8)
    axes[0].set_ylim(0, 100)
    axes[0].legend(handles=[Patch(color=block_colour[bl], label=bl) for bl in block_labels],
                   fontsize=8, loc="lower left")
    r = found[0].run
    fig.suptitle(f"Block size, SF {r.sf}, work_mem {size_label(r.work_mem)} (each codec "
                 "against none at the same block size; 95% intervals, hatched = no "
                 "measurable difference)")
    _finish(fig, path)


def _rate_axis(ax, rates):
    """Log x axis in MB/s; the unlimited rate (0) sits one doubling right of the largest
    finite one, behind a dotted line. Returns {rate: x}."""
    finite = sorted(r for r in rates if r)
    top = finite[-1] * 2 if finite else 1
    xs = {r: (r if r else top) for r in rates}
    ax.set_xscale("log")
    ticks = sorted(xs.values())
    ax.set_xticks(ticks)
    ax.set_xticklabels([("unlimited" if x == top and 0 in rates else f"{x:g}") for x in ticks])
    ax.minorticks_off()
    if 0 in rates and finite:
        ax.axvline((finite[-1] * top) ** 0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("temp device bandwidth, MB/s (spillbench --io-limit; unlimited = page "
                  "cache)")
    return xs


def _rate_lines(ax, series, xs):
    """One line per codec over the rates, auto drawn last (on top) and thicker; a point is a
    number or an Interval (drawn with an error bar)."""
    order = sorted(series, key=lambda s: s == "auto")
    for k, label in enumerate(order):
        pts = sorted(series[label], key=lambda p: xs[p[0]])
        top = label == "auto"
        ivs = [v for _, v in pts if hasattr(v, "est")]
        ys = [v.est if hasattr(v, "est") else v for _, v in pts]
        yerr = [[v.est - v.lo for v in ivs], [v.hi - v.est for v in ivs]] if ivs else None
        dodge = 1.025 ** (k - (len(order) - 1) / 2) if ivs else 1   # error bars side by side
        ax.errorbar([xs[r] * dodge for r, _ in pts], ys, yerr=yerr, color=colour(label),
                    label=label, marker="o", markersize=6 if top else 4,
                    linewidth=2.6 if top else 1.4, capsize=3, zorder=5 if top else 3)
    ax.grid(alpha=0.3)
    ax.legend(title="codec", fontsize=8, title_fontsize=8)


def crossover_chart(series, path, title, ylabel, reference_line=None, ylim=None):
    """series: {label: [(rate in MB/s, 0 = unlimited; Interval or number)]}: a suite figure
    against I/O rate, one line per codec."""
    rates = sorted({r for pts in series.values() for r, _ in pts})
    fig, ax = plt.subplots(figsize=(10, 5.6))
    xs = _rate_axis(ax, rates)
    if reference_line is not None:
        ax.axhline(reference_line, color="black", linewidth=0.8)
    _rate_lines(ax, series, xs)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _finish(fig, path)

"""The report's PNG charts (matplotlib, Agg backend, 110 dpi).

Invariants: one colour per codec/level in every chart (CODEC_COLOURS, then a fallback
palette in first-seen order), so a reader can compare charts at a glance; every chart has a
title, axis labels with units and a legend; a missing value (query without spill, missing
baseline) is drawn as no bar, never as zero.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter  # noqa: E402

from .matrix import size_label  # noqa: E402
from .results import query_order  # noqa: E402

DPI = 110
CODEC_COLOURS = {
    "lz4": "#2ca02c",
    "zstd-1": "#9ecae1", "zstd-3": "#4292c6", "zstd-9": "#08519c",
    "zlib-1": "#fdae6b", "zlib-6": "#d94801",
}
FALLBACK = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
BLOCK_MARKERS = ["o", "s", "^", "D", "v", "P"]


_extra_colours = {}


def colour(label):
    if label in CODEC_COLOURS:
        return CODEC_COLOURS[label]
    if label not in _extra_colours:
        _extra_colours[label] = FALLBACK[len(_extra_colours) % len(FALLBACK)]
    return _extra_colours[label]


def _grouped_bars(ax, groups, series, values, width_total=0.82):
    """Bars for each group (x) and series (colour); values[(group, series)] may be None."""
    n = max(len(series), 1)
    width = width_total / n
    for i, s in enumerate(series):
        xs, ys = [], []
        for g_i, g in enumerate(groups):
            v = values.get((g, s))
            if v is not None:
                xs.append(g_i - width_total / 2 + width * (i + 0.5))
                ys.append(v)
        ax.bar(xs, ys, width=width, color=colour(s), label=s, edgecolor="white", linewidth=0.3)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _finish(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _setting_text(cmps):
    c = cmps[0].cell
    return f"SF {c.sf}, work_mem {size_label(c.work_mem)}, {size_label(c.block)} blocks"


def time_ratio_chart(cmps, path):
    """Per spilling query and codec: query time / time with codec none; plus the geomean and
    the control geomean over the queries that spill nothing (the noise yardstick)."""
    queries = sorted({q for c in cmps for q in c.spilling()}, key=query_order)
    groups = queries + ["geomean", "control"]
    series = [c.cell.codec_label for c in cmps]
    values = {}
    for c in cmps:
        for q in queries:
            values[(q, c.cell.codec_label)] = c.time_ratio(q)
        values[("geomean", c.cell.codec_label)] = c.geomean_time_ratio()
        values[("control", c.cell.codec_label)] = c.geomean_time_ratio_control()
    fig, ax = plt.subplots(figsize=(12, 4.6))
    _grouped_bars(ax, groups, series, values)
    ax.axhline(1.0, color="black", linewidth=0.9)
    ax.axvline(len(queries) - 0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_ylabel("query time / time with codec none")
    ax.set_xlabel("query (only queries that spill); geomean over them; control = geomean over "
                  "the queries that spill nothing (machine noise)")
    ax.set_title(f"Time relative to no compression, {_setting_text(cmps)} "
                 "(below 1 = faster)")
    ax.legend(title="codec", ncol=len(series), loc="upper left", fontsize=8, title_fontsize=8)
    top = max([v for v in values.values() if v is not None] + [1.2])
    ax.set_ylim(0, top * 1.18)
    _finish(fig, path)


def space_saved_chart(cmps, path):
    """Per spilling query and codec: % of the logical spill bytes that never reached disk."""
    queries = sorted({q for c in cmps for q in c.spilling()}, key=query_order)
    groups = queries + ["total"]
    series = [c.cell.codec_label for c in cmps]
    values = {}
    for c in cmps:
        for q in queries:
            s = c.saved(q)
            values[(q, c.cell.codec_label)] = None if s is None else 100 * s
        t = c.total_saved()
        values[("total", c.cell.codec_label)] = None if t is None else 100 * t
    fig, ax = plt.subplots(figsize=(12, 4.6))
    _grouped_bars(ax, groups, series, values)
    ax.axvline(len(queries) - 0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_ylim(0, 118)  # headroom above 100% for the legend, which must not hide bars
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("temp space saved (% of bytes spilled)")
    ax.set_xlabel("query (only queries that spill; total over all queries)")
    ax.set_title(f"Temp space saved by compression, {_setting_text(cmps)} "
                 "(1 - physical / logical bytes)")
    ax.legend(title="codec", ncol=len(series), loc="upper center", fontsize=8,
              title_fontsize=8, framealpha=0.95)
    _finish(fig, path)


def _time_cost(c):
    g = c.geomean_time_ratio()
    return None if g is None else 100 * (g - 1)


def _codec_cost(c):
    s = c.codec_share()
    return None if s is None else 100 * s


# metric -> (cost function, y label, title, log scale): codec time is always positive and
# spans two orders of magnitude between lz4 and zstd-9, so it is drawn on a log axis.
TRADEOFF_Y = {
    "time": (_time_cost, "time cost vs none: geomean over spilling queries (%)",
             "space saved against time cost", False),
    "codec": (_codec_cost, "codec time, % of none's summed query time (log)",
              "space saved against time spent in the codec (less load-sensitive)", True),
}


# Label offsets in points, tried in order until the label's box overlaps no earlier label
# and no marker: right-above, right-below, left-above, left-below, then further out.
_LABEL_OFFSETS = [(5, 4), (5, -12), (-5, 4), (-5, -12), (5, 14), (5, -22), (-5, 14), (-5, -22)]


def _place_labels(ax, fig, items, fontsize=7.5):
    """Annotate (x, y, text) items where a label fits without touching another label or
    marker (approximate boxes); a point with no free spot stays unlabelled, the legend names
    it by colour and marker."""
    fig.canvas.draw()
    px_per_pt = fig.dpi / 72
    char_w, line_h = 0.6 * fontsize * px_per_pt, 1.25 * fontsize * px_per_pt
    marker_r = 5 * px_per_pt
    pts = [ax.transData.transform((x, y)) for x, y, _ in items]
    boxes = [(px - marker_r, py - marker_r, px + marker_r, py + marker_r) for px, py in pts]
    for (x, y, text), (px, py) in zip(items, pts):
        w = char_w * len(text)
        choice = None
        for dx, dy in _LABEL_OFFSETS:
            x0 = px + dx * px_per_pt - (w if dx < 0 else 0)
            y0 = py + dy * px_per_pt
            box = (x0, y0, x0 + w, y0 + line_h)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]
                       for b in boxes):
                choice = (dx, dy)
                boxes.append(box)
                break
        if choice is None:
            continue
        ax.annotate(text, (x, y), textcoords="offset points", xytext=choice, fontsize=fontsize,
                    ha="right" if choice[0] < 0 else "left")


def tradeoff_chart(cmps, path, metric="time"):
    """Scatter per work_mem panel: x = space saved over the suite, y = the cost named by
    metric (TRADEOFF_Y); colour = codec/level, marker = block size."""
    cost, ylabel, what, log = TRADEOFF_Y[metric]
    wms = sorted({c.cell.work_mem for c in cmps})
    blocks = sorted({c.cell.block for c in cmps})
    marker = {b: BLOCK_MARKERS[i % len(BLOCK_MARKERS)] for i, b in enumerate(blocks)}
    fig, axes = plt.subplots(1, len(wms), figsize=(max(5.2 * len(wms), 8.5), 5.4),
                             sharey=True, squeeze=False)
    ys_all = [cost(c) for c in cmps if cost(c) is not None]
    lo, hi = min(ys_all + [0]), max(ys_all + [0])
    pad = (hi - lo) * 0.12 + 2
    xs_all = [100 * c.total_saved() for c in cmps if c.total_saved() is not None]
    x_lo = max(0, int(min(xs_all + [100]) - 10) // 10 * 10)
    labels = {}
    for ax, wm in zip(axes[0], wms):
        labels[ax] = []
        for c in (c for c in cmps if c.cell.work_mem == wm):
            y, s = cost(c), c.total_saved()
            if y is None or s is None:
                continue
            x = 100 * s
            ax.scatter(x, y, s=60, color=colour(c.cell.codec_label), marker=marker[c.cell.block],
                       edgecolor="black", linewidth=0.5, zorder=3)
            labels[ax].append((x, y, c.cell.codec_label))
        ax.set_xlim(x_lo, 100)
        if log:
            ax.set_yscale("log")
            ax.set_ylim(max(min(ys_all or [1]) / 1.6, 0.01), max(ys_all or [1]) * 1.6)
            ax.yaxis.set_major_locator(FixedLocator(
                [m * 10 ** e for e in range(-2, 4) for m in (1, 2, 5)]))
            ax.yaxis.set_major_formatter(ScalarFormatter())
            ax.yaxis.set_minor_locator(NullLocator())
        else:
            ax.axhline(0, color="black", linewidth=0.8)
            ax.set_ylim(lo - pad, hi + pad)
        ax.grid(alpha=0.3)
        ax.set_title(f"work_mem {size_label(wm)}")
        ax.set_xlabel("temp space saved over all queries (%)")
    axes[0][0].set_ylabel(ylabel)
    codec_labels = []
    for c in cmps:
        if c.cell.codec_label not in codec_labels:
            codec_labels.append(c.cell.codec_label)
    handles = [plt.Line2D([], [], linestyle="", marker="o", color=colour(lab),
                          markeredgecolor="black", label=lab) for lab in codec_labels]
    handles += [plt.Line2D([], [], linestyle="", marker=marker[b], color="white",
                           markeredgecolor="black", label=f"{size_label(b)} blocks")
                for b in blocks]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
               frameon=False)
    fig.suptitle(f"Trade-off map, SF {cmps[0].cell.sf}: {what}\n"
                 "one point per codec/level/block size; lower right is better")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    for ax, items in labels.items():
        _place_labels(ax, fig, items)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def block_size_chart(cmps, path):
    """For one work_mem: saved % and geomean time ratio per codec, bars per block size."""
    blocks_of = {}
    for c in cmps:
        blocks_of.setdefault(c.cell.codec_label, set()).add(c.cell.block)
    codecs = [label for label, bs in blocks_of.items() if len(bs) > 1]
    cmps = [c for c in cmps if c.cell.codec_label in codecs]
    blocks = sorted({c.cell.block for c in cmps})
    labels = [f"{size_label(b)} blocks" for b in blocks]
    saved_v, time_v, peak_v = {}, {}, {}
    for c in cmps:
        key = (c.cell.codec_label, f"{size_label(c.cell.block)} blocks")
        s = c.total_saved()
        saved_v[key] = None if s is None else 100 * s
        time_v[key] = c.geomean_time_ratio()
        p = c.total_peak_ratio()
        peak_v[key] = None if p is None else 100 * p
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    block_colours = ["#9ecae1", "#3182bd", "#08306b", "#6a51a3", "#54278f", "#3f007d"]
    for ax, vals, ylabel, title in (
            (axes[0], saved_v, "space saved over all queries (%)", "Temp space saved"),
            (axes[1], peak_v, "peak temp bytes, % of none's peak", "Peak temp space"),
            (axes[2], time_v, "time / none (geomean, spilling queries)",
             "Time relative to none (wall clock, noisy)")):
        width = 0.8 / len(labels)
        for i, lab in enumerate(labels):
            xs = [j - 0.4 + width * (i + 0.5) for j, cod in enumerate(codecs)
                  if vals.get((cod, lab)) is not None]
            ys = [vals[(cod, lab)] for cod in codecs if vals.get((cod, lab)) is not None]
            ax.bar(xs, ys, width=width, label=lab, color=block_colours[i % len(block_colours)])
        ax.set_xticks(range(len(codecs)))
        ax.set_xticklabels(codecs)
        ax.set_xlabel("codec")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[2].axhline(1.0, color="black", linewidth=0.8)
    axes[0].set_ylim(0, 100)
    axes[0].legend(fontsize=8, loc="lower left")
    c = cmps[0].cell
    fig.suptitle(f"Block size, SF {c.sf}, work_mem {size_label(c.work_mem)} "
                 "(each codec against none at the same block size)")
    _finish(fig, path)

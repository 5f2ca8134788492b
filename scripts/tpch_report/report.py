"""Writing DIR/report.md, DIR/results.csv, DIR/matrix.json and DIR/charts/*.png from the
cached cells.

Invariants: the report is a pure function of the files in DIR (cells, machine.json,
command.txt, notes.md, recheck/), so --report-only regenerates it byte for byte; every table
states its setting (SF, work_mem, block size) and every time ratio is against codec none at
that same setting.
"""

import csv
import json
import os

from . import charts, machine, results, runner
from .matrix import describe, size_label
from .results import MB, query_order

DISCLAIMER = ("Results are derived from TPC-H (data from this project's own generator, the 22 "
              "queries as hand-built plans); they are not comparable to published TPC-H "
              "results.")

CSV_FIELDS = ["sf", "codec", "level", "block_size", "work_mem", "repeat", "query", "rows",
              "seconds", "spill_files", "logical_bytes", "physical_bytes", "peak_temp_bytes",
              "op_peak_bytes", "mem_peak_bytes", "heap_peak_bytes", "codec_ms",
              "hash_joins_spilled", "max_batches", "hash_aggs_spilled", "agg_depth",
              "sorts_spilled", "sort_passes", "sort_runs"]


def r2(v):
    return "-" if v is None else f"{v:.2f}"


def pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def mb(nbytes):
    return f"{nbytes / MB:.1f}"


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def _setting_title(sf, block, wm):
    return f"SF {sf}, work_mem {size_label(wm)}, {size_label(block)} blocks"


def write_csv(path, found):
    """Every query row (and the total) of every cell, with the cell's configuration."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for res in found.values():
            c = res.cell
            cfg = {"sf": c.sf, "codec": c.codec, "level": c.level or "default",
                   "block_size": c.block, "work_mem": c.work_mem, "repeat": c.repeat}
            for name in sorted(res.queries, key=query_order):
                w.writerow({**res.queries[name], **cfg})
            w.writerow({**res.total, **cfg})


def _summary_table(base, cmps):
    rows = [["none", f"{base.total['seconds']:.2f}", "1.00", "1.00", "1.00",
             mb(base.total["logical_bytes"]), mb(base.total["physical_bytes"]),
             pct(results.saved(base.total["logical_bytes"], base.total["physical_bytes"])),
             mb(base.total["peak_temp_bytes"]), "100%", f"{base.total['codec_ms'] / 1000:.1f}"]]
    for c in cmps:
        t = c.res.total
        rows.append([c.cell.codec_label, f"{t['seconds']:.2f}", r2(c.total_time_ratio()),
                     r2(c.geomean_time_ratio()), r2(c.geomean_time_ratio_control()),
                     mb(t["logical_bytes"]), mb(t["physical_bytes"]), pct(c.total_saved()),
                     mb(t["peak_temp_bytes"]), pct(c.total_peak_ratio()),
                     f"{t['codec_ms'] / 1000:.1f}"])
    return _table(["codec", "time s (sum)", "time / none (sum)",
                   "geomean time / none (spilling)", "control: geomean (non-spilling)",
                   "logical MB", "physical MB", "saved", "peak temp MB", "peak / none",
                   "codec s"], rows)


def _time_table(base, cmps):
    header = ["query", "spilled MB", "none s"] + [c.cell.codec_label for c in cmps]
    rows = []
    for q in sorted(base.queries, key=query_order):
        rows.append([q, mb(base.q(q, "logical_bytes")) if base.q(q, "logical_bytes") else "-",
                     f"{base.q(q, 'seconds'):.3f}"] +
                    [r2(c.time_ratio(q)) if q in c.res.queries else "?" for c in cmps])
    rows.append(["**geomean (spilling)**", "", ""] + [r2(c.geomean_time_ratio()) for c in cmps])
    rows.append(["*control: geomean (non-spilling)*", "", ""] +
                [r2(c.geomean_time_ratio_control()) for c in cmps])
    rows.append(["**total (sum of times)**", mb(base.total["logical_bytes"]),
                 f"{base.total['seconds']:.2f}"] + [r2(c.total_time_ratio()) for c in cmps])
    return _table(header, rows)


def _space_table(base, cmps):
    header = ["query", "logical MB", "none MB"] + \
        [f"{c.cell.codec_label} MB (saved)" for c in cmps]
    rows = []

    def cell_text(c, q):
        if q not in c.res.queries:
            return "?"
        if not c.res.q(q, "logical_bytes"):
            return "-"
        return f"{mb(c.res.q(q, 'physical_bytes'))} ({pct(c.saved(q))})"

    for q in sorted(base.queries, key=query_order):
        if not base.q(q, "logical_bytes"):
            continue
        rows.append([q, mb(base.q(q, "logical_bytes")), mb(base.q(q, "physical_bytes"))] +
                    [cell_text(c, q) for c in cmps])
    rows.append(["**total**", mb(base.total["logical_bytes"]), mb(base.total["physical_bytes"])] +
                [f"{mb(c.res.total['physical_bytes'])} ({pct(c.total_saved())})" for c in cmps])
    return _table(header, rows)


def _peak_table(base, cmps):
    header = ["query", "none peak MB"] + [f"{c.cell.codec_label}" for c in cmps]
    rows = []
    for q in sorted(base.queries, key=query_order):
        if not base.q(q, "peak_temp_bytes"):
            continue
        rows.append([q, mb(base.q(q, "peak_temp_bytes"))] +
                    [pct(c.peak_ratio(q)) if q in c.res.queries else "?" for c in cmps])
    rows.append(["**max over queries**", mb(base.total["peak_temp_bytes"])] +
                [pct(c.total_peak_ratio()) for c in cmps])
    return _table(header, rows)


def _recheck_section(out_dir, found):
    """Compare hand reruns in DIR/recheck/<key>.json with the cached cell of the same key."""
    rdir = os.path.join(out_dir, "recheck")
    if not os.path.isdir(rdir):
        return []
    by_key = {res.cell.key: res for res in found.values()}
    lines = []
    for name in sorted(os.listdir(rdir)):
        key = name[:-len(".json")] if name.endswith(".json") else None
        doc = runner.load_cell_json(os.path.join(rdir, name)) if key else None
        if key not in by_key or doc is None:
            continue
        res = by_key[key]
        rerun = {q["query"]: q for q in doc["queries"]}
        cmd = _read_text(os.path.join(rdir, key + ".cmd"))
        lines += [f"### Rerun of cell `{key}`", ""]
        if cmd:
            lines += ["```sh", cmd, "```", ""]
        rows, diffs, bytes_equal = [], [], True
        for q in sorted(res.queries, key=query_order):
            if q not in rerun:
                continue
            a, b = res.q(q, "seconds"), rerun[q]["seconds"]
            d = None if not a else b / a - 1
            if d is not None:
                diffs.append(abs(d))
            same = all(res.q(q, k) == rerun[q][k] for k in
                       ("rows", "logical_bytes", "physical_bytes", "peak_temp_bytes"))
            bytes_equal &= same
            rows.append([q, f"{a:.3f}", f"{b:.3f}", "-" if d is None else f"{100 * d:+.0f}%",
                         mb(res.q(q, "physical_bytes")), mb(rerun[q]["physical_bytes"]),
                         "yes" if same else "**no**"])
        ta, tb = res.total["seconds"], doc["total"]["seconds"]
        rows.append(["**total**", f"{ta:.2f}", f"{tb:.2f}", f"{100 * (tb / ta - 1):+.0f}%",
                     mb(res.total["physical_bytes"]), mb(doc["total"]["physical_bytes"]),
                     "yes" if bytes_equal else "**no**"])
        lines.append(_table(["query", "report s", "rerun s", "diff", "report physical MB",
                             "rerun physical MB", "rows and bytes identical"], rows))
        diffs.sort()
        med = diffs[len(diffs) // 2] if diffs else 0
        lines += ["", f"Rows, logical, physical and peak temp bytes identical for every query: "
                      f"**{'yes' if bytes_equal else 'NO'}**. Query times differ by a median of "
                      f"{100 * med:.0f}% (largest {100 * max(diffs or [0]):.0f}%); the suite "
                      f"total by {100 * (tb / ta - 1):+.0f}%.", ""]
    return ["## Rerun check", "",
            "A cell rerun by hand with the command its cell recorded (see docs/report.md); "
            "bytes must match exactly, times within the machine's noise.", ""] + lines if lines \
        else []


def _cells_section(found):
    """When each cell finished and how long it took: load drifts between cells, and this is
    what lets a reader see which cells ran close together."""
    rows = [[f"`{res.cell.key}`", res.meta.get("finished", "?"), res.meta.get("wall_s", "?"),
             f"{res.total['seconds']:.2f}"] for res in found.values()]
    return ["<details><summary>cells: finish time and wall time</summary>", "",
            _table(["cell", "finished", "wall s (all repeats)", "suite time s (median)"], rows),
            "", "</details>", ""]


def _machine_section(m):
    rows = [["CPU", f"{m.get('cpu')} ({m.get('cores')} cores visible)"],
            ["memory", f"{m.get('memory_gib')} GiB"],
            ["OS / kernel", f"{m.get('os')} / {m.get('kernel')}"],
            ["compiler", m.get("compiler")],
            ["libraries", ", ".join(m.get("libraries", []))],
            ["buffile commit", m.get("buffile_commit")],
            ["temp dir", f"`{m.get('temp_dir')}` on {m.get('temp_fs')}"],
            ["data dir", f"`{m.get('data_dir')}` ("
                         + ("same device as the temp dir" if m.get("data_same_device") is True
                            else "device: " + str(m.get("data_same_device"))) + ")"],
            ["load average at start", m.get("load_at_start")],
            ["report tool", f"python {m.get('python')}, matplotlib {m.get('matplotlib')}"]]
    return ["## Machine", "", _table(["", ""], rows), ""]


def _run_minutes(found):
    return sum(res.meta.get("wall_s", 0) for res in found.values()) / 60


def _draw(out_dir, found, cmps_by_setting):
    """Draw all charts; return {(block, wm) or kind: relative path}."""
    cdir = os.path.join(out_dir, "charts")
    os.makedirs(cdir, exist_ok=True)
    drawn = {}
    main = results.main_block(found)
    all_cmps = [c for cmps in cmps_by_setting.values() for c in cmps]
    if all_cmps:
        for metric, rel in (("time", "charts/tradeoff.png"),
                            ("codec", "charts/tradeoff-codec-time.png")):
            charts.tradeoff_chart(all_cmps, os.path.join(out_dir, rel), metric)
            drawn["tradeoff-" + metric] = rel
    for (block, wm), cmps in cmps_by_setting.items():
        if block != main or not cmps:
            continue
        tag = f"wm{size_label(wm)}-b{size_label(block)}"
        t, s = f"charts/time-ratio-{tag}.png", f"charts/space-saved-{tag}.png"
        charts.time_ratio_chart(cmps, os.path.join(out_dir, t))
        charts.space_saved_chart(cmps, os.path.join(out_dir, s))
        drawn[(block, wm)] = (t, s)
    by_wm = {}
    for (block, wm), cmps in cmps_by_setting.items():
        by_wm.setdefault(wm, []).extend(cmps)
    for wm, cmps in by_wm.items():
        if len({c.cell.block for c in cmps}) > 1:
            rel = f"charts/block-size-wm{size_label(wm)}.png"
            charts.block_size_chart(cmps, os.path.join(out_dir, rel))
            drawn[("blocks", wm)] = rel
    return drawn


def write(out_dir, spec, cells, args, temp_dir, data_dir):
    """Write the report from whatever cells are cached; return the number missing."""
    found, missing = results.load(out_dir, cells)
    mpath = os.path.join(out_dir, "machine.json")
    m = runner.load_meta(mpath)
    if not m:
        m = machine.collect(args.spillbench, temp_dir, data_dir)
        with open(mpath, "w", encoding="utf-8") as f:
            json.dump(m, f, indent=1)
    with open(os.path.join(out_dir, "matrix.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)
    write_csv(os.path.join(out_dir, "results.csv"), found)

    cmps = results.comparisons(found)
    settings = results.settings(found)
    bases = {(b, w): found.get((cells[0].sf, "none", "", b, w)) for b, w in settings}
    cmps_by_setting = {s: [c for c in cmps if (c.cell.block, c.cell.work_mem) == s]
                       for s in settings}
    drawn = _draw(out_dir, found, cmps_by_setting)
    main = results.main_block(found)
    sf = cells[0].sf

    title = args.title or f"TPC-H spill compression report, SF {sf}"
    L = [f"# {title}", "", f"> {DISCLAIMER}", "",
         "Each **cell** is one `spillbench` run of all 22 queries with one codec/level, block "
         "size and work_mem (`--repeat=N`: times are the median of N runs; byte counts are "
         "exact and identical across repeats). Every codec is compared with codec `none` at "
         "the same work_mem and block size. *Time ratio* = query time / time with none (below "
         "1 = faster). *Saved* = 1 - physical/logical bytes (the share of spilled bytes that "
         "never reached the disk). *Peak / none* = peak temp bytes on disk relative to none. "
         "Geometric means are over the queries that spilled in the none cell of that setting "
         "(listed under each table). The *control* column is the same geomean over the queries "
         "that spill nothing: the codec never runs there, so any distance from 1.00 is the "
         "machine's noise between the two cells, and a cost in the spilling geomean smaller "
         "than that is not a measured cost.", ""]
    notes = _read_text(os.path.join(out_dir, "notes.md"))
    if notes:
        L += [notes, ""]

    L += ["## How this was made", ""]
    cmd = _read_text(os.path.join(out_dir, "command.txt"))
    if cmd:
        L += ["```sh", cmd, "```", ""]
    L += [f"Matrix (`{os.path.basename(args.matrix)}`, also in `matrix.json`), "
          f"{len(cells)} cells, {len(found)} present"
          + (f", **{len(missing)} missing**" if missing else "") + ":", ""]
    L += [f"- {line}" for line in describe(spec, args.sf)]
    L += ["", f"Run time: {_run_minutes(found):.0f} min of spillbench wall time over the cells. "
          "Raw data: `cells/<key>.json` (spillbench's own JSON, one per cell, with "
          "`<key>.meta.json` holding the exact command and wall time) and `results.csv` (every "
          "query row of every cell with its configuration). Rerunning the command reuses every "
          "finished cell; `--report-only` redraws the report from them.", ""]
    if missing:
        L += ["Missing cells: " + ", ".join(f"`{c.key}`" for c in missing), ""]
    L += _cells_section(found)
    L += _machine_section(m)

    L += ["## Summary", ""]
    if "tradeoff-time" in drawn:
        L += [f"![trade-off map]({drawn['tradeoff-time']})", "",
              "Each point is one codec/level (and block size) at one work_mem: x = share of "
              "the suite's spilled bytes saved, y = geomean time cost over the spilling queries "
              "against none (negative = compression made spilling queries faster).", "",
              f"![trade-off map, codec time]({drawn['tradeoff-codec']})", "",
              "The same points with y = time spent in the codec (compress + decompress, summed "
              "over all queries) as a share of none's summed query time: what the codec itself "
              "costs. It is wall time inside the codec calls, so load inflates it too, but "
              "only during the codec's own work, not the whole difference of two runs.", ""]
    for block, wm in settings:
        base = bases[(block, wm)]
        if base is None:
            continue
        L += [f"### {_setting_title(sf, block, wm)}", "",
              _summary_table(base, cmps_by_setting[(block, wm)]), ""]
        sp = [q for q in sorted(base.queries, key=query_order) if base.q(q, "logical_bytes")]
        L += [f"Spilling queries ({len(sp)}): {', '.join(sp) or 'none'}.", ""]
    for key, rel in drawn.items():
        if isinstance(key, tuple) and key[0] == "blocks":
            L += [f"![block sizes at work_mem {size_label(key[1])}]({rel})", ""]

    L += ["## Per query", ""]
    for block, wm in settings:
        base, cmps = bases[(block, wm)], cmps_by_setting[(block, wm)]
        if base is None or not cmps:
            continue
        fold = block != main
        L += [f"### {_setting_title(sf, block, wm)}", ""]
        if fold:
            L += ["<details><summary>tables</summary>", ""]
        if (block, wm) in drawn:
            t, s = drawn[(block, wm)]
            L += [f"![time ratio]({t})", "", f"![space saved]({s})", ""]
        L += ["Time relative to none (none's time in seconds):", "", _time_table(base, cmps), "",
              "Temp bytes written (physical MB, % saved of the logical bytes), spilling "
              "queries:", "", _space_table(base, cmps), "",
              "Peak temp bytes on disk relative to none:", "", _peak_table(base, cmps), ""]
        if fold:
            L += ["</details>", ""]

    L += _recheck_section(out_dir, found)
    problems = results.consistency_problems(found)
    L += ["## Consistency checks", "",
          "Across all cells, every query returns the same number of rows, and every codec "
          "spills exactly the logical bytes codec none spills at the same work_mem and block "
          "size (spill decisions do not depend on the codec): "
          + ("**holds**." if not problems else "**violated**:"), ""]
    L += [f"- {p}" for p in problems[:30]]
    L += ["", "Column meanings are those of spillbench (docs/executor.md). Times are wall "
          "clock on the machine above, which other jobs shared during the run: single-query "
          "times vary by tens of percent between runs, and sub-second queries that do not "
          "spill show that noise directly in their ratios. Byte counts are exact.", ""]
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(L).rstrip() + "\n")
    return len(missing)

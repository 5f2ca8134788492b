"""Writing DIR/report.md, DIR/results.csv, DIR/matrix.json and DIR/charts/*.png from the
cached paired runs.

Invariants: the report is a pure function of the files in DIR (cells, machine.json,
command.txt, notes.md), so --report-only regenerates it byte for byte; every table states
its setting (SF, work_mem, block size) and every time ratio is against codec none of the
same paired run, with its 95% interval, wall and CPU separately; a ratio whose interval
holds 1.0 reads "no measurable difference"; a run whose control interval is wider than
+-5% is flagged at the top of the report.
"""

import csv
import json
import os

from . import charts, machine
from .charts import KIND_SHORT
from .matrix import describe, size_label
from .results import BLOCK_CODECS, MB, NOISE_LIMIT, consistency_problems, main_block
from .stats import NO_DIFFERENCE, fmt_ratio, verdict

DISCLAIMER = ("Results are derived from TPC-H (data from this project's own generator, the 22 "
              "queries as hand-built plans); they are not comparable to published TPC-H "
              "results.")

METHOD = (
    "Each **run** is one paired `spillbench` invocation at one work_mem and block size with "
    "all the codecs of that setting in it. Per query: one warm-up run with codec `none` (not "
    "counted), then `--rounds` rounds, each running every codec once in an order shuffled per "
    "round and query (seed in the run table), so a slow spell of the machine hits all codecs "
    "alike. A *time ratio* is query time / time with `none` in the same round; the figure is "
    "the geometric mean of the per-round ratios with a 95% Student t interval on their "
    "logarithms (n = rounds), for wall-clock time and for CPU time (user + system of the "
    "process) separately. A suite *geomean* takes per round the geometric mean over the "
    "queries that spill (listed under each table), then the same interval over the rounds. "
    f"A ratio whose interval holds 1.00 is written **{NO_DIFFERENCE}** (with its interval: "
    "the difference the run could have excluded), never as a speed-up or a slow-down. The "
    "*control* is the same geomean over the queries that spill nothing: the codec never runs "
    "there, so it measures the machine's noise; a run whose control interval is wider than "
    f"±{100 * NOISE_LIMIT:.0f}% is flagged. *Saved* = 1 - physical/logical bytes (the share "
    "of spilled bytes that never reached the disk); *peak / none* = peak temp bytes on disk "
    "relative to none. Byte counts are exact and identical in every round (auto's physical "
    "bytes, which depend on timing, are those of round 0); spillbench checks that every run "
    "of a query returns the same answer.")

CSV_FIELDS = ["sf", "work_mem", "block_size", "rounds", "codec", "level", "query", "spills",
              "rows", "wall_s_median", "cpu_s_median", "codec_ms_median", "spill_files",
              "logical_bytes", "physical_bytes", "peak_temp_bytes", "op_peak_bytes", "mem",
              "wall_ratio", "wall_lo", "wall_hi", "cpu_ratio", "cpu_lo", "cpu_hi"]


def pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def mb(nbytes):
    return f"{nbytes / MB:.1f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def load_text(values):
    return " ".join(f"{x:.2f}" for x in values) if values else "?"


def setting_title(run):
    return f"SF {run.sf}, work_mem {size_label(run.work_mem)}, {size_label(run.block)} blocks"


def write_csv(path, found):
    """Every query of every codec of every run: medians, bytes and ratios."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for res in found:
            r = res.run
            for i, (codec, level) in enumerate(r.codecs):
                for q in res.queries():
                    row = {**res.cfg(q, i), "sf": r.sf, "work_mem": r.work_mem,
                           "block_size": r.block, "rounds": r.rounds, "codec": codec,
                           "level": level or "default", "query": q, "spills": res.spills(q),
                           "rows": res.by_query[q]["rows"]}
                    for kind in ("wall", "cpu"):
                        iv = res.ratio(q, i, kind)
                        if iv is not None:
                            row.update({f"{kind}_ratio": f"{iv.est:.4f}",
                                        f"{kind}_lo": f"{iv.lo:.4f}", f"{kind}_hi": f"{iv.hi:.4f}"})
                    w.writerow(row)


def noise_section(found, cells="cells"):
    """The loud warning about runs whose control interval is wider than the limit (cells:
    where their files are, relative to the report)."""
    noisy = [res for res in found if res.noisy()]
    if not noisy:
        return []
    lines = [f"> **WARNING: {len(noisy)} noisy run(s).** The control interval (queries that "
             "spill nothing, where the codec never runs) is wider than "
             f"±{100 * NOISE_LIMIT:.0f}%: the machine was too busy for differences of a few "
             "percent to show, and their time ratios say little beyond their (wide) "
             f"intervals. Rerun them on a quiet machine (delete `{cells}/<key>.json` and run "
             "the same command):", ">"]
    for res in noisy:
        m = res.meta
        lines.append(f"> - `{res.run.key}`: control ±{100 * res.noise():.1f}%, load average "
                     f"{load_text(m.get('load_before'))} before, "
                     f"{load_text(m.get('load_after'))} after")
    return lines + [""]


def runs_section(found):
    """When each run finished, how long it took, the load around it and its noise."""
    rows = []
    for res in found:
        m, d = res.meta, res.doc
        noise = res.noise()
        rows.append([f"`{res.run.key}`", m.get("finished", "?"), m.get("wall_s", "?"),
                     d.get("seed", "?"),
                     f"{load_text(m.get('load_before'))} / {load_text(m.get('load_after'))}",
                     f"{load_text(d.get('load_start'))} / {load_text(d.get('load_end'))}",
                     "-" if noise is None else f"±{100 * noise:.1f}%"
                     + (" **NOISY**" if res.noisy() else "")])
    return [table(["run", "finished", "wall s", "seed", "load avg before / after (1, 5, 15 min)",
                   "spillbench load start / end", "control interval (widest)"], rows), ""]


def machine_section(m):
    rows = [["CPU", f"{m.get('cpu')} ({m.get('cores')} cores visible)"],
            ["memory", f"{m.get('memory_gib')} GiB"],
            ["OS / kernel", f"{m.get('os')} / {m.get('kernel')}"],
            ["compiler", m.get("compiler")],
            ["libraries", ", ".join(m.get("libraries", []))],
            ["buffile commit", m.get("buffile_commit")],
            ["spillbench", f"`{m.get('spillbench')}`"],
            ["temp dir", f"`{m.get('temp_dir')}` on {m.get('temp_fs')}"],
            ["data dir", f"`{m.get('data_dir')}` ("
                         + ("same device as the temp dir" if m.get("data_same_device") is True
                            else "same device as the temp dir: "
                            + str(m.get("data_same_device"))) + ")"],
            ["report tool", f"python {m.get('python')}, matplotlib {m.get('matplotlib')}"]]
    return ["## Machine", "", table(["", ""], rows), "",
            "Paths are shown relative to the repository, or as placeholders (`<data-dir>`, "
            "`<temp-dir>`) when they lie outside it.", ""]


def summary_table(res):
    base = res.total(0)
    rows = [["none", f"reference: {base['wall_s_median_sum']:.2f} s",
             f"reference: {base['cpu_s_median_sum']:.2f} s", "-",
             f"{base['codec_ms_median_sum'] / 1000:.1f}", mb(base["logical_bytes"]),
             mb(base["physical_bytes"]), pct(res.total_saved(0)), mb(base["peak_temp_bytes"]),
             "100%"]]
    for i, label in enumerate(res.labels[1:], 1):
        t = res.total(i)
        wall = res.suite("spilling", i, "wall")
        rows.append([label, f"{fmt_ratio(wall)}: {verdict(wall)}"
                     if wall and not wall.holds_one() else fmt_ratio(wall),
                     fmt_ratio(res.suite("spilling", i, "cpu")),
                     fmt_ratio(res.suite("control", i, "wall")),
                     f"{t['codec_ms_median_sum'] / 1000:.1f}", mb(t["logical_bytes"]),
                     mb(t["physical_bytes"]), pct(res.total_saved(i)),
                     mb(t["peak_temp_bytes"]), pct(res.total_peak_ratio(i))])
    return table(["codec", "wall / none (geomean, spilling)", "CPU / none (geomean, spilling)",
                  "control: wall / none (non-spilling)", "codec s", "logical MB",
                  "physical MB", "saved", "peak temp MB", "peak / none"], rows)


def time_table(res, kind):
    labels = res.labels[1:]
    rows = []
    for q in res.queries():
        c0 = res.cfg(q, 0)
        rows.append([q, mb(c0["logical_bytes"]) if c0["logical_bytes"] else "-",
                     f"{c0[f'{kind}_s_median']:.3f}"] +
                    [fmt_ratio(res.ratio(q, i, kind)) for i in range(1, len(labels) + 1)])
    for which, name in (("spilling", "**geomean (spilling)**"),
                        ("control", "*control: geomean (non-spilling)*")):
        rows.append([name, "", ""] + [fmt_ratio(res.suite(which, i, kind))
                                      for i in range(1, len(labels) + 1)])
    return table(["query", "spilled MB", f"none {KIND_SHORT[kind]} s (median)"] + labels, rows)


def space_table(res):
    header = ["query", "logical MB", "none MB"] + [f"{lab} MB (saved)" for lab in res.labels[1:]]
    rows = []
    for q in res.suite_queries("spilling"):
        c0 = res.cfg(q, 0)
        rows.append([q, mb(c0["logical_bytes"]), mb(c0["physical_bytes"])] +
                    [f"{mb(res.cfg(q, i)['physical_bytes'])} ({pct(res.saved(q, i))})"
                     for i in range(1, len(res.labels))])
    t0 = res.total(0)
    rows.append(["**total**", mb(t0["logical_bytes"]), mb(t0["physical_bytes"])] +
                [f"{mb(res.total(i)['physical_bytes'])} ({pct(res.total_saved(i))})"
                 for i in range(1, len(res.labels))])
    return table(header, rows)


def peak_table(res):
    rows = []
    for q in res.queries():
        peak = res.cfg(q, 0)["peak_temp_bytes"]
        if peak:
            rows.append([q, mb(peak)] + [pct(res.peak_ratio(q, i))
                                         for i in range(1, len(res.labels))])
    rows.append(["**max over queries**", mb(res.total(0)["peak_temp_bytes"])] +
                [pct(res.total_peak_ratio(i)) for i in range(1, len(res.labels))])
    return table(["query", "none peak MB"] + res.labels[1:], rows)


def auto_table(res):
    """What codec=auto chose per spilling query: blocks per codec, probing time, reason."""
    if "auto" not in res.labels:
        return []
    i = res.index("auto")
    rows = []
    for q in res.suite_queries("spilling"):
        c = res.cfg(q, i)
        blocks = c.get("blocks_by_codec") or []
        n = sum(blocks)
        shares = ", ".join(f"{name} {100 * b / n:.0f}%" for name, b in zip(BLOCK_CODECS, blocks)
                           if b) if n else "-"
        rows.append([q, shares, f"{c.get('auto_probe_ms', 0):.1f}",
                     c.get("auto_reason") or "-"])
    return ["codec=auto's choices (blocks written per codec in round 0, time spent probing "
            "other codecs, reason of the last decision):", "",
            table(["query", "blocks by codec", "probe ms", "last decision"], rows), ""]


def _draw(out_dir, found):
    """Draw all charts; return {key: relative path} (key: run key, 'tradeoff-wall|cpu',
    ('blocks', work_mem))."""
    os.makedirs(os.path.join(out_dir, "charts"), exist_ok=True)
    drawn = {}
    if any(len(res.labels) > 1 for res in found):
        for kind in ("wall", "cpu"):
            rel = f"charts/tradeoff-{kind}.png"
            charts.tradeoff_chart(found, os.path.join(out_dir, rel), kind)
            drawn["tradeoff-" + kind] = rel
    main = main_block(found)
    for res in found:
        if res.run.block != main or len(res.labels) < 2 or not res.suite_queries("spilling"):
            continue
        tag = f"wm{size_label(res.run.work_mem)}-b{size_label(res.run.block)}"
        t, s = f"charts/time-ratio-{tag}.png", f"charts/space-saved-{tag}.png"
        charts.time_ratio_chart(res, os.path.join(out_dir, t))
        charts.space_saved_chart(res, os.path.join(out_dir, s))
        drawn[res.run.key] = (t, s)
    for wm in sorted({res.run.work_mem for res in found}):
        same = [res for res in found if res.run.work_mem == wm]
        if len({res.run.block for res in same}) > 1:
            rel = f"charts/block-size-wm{size_label(wm)}.png"
            charts.block_size_chart(same, os.path.join(out_dir, rel))
            drawn[("blocks", wm)] = rel
    return drawn


def write(out_dir, spec, runs, args, found, missing, m):
    """Write the report from the cached runs found (missing: runs not cached; m: the
    machine description)."""
    with open(os.path.join(out_dir, "matrix.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)
    write_csv(os.path.join(out_dir, "results.csv"), found)
    drawn = _draw(out_dir, found)
    sf = runs[0].sf

    L = [f"# {args.title or f'TPC-H spill compression report, SF {sf}'}", "",
         f"> {DISCLAIMER}", ""]
    L += noise_section(found)
    L += [METHOD, ""]
    notes = read_text(os.path.join(out_dir, "notes.md"))
    if notes:
        L += [notes, ""]

    L += ["## How this was made", ""]
    cmd = read_text(os.path.join(out_dir, "command.txt"))
    if cmd:
        L += ["```sh", cmd, "```", ""]
    L += [f"Matrix (`{machine.shown_path(args.matrix, '<matrix-file>')}`, also in "
          f"`matrix.json`), {len(runs)} paired runs, {len(found)} present"
          + (f", **{len(missing)} missing**" if missing else "") + ":", ""]
    L += [f"- {line}" for line in describe(spec, args.sf)]
    minutes = sum(res.meta.get("wall_s", 0) for res in found) / 60
    L += ["", f"Run time: {minutes:.0f} min of spillbench wall time. Raw data: "
          "`cells/<key>.json` (spillbench's own JSON: every round of every query and codec, "
          "the ratios and intervals), with `<key>.meta.json` holding the exact command, wall "
          "time and load average before and after; `results.csv` has every query of every "
          "codec of every run with its medians, bytes and ratios. Rerunning the command "
          "reuses every finished run; `--report-only` redraws the report from them.", ""]
    if missing:
        L += ["Missing runs: " + ", ".join(f"`{r.key}`" for r in missing), ""]
    L += runs_section(found)
    L += machine_section(m)

    L += ["## Summary", ""]
    for kind in ("wall", "cpu"):
        if f"tradeoff-{kind}" in drawn:
            L += [f"![trade-off map, {kind} time]({drawn[f'tradeoff-{kind}']})", ""]
    if "tradeoff-wall" in drawn:
        L += ["Each point is one codec/level (and block size) at one work_mem: x = share of the "
              "suite's spilled bytes saved, y = geomean time cost over the spilling queries "
              "against none, with its 95% interval (negative = faster); the first map in wall "
              "time, the second in CPU time.", ""]
    for res in found:
        L += [f"### {setting_title(res.run)}", "", summary_table(res), "",
              f"Spilling queries ({len(res.suite_queries('spilling'))}): "
              f"{', '.join(res.suite_queries('spilling')) or 'none'}. *reference*: none's "
              "summed median time over all queries; *codec s* = time in the codec (compress + "
              "decompress), summed over the queries' medians.", ""]
    for key, rel in drawn.items():
        if isinstance(key, tuple):
            L += [f"![block sizes at work_mem {size_label(key[1])}]({rel})", ""]

    L += ["## Per query", ""]
    main = main_block(found)
    for res in found:
        if len(res.labels) < 2:
            continue
        fold = res.run.block != main
        L += [f"### {setting_title(res.run)}", ""]
        if fold:
            L += ["<details><summary>tables</summary>", ""]
        if res.run.key in drawn:
            t, s = drawn[res.run.key]
            L += [f"![time ratio]({t})", "", f"![space saved]({s})", ""]
        L += ["Wall-clock time relative to none (none's median in seconds):", "",
              time_table(res, "wall"), "",
              "CPU time (user + system) relative to none:", "", time_table(res, "cpu"), "",
              "Temp bytes written (physical MB, % saved of the logical bytes), spilling "
              "queries:", "", space_table(res), "",
              "Peak temp bytes on disk relative to none:", "", peak_table(res), ""]
        L += auto_table(res)
        if fold:
            L += ["</details>", ""]

    problems = consistency_problems(found)
    L += ["## Consistency checks", "",
          "spillbench found every run of a query to return the same answer (all rounds and "
          "codecs), every run returns the same rows per query, and within a run every codec "
          "spills exactly the logical bytes codec none spills (spill decisions do not depend "
          "on the codec): " + ("**holds**." if not problems else "**violated**:"), ""]
    L += [f"- {p}" for p in problems[:30]]
    L += ["", "Column meanings are those of spillbench (docs/executor.md). Byte counts are "
          "exact; times carry the intervals of the paired rounds on the machine above.", ""]
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(L).rstrip() + "\n")

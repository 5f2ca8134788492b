"""Running paired spillbench runs with a resumable cache in DIR/cells/ (shared by
tpch/report/tpch-report and bench/bench-crossover).

Invariants: DIR/cells/<key>.json exists only when spillbench finished that run and its JSON
parsed as a paired run of exactly the run's codecs with every query (it is written under a
.tmp name and renamed), so an interrupted run leaves no half file and a rerun skips every
finished one. The sidecar <key>.meta.json (command with paths shown relative to the
repository or as placeholders, wall time, load average before and after) is written before
the rename.
"""

import json
import os
import subprocess
import sys
import time

from .machine import shown_path
from .matrix import size_label


def command(spillbench, run, data_dir, temp_dir, out_path):
    cmd = [spillbench, f"--sf={run.sf}", f"--codec={run.codec_arg()}",
           f"--block-size={size_label(run.block)}", f"--work-mem={size_label(run.work_mem)}",
           f"--rounds={run.rounds}",
           "--queries=" + (",".join(str(q) for q in run.queries) if run.queries else "all")]
    if run.io_limit:
        cmd.append(f"--io-limit={size_label(run.io_limit)}/s")
    cmd += [f"--data-dir={data_dir}", f"--temp-dir={temp_dir}", "--format=json",
            f"--out={out_path}"]
    return cmd


def paths(out_dir, run):
    base = os.path.join(out_dir, "cells", run.key)
    return base + ".json", base + ".meta.json"


def _level_of(cfg):
    level = str(cfg.get("level", "default"))
    return "" if level == "default" else level


def check_doc(doc, run):
    """'' when doc is a complete paired run of run's codecs, else what is wrong with it."""
    if not isinstance(doc, dict) or doc.get("mode") != "paired":
        return "not a paired spillbench run (no \"mode\": \"paired\")"
    for k in ("configs", "queries", "suite", "totals"):
        if not doc.get(k):
            return f"no \"{k}\" in spillbench's JSON"
    got = tuple((c["codec"], _level_of(c)) for c in doc["configs"])
    if got != run.codecs:
        return f"configurations {got} are not the run's {run.codecs}"
    if any(len(q.get("configs", ())) != len(got) for q in doc["queries"]):
        return "a query lacks a configuration"
    return ""


def load_json(path, run):
    """The parsed paired JSON of run, or None when missing, incomplete or another run's."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if not check_doc(doc, run) else None


def load_meta(path):
    """A JSON sidecar ({} if absent)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def is_done(out_dir, run):
    return load_json(paths(out_dir, run)[0], run) is not None


def prepare_data(spillbench, sf, data_dir, temp_dir, log):
    """Generate the tables once, outside any timed run (spillbench generates when meta.txt
    is missing; a non-spilling single-query run is the cheapest way to trigger it)."""
    if os.path.exists(os.path.join(data_dir, "meta.txt")):
        return
    log(f"generating SF {sf} data into {data_dir} ...")
    t0 = time.monotonic()
    subprocess.run([spillbench, f"--sf={sf}", "--queries=6", "--work-mem=unlimited",
                    f"--data-dir={data_dir}", f"--temp-dir={temp_dir}", "--format=csv",
                    f"--out={os.devnull}"], check=True)
    log(f"data generated in {time.monotonic() - t0:.0f} s")


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def run_one(spillbench, run, out_dir, data_dir, temp_dir):
    """Run one paired spillbench run; return (ok, wall seconds, error text)."""
    json_path, meta_path = paths(out_dir, run)
    tmp_path = json_path + ".tmp"
    load_before = _load()
    t0 = time.monotonic()
    try:
        proc = subprocess.run(command(spillbench, run, data_dir, temp_dir, tmp_path),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except KeyboardInterrupt:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        raise
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        problem = err[-1] if err else f"exit status {proc.returncode}"
    else:
        try:
            with open(tmp_path, encoding="utf-8") as f:
                problem = check_doc(json.load(f), run)
        except (OSError, ValueError) as e:
            problem = f"unreadable JSON: {e}"
    if problem:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        return False, wall, problem
    shown = command("spillbench", run, shown_path(data_dir, "<data-dir>"),
                    shown_path(temp_dir, "<temp-dir>"), os.path.relpath(json_path, out_dir))
    with open(meta_path, "w", encoding="utf-8") as f:
        json.dump({"command": " ".join(shown), "wall_s": round(wall, 1),
                   "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                   "load_before": load_before, "load_after": _load()}, f, indent=1)
    os.replace(tmp_path, json_path)
    return True, wall, ""


def _units(run):
    """Query executions of a run per query: a warm-up plus every round of every codec."""
    return run.rounds * len(run.codecs) + 1


def _eta(out_dir, finished, todo):
    """Remaining time from the seconds per unit of the runs finished so far (this session's
    and cached ones'), or '?' before the first."""
    secs = [(load_meta(paths(out_dir, r)[1]).get("wall_s"), r) for r in finished]
    secs = [(s, r) for s, r in secs if s]
    if not secs:
        return "?"
    per_unit = sum(s for s, _ in secs) / sum(_units(r) for _, r in secs)
    left = per_unit * sum(_units(r) for r in todo)
    return f"{left:.0f} s" if left < 120 else f"{left / 60:.0f} min"


def run_all(spillbench, runs, out_dir, data_dir, temp_dir, log=None):
    """Run every run not yet cached; return the list of (run, error) that failed."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    os.makedirs(os.path.join(out_dir, "cells"), exist_ok=True)
    os.makedirs(temp_dir, exist_ok=True)
    todo = [r for r in runs if not is_done(out_dir, r)]
    finished = [r for r in runs if r not in todo]
    log(f"{len(runs)} runs, {len(runs) - len(todo)} cached, {len(todo)} to run")
    if not todo:
        return []
    prepare_data(spillbench, runs[0].sf, data_dir, temp_dir, log)
    failed = []
    for i, run in enumerate(todo, 1):
        log(f"[{i}/{len(todo)}] {run.key} ... (eta {_eta(out_dir, finished, todo[i - 1:])})")
        ok, wall, err = run_one(spillbench, run, out_dir, data_dir, temp_dir)
        if ok:
            finished.append(run)
            log(f"[{i}/{len(todo)}] {run.key} done in {wall:.1f} s")
        else:
            failed.append((run, err))
            log(f"[{i}/{len(todo)}] {run.key} FAILED after {wall:.1f} s: {err}")
    return failed

"""Running the matrix: one spillbench process per cell, cached in DIR/cells/.

Invariants: DIR/cells/<key>.json exists only when spillbench finished that cell and its JSON
parsed with every query and a total (it is written under a .tmp name and renamed), so an
interrupted run leaves no half cell and a rerun skips every finished one. The sidecar
<key>.meta.json (command, wall time) is written before the rename.
"""

import json
import os
import subprocess
import sys
import time

from .matrix import size_label


def cell_command(spillbench, cell, data_dir, temp_dir, out_path):
    cmd = [spillbench, f"--sf={cell.sf}", f"--codec={cell.codec}"]
    if cell.level:
        cmd.append(f"--level={cell.level}")
    cmd += [f"--block-size={size_label(cell.block)}", f"--work-mem={size_label(cell.work_mem)}",
            f"--repeat={cell.repeat}", "--queries=all", f"--data-dir={data_dir}",
            f"--temp-dir={temp_dir}", "--format=json", f"--out={out_path}"]
    return cmd


def cell_paths(out_dir, cell):
    base = os.path.join(out_dir, "cells", cell.key)
    return base + ".json", base + ".meta.json"


def load_cell_json(path):
    """The parsed spillbench JSON, or None when the file is missing or incomplete."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not doc.get("queries") or "total" not in doc:
        return None
    return doc


def is_done(out_dir, cell):
    return load_cell_json(cell_paths(out_dir, cell)[0]) is not None


def prepare_data(spillbench, sf, data_dir, temp_dir, log):
    """Generate the tables once, outside any timed cell (spillbench generates when meta.txt
    is missing; a non-spilling single-query run is the cheapest way to trigger it)."""
    if os.path.exists(os.path.join(data_dir, "meta.txt")):
        return
    log(f"generating SF {sf} data into {data_dir} ...")
    t0 = time.monotonic()
    subprocess.run([spillbench, f"--sf={sf}", "--queries=6", "--work-mem=unlimited",
                    f"--data-dir={data_dir}", f"--temp-dir={temp_dir}", "--format=csv",
                    f"--out={os.devnull}"], check=True)
    log(f"data generated in {time.monotonic() - t0:.0f} s")


def _eta(done_secs, todo):
    """Remaining time from the mean cell time so far, weighted by repeats."""
    if not done_secs:
        return "?"
    per_rep = sum(s for s, _ in done_secs) / sum(r for _, r in done_secs)
    left = per_rep * sum(c.repeat for c in todo)
    return f"{left / 60:.0f} min"


def run_cell(spillbench, cell, out_dir, data_dir, temp_dir):
    """Run one cell; return (ok, wall seconds, error text)."""
    json_path, meta_path = cell_paths(out_dir, cell)
    tmp_path = json_path + ".tmp"
    cmd = cell_command(spillbench, cell, data_dir, temp_dir, tmp_path)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except KeyboardInterrupt:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        raise
    wall = time.monotonic() - t0
    if proc.returncode != 0 or load_cell_json(tmp_path) is None:
        err = proc.stderr.strip().splitlines()
        return False, wall, (err[-1] if err else f"exit status {proc.returncode}")
    shown = cell_command(os.path.basename(spillbench), cell, data_dir, temp_dir,
                         os.path.relpath(json_path, out_dir))
    with open(meta_path, "w", encoding="utf-8") as f:
        json.dump({"command": " ".join(shown), "wall_s": round(wall, 1),
                   "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, f, indent=1)
    os.replace(tmp_path, json_path)
    return True, wall, ""


def run_matrix(spillbench, cells, out_dir, data_dir, temp_dir, log=None):
    """Run every cell not yet cached; return the list of (cell, error) that failed."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    os.makedirs(os.path.join(out_dir, "cells"), exist_ok=True)
    os.makedirs(temp_dir, exist_ok=True)
    todo = [c for c in cells if not is_done(out_dir, c)]
    log(f"{len(cells)} cells, {len(cells) - len(todo)} cached, {len(todo)} to run")
    if not todo:
        return []
    prepare_data(spillbench, cells[0].sf, data_dir, temp_dir, log)
    failed, done_secs = [], []
    for i, cell in enumerate(todo, 1):
        log(f"[{i}/{len(todo)}] {cell.key} ... (eta {_eta(done_secs, todo[i - 1:])})")
        ok, wall, err = run_cell(spillbench, cell, out_dir, data_dir, temp_dir)
        if ok:
            done_secs.append((wall, cell.repeat))
            log(f"[{i}/{len(todo)}] {cell.key} done in {wall:.1f} s")
        else:
            failed.append((cell, err))
            log(f"[{i}/{len(todo)}] {cell.key} FAILED after {wall:.1f} s: {err}")
    return failed


def load_meta(path):
    """The sidecar written next to a finished cell ({} if absent)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}

"""Loading cached cells and comparing each codec with codec none.

Invariants: a codec cell is only ever compared with the none cell of the same scale factor,
block size and work_mem; a ratio whose denominator is zero is None (shown as '-'), never 0 or
inf; geometric means are over the queries that spilled in that none cell, so queries that never
touch the codec do not dilute the figure.
"""

import math
from dataclasses import dataclass, field

from . import runner

MB = 1024 * 1024


@dataclass
class CellResult:
    cell: object
    queries: dict          # "Q3" -> spillbench's per-query dict
    total: dict
    meta: dict = field(default_factory=dict)

    def q(self, name, key):
        return self.queries[name][key]


def load(out_dir, cells):
    """(results by cell config, missing cells) for the cells of a matrix."""
    found, missing = {}, []
    for cell in cells:
        json_path, meta_path = runner.cell_paths(out_dir, cell)
        doc = runner.load_cell_json(json_path)
        if doc is None:
            missing.append(cell)
            continue
        meta = runner.load_meta(meta_path)
        found[cell.config] = CellResult(cell, {q["query"]: q for q in doc["queries"]},
                                        doc["total"], meta)
    return found, missing


def ratio(num, den):
    return None if not den else num / den


def geomean(values):
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def saved(logical, physical):
    """1 - physical/logical, or None when nothing was spilled."""
    return None if not logical else 1.0 - physical / logical


def query_order(name):
    return int(name[1:]) if name[1:].isdigit() else 10 ** 6


@dataclass
class Comparison:
    """One codec cell against its none baseline."""
    res: CellResult
    base: CellResult

    @property
    def cell(self):
        return self.res.cell

    def queries(self):
        return sorted(self.res.queries, key=query_order)

    def spilling(self):
        """Queries that spilled in the baseline (logical bytes > 0), in query order."""
        return [q for q in self.queries()
                if q in self.base.queries and self.base.q(q, "logical_bytes") > 0]

    def time_ratio(self, q):
        return ratio(self.res.q(q, "seconds"), self.base.q(q, "seconds"))

    def saved(self, q):
        return saved(self.res.q(q, "logical_bytes"), self.res.q(q, "physical_bytes"))

    def peak_ratio(self, q):
        return ratio(self.res.q(q, "peak_temp_bytes"), self.base.q(q, "peak_temp_bytes"))

    def geomean_time_ratio(self):
        return geomean(self.time_ratio(q) for q in self.spilling())

    def geomean_time_ratio_control(self):
        """Over the queries that spill nothing: the codec never runs there, so this shows how
        much the machine's load drifted between the two cells (1.00 = none)."""
        spilling = set(self.spilling())
        return geomean(self.time_ratio(q) for q in self.queries()
                       if q in self.base.queries and q not in spilling)

    def codec_share(self):
        """Codec time (compress + decompress, summed over the queries) as a fraction of none's
        summed query time: the cost of the codec itself, far less sensitive to the machine's
        load drifting between cells than the difference of two wall times."""
        return ratio(self.res.total["codec_ms"] / 1000, self.base.total["seconds"])

    def total_time_ratio(self):
        return ratio(self.res.total["seconds"], self.base.total["seconds"])

    def total_saved(self):
        return saved(self.res.total["logical_bytes"], self.res.total["physical_bytes"])

    def total_peak_ratio(self):
        return ratio(self.res.total["peak_temp_bytes"], self.base.total["peak_temp_bytes"])


def comparisons(found):
    """Comparisons of every non-none cell whose baseline is present, in matrix order."""
    out = []
    for res in found.values():
        if res.cell.codec == "none":
            continue
        base = found.get(res.cell.baseline())
        if base is not None:
            out.append(Comparison(res, base))
    return out


def settings(found):
    """Distinct (block, work_mem) pairs in first-seen order."""
    seen = []
    for res in found.values():
        key = (res.cell.block, res.cell.work_mem)
        if key not in seen:
            seen.append(key)
    return seen


def main_block(found):
    """The block size most cells use: per-query charts are drawn for it."""
    counts = {}
    for res in found.values():
        counts[res.cell.block] = counts.get(res.cell.block, 0) + 1
    return max(counts, key=lambda b: (counts[b], -b)) if counts else None


def consistency_problems(found):
    """Sanity checks that hold when the executor is deterministic: every cell returns the same
    row count per query, and every codec spills the same logical bytes as none for the same
    block size and work_mem (spill decisions do not depend on the codec)."""
    problems = []
    rows = {}
    for res in found.values():
        for q, d in res.queries.items():
            rows.setdefault(q, set()).add(d["rows"])
    for q, counts in sorted(rows.items(), key=lambda kv: query_order(kv[0])):
        if len(counts) > 1:
            problems.append(f"{q}: row counts differ between cells: {sorted(counts)}")
    for cmp_ in comparisons(found):
        for q in cmp_.queries():
            if q in cmp_.base.queries and \
                    cmp_.res.q(q, "logical_bytes") != cmp_.base.q(q, "logical_bytes"):
                problems.append(f"{cmp_.cell.key} {q}: logical bytes differ from none")
    return problems

"""Reading cached paired runs: ratios with intervals, bytes, and the checks across runs.

A RunResult wraps one run's spillbench JSON (the shape is in docs/report.md). Configuration
0 is codec none, the reference of every ratio. Invariants: ratios and their intervals are
spillbench's own (this module only recomputes what spillbench does not print, through
stats.suite_interval); a ratio whose denominator is zero is None (shown as '-'), never 0 or
inf; a run's noise is its widest control interval (queries that spill nothing: the codec
never runs there, so their ratios measure the machine).
"""

from dataclasses import dataclass, field

from . import runner
from .stats import Interval, suite_interval

MB = 1024 * 1024
NOISE_LIMIT = 0.05   # a run whose control interval is wider than +-5% is flagged
BLOCK_CODECS = ("none", "lz4", "zstd", "zlib")   # order of spillbench's blocks_by_codec


def ratio(num, den):
    return None if not den else num / den


def saved(logical, physical):
    """1 - physical/logical, or None when nothing was spilled."""
    return None if not logical else 1.0 - physical / logical


def query_order(name):
    return int(name[1:]) if name[1:].isdigit() else 10 ** 6


@dataclass
class RunResult:
    run: object
    doc: dict
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.by_query = {q["query"]: q for q in self.doc["queries"]}

    @property
    def labels(self):
        return self.run.labels

    def index(self, label):
        return self.labels.index(label)

    def queries(self):
        return sorted(self.by_query, key=query_order)

    def spills(self, q):
        return bool(self.by_query[q]["spills"])

    def cfg(self, q, i):
        """Query q's medians and bytes under configuration i."""
        return self.by_query[q]["configs"][i]

    def ratio(self, q, i, kind="wall"):
        """Interval of query q's time under configuration i against none (kind wall|cpu)."""
        for r in self.by_query[q].get("ratios", ()):
            if r["config"] == i:
                return Interval.from_json(r[kind])
        return None

    def suite_queries(self, which):
        """'spilling' or 'control' queries of the suite, in query order."""
        return sorted(self.doc["suite"].get(which, {}).get("queries", ()), key=query_order)

    def suite(self, which, i, kind="wall"):
        """Geomean ratio over the 'spilling' or 'control' queries, or None when empty."""
        s = self.doc["suite"].get(which, {})
        if not s.get("queries"):
            return None
        for r in s.get("ratios", ()):
            if r["config"] == i:
                iv = Interval.from_json(r[kind])
                return iv if iv.n else None
        return None

    def total(self, i):
        for t in self.doc["totals"]:
            if t["config"] == i:
                return t
        raise KeyError(f"{self.run.key}: no totals for configuration {i}")

    def times(self, kind="wall"):
        """{(round, query, config): seconds} of every counted run."""
        return {(r["round"], q["query"], r["config"]): r[f"{kind}_s"]
                for q in self.doc["queries"] for r in q["runs"]}

    def suite_seconds(self, i, queries, kind="wall"):
        """Per round the summed time of the queries under configuration i: its geometric mean
        over the rounds and interval (an absolute suite time, not a paired ratio)."""
        return suite_interval(self.times(kind), queries, i)

    def paired(self, num, den, queries, kind="wall"):
        """Paired suite ratio of configuration num against den over the queries."""
        return suite_interval(self.times(kind), queries, num, den)

    def saved(self, q, i):
        c = self.cfg(q, i)
        return saved(c["logical_bytes"], c["physical_bytes"])

    def peak_ratio(self, q, i):
        return ratio(self.cfg(q, i)["peak_temp_bytes"], self.cfg(q, 0)["peak_temp_bytes"])

    def total_saved(self, i, queries=None):
        """Saved over all queries (totals), or over the given ones."""
        if queries is None:
            t = self.total(i)
            return saved(t["logical_bytes"], t["physical_bytes"])
        return saved(sum(self.cfg(q, i)["logical_bytes"] for q in queries),
                     sum(self.cfg(q, i)["physical_bytes"] for q in queries))

    def total_peak_ratio(self, i):
        return ratio(self.total(i)["peak_temp_bytes"], self.total(0)["peak_temp_bytes"])

    def noise(self):
        """Half-width of the widest control wall interval over the configurations, or None
        when the run has no control queries (or only codec none)."""
        widths = [iv.halfwidth() for i in range(1, len(self.labels))
                  for iv in [self.suite("control", i)] if iv is not None]
        return max(widths) if widths else None

    def noisy(self):
        n = self.noise()
        return n is not None and n > NOISE_LIMIT


def load(out_dir, runs):
    """(RunResults in run order, runs missing from the cache)."""
    found, missing = [], []
    for run in runs:
        json_path, meta_path = runner.paths(out_dir, run)
        doc = runner.load_json(json_path, run)
        if doc is None:
            missing.append(run)
        else:
            found.append(RunResult(run, doc, runner.load_meta(meta_path)))
    return found, missing


def main_block(found):
    """The block size most runs use: per-query charts are drawn for it."""
    counts = {}
    for res in found:
        counts[res.run.block] = counts.get(res.run.block, 0) + 1
    return max(counts, key=lambda b: (counts[b], -b)) if counts else None


def consistency_problems(found):
    """What must hold when the executor is deterministic: spillbench found every run's
    answers identical (it checks all rounds and codecs of a run), every run returns the same
    row count per query, and within a run every codec spills exactly the logical bytes of
    none (spill decisions do not depend on the codec)."""
    problems, rows = [], {}
    for res in found:
        for q in res.queries():
            d = res.by_query[q]
            rows.setdefault(q, set()).add(d["rows"])
            if d.get("answers") != "identical":
                problems.append(f"{res.run.key} {q}: answers {d.get('answers')!r}")
            for i, label in enumerate(res.labels[1:], 1):
                if res.cfg(q, i)["logical_bytes"] != res.cfg(q, 0)["logical_bytes"]:
                    problems.append(f"{res.run.key} {q}: {label} spills other logical bytes "
                                    "than none")
    for q, counts in sorted(rows.items(), key=lambda kv: query_order(kv[0])):
        if len(counts) > 1:
            problems.append(f"{q}: row counts differ between runs: {sorted(counts)}")
    return problems

"""Statistics of paired spillbench runs, and how a ratio with its interval is written.

The method is spillbench's (tpch/exec/paired.h), repeated here for the figures spillbench
does not print (e.g. auto against the best fixed codec, or a suite's summed seconds): a
ratio is the geometric mean of per-round paired ratios, its 95% interval a Student t
interval on their logarithms. A suite ratio takes, per round, the geometric mean over the
chosen queries of their ratios, then the same interval over the rounds.

Invariants: an interval holds est (lo <= est <= hi); with fewer than two rounds lo = hi =
est; a ratio whose interval holds 1.0 is always written "no measurable difference", never
as a speed-up or a slow-down.
"""

import math
from dataclasses import dataclass

NO_DIFFERENCE = "no measurable difference"

# Student's t, 97.5th percentile, df 1..30 (the table of paired.c).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    """Two-sided 95% quantile of Student's t with df >= 1 degrees of freedom."""
    if df < 1:
        raise ValueError("t quantile needs df >= 1")
    return _T975[df - 1] if df <= 30 else 1.959964 * (1 + 1 / (4 * df))


@dataclass(frozen=True)
class Interval:
    est: float
    lo: float
    hi: float
    n: int

    @classmethod
    def from_json(cls, d):
        """spillbench's {"est", "lo", "hi", "n"}."""
        return cls(float(d["est"]), float(d["lo"]), float(d["hi"]), int(d["n"]))

    def holds_one(self):
        return self.lo <= 1.0 <= self.hi

    def halfwidth(self):
        """Half the interval's width in the log domain, as a share (0.05 = +-5%)."""
        return math.exp((math.log(self.hi) - math.log(self.lo)) / 2) - 1


def from_logs(logs):
    """Interval of exp(mean(logs)) from n log ratios (n >= 1)."""
    n = len(logs)
    if n < 1:
        raise ValueError("an interval needs at least one round")
    mean = sum(logs) / n
    if n < 2:
        e = math.exp(mean)
        return Interval(e, e, e, n)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)


def suite_interval(times, queries, num, den=None):
    """Paired suite ratio of configuration num against den over the given queries, from
    times[(round, query, config)] (seconds). den=None: no ratio, the per-round sum over the
    queries of num's times (an absolute suite time and its interval across rounds)."""
    rounds = sorted({r for r, _, _ in times})
    if not rounds or not queries:
        raise ValueError("no rounds or no queries to take a suite figure over")
    logs = []
    for r in rounds:
        if den is None:
            logs.append(math.log(sum(times[(r, q, num)] for q in queries)))
        else:
            logs.append(sum(math.log(times[(r, q, num)] / times[(r, q, den)])
                            for q in queries) / len(queries))
    return from_logs(logs)


def fmt_range(iv):
    return f"{iv.lo:.2f}–{iv.hi:.2f}"


def fmt_ratio(iv):
    """'1.07 (1.05–1.09)', or 'no measurable difference (0.98–1.03)' when the interval holds
    1.0: then the estimate is not shown, so it cannot be read as a speed-up or slow-down."""
    if iv is None:
        return "-"
    if iv.holds_one():
        return f"{NO_DIFFERENCE} ({fmt_range(iv)})"
    return f"{iv.est:.2f} ({fmt_range(iv)})"


def verdict(iv):
    """In words, for summaries: '7% slower', '12% faster' or 'no measurable difference'
    (ratios are time against time: above 1 is slower)."""
    if iv is None:
        return "-"
    if iv.holds_one():
        return NO_DIFFERENCE
    pct = 100 * (iv.est - 1)
    return f"{abs(pct):.1f}% {'slower' if pct > 0 else 'faster'}"

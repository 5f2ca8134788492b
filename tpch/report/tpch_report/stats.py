"""The statistics of paired, interleaved timing runs, and the words every report judges a
ratio with: tpch-report, bench-crossover and the PostgreSQL benchmarks all import this.

The method is tpch/exec/paired.c's (described in tpch/exec/paired.h): a ratio is the
geometric mean of per-round paired ratios, its 95% interval a Student t interval on their
logarithms; a suite takes, per round, the geometric mean over its queries of their ratios,
then the same interval over the rounds. It is not written again here: this module calls
paired.c through ctypes on its shared build (libpaired.so, the CMake target `paired`), so
spillbench and every report compute an interval with the same code.

Where libpaired.so is looked for: $BUFFILE_PAIRED_LIB; beside an installed copy of this
package (the path CMake's install records in _paired_lib.path); the source tree's build/.

Words: a ratio is time against time (above 1 is slower). Against 1.0 it is "N% slower",
"N% faster" or, when its interval holds 1.0, "no measurable difference" (and its estimate
is not shown, so it cannot be read as a speed-up or a slow-down). Against a target bound
it is MET (the whole interval within the bound), MISSED (none of it) or "not resolved"
(the interval straddles the bound, or one round gave no interval); a target with no
measurement is "not run".
"""

import ctypes
import math
import os
from typing import NamedTuple

NO_DIFFERENCE = "no measurable difference"
MET, MISSED, NOT_RESOLVED, NOT_RUN = "MET", "MISSED", "not resolved", "not run"
LIB_ENV = "BUFFILE_PAIRED_LIB"

_HERE = os.path.dirname(os.path.realpath(__file__))
# The source tree's build (this package is the tree's tpch/report/tpch_report), the same
# place tool.py looks for spillbench.
_TREE_LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))), "build", "tpch",
                         "exec", "libpaired.so")


class _PdInterval(ctypes.Structure):
    """paired.h's pd_interval."""
    _fields_ = [("est", ctypes.c_double), ("lo", ctypes.c_double), ("hi", ctypes.c_double),
                ("n", ctypes.c_int)]


_lib = None


def library_path():
    """The libpaired.so this process uses (or would use)."""
    if os.environ.get(LIB_ENV):
        return os.environ[LIB_ENV]
    recorded = os.path.join(_HERE, "_paired_lib.path")
    if os.path.exists(recorded):
        with open(recorded, encoding="utf-8") as f:
            return os.path.normpath(os.path.join(_HERE, f.read().strip()))
    return _TREE_LIB


def _paired():
    """paired.c, loaded on first use: --help and module imports need no build."""
    global _lib
    if _lib is None:
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise SystemExit(f"tpch_report.stats: cannot load paired.c's shared build {path} "
                             f"({e}); build the CMake target `paired` or set {LIB_ENV}")
        dp = ctypes.POINTER(ctypes.c_double)
        ivp = ctypes.POINTER(_PdInterval)
        lib.pd_ratio.restype = _PdInterval
        lib.pd_ratio.argtypes = [dp, dp, ctypes.c_int]
        lib.pd_suite.restype = _PdInterval
        lib.pd_suite.argtypes = [dp, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_ubyte)]
        lib.pd_halfwidth.restype = ctypes.c_double
        lib.pd_halfwidth.argtypes = [ivp]
        lib.pd_holds_one.restype = ctypes.c_int
        lib.pd_holds_one.argtypes = [ivp]
        lib.pd_t975.restype = ctypes.c_double
        lib.pd_t975.argtypes = [ctypes.c_int]
        lib.pd_shuffle.restype = None
        lib.pd_shuffle.argtypes = [ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_int)]
        _lib = lib
    return _lib


class Interval(NamedTuple):
    """A ratio's estimate, its 95% interval and the pairs it is made of (paired.h's
    pd_interval). A tuple, so results.json keeps writing [est, lo, hi, n]; n = 0: no ratio
    (est, lo and hi are NaN)."""
    est: float
    lo: float
    hi: float
    n: int

    @classmethod
    def from_json(cls, d):
        """spillbench's {"est", "lo", "hi", "n"}."""
        return cls(float(d["est"]), float(d["lo"]), float(d["hi"]), int(d["n"]))

    def _c(self):
        return ctypes.byref(_PdInterval(self.est, self.lo, self.hi, self.n))

    def holds_one(self):
        """The interval holds 1.0: no measurable difference."""
        return bool(_paired().pd_holds_one(self._c()))

    def halfwidth(self):
        """Half the interval's width in the log domain, as a share (0.05 = +-5%)."""
        return _paired().pd_halfwidth(self._c())


def _interval(c):
    return Interval(c.est, c.lo, c.hi, c.n)


def t975(df):
    """Two-sided 95% quantile of Student's t with df >= 1 degrees of freedom (NaN below)."""
    return _paired().pd_t975(df)


def ratio(num, den):
    """Interval of the paired ratios num[i] / den[i] (all positive)."""
    n = len(num)
    if len(den) != n:
        raise ValueError("ratio: num and den differ in length")
    return _interval(_paired().pd_ratio((ctypes.c_double * n)(*num),
                                        (ctypes.c_double * n)(*den), n))


def suite_interval(times, queries, num, den=None):
    """Paired suite ratio of configuration num against den over the given queries, from
    times[(round, query, config)] (seconds); n = 0 when there is no round or no query.
    den=None: no ratio, the per-round sum over the queries of num's times (an absolute
    suite time and its interval across rounds)."""
    rounds = sorted({r for r, _, _ in times})
    if not rounds or not queries:
        return Interval(math.nan, math.nan, math.nan, 0)
    if den is None:
        sums = [sum(times[(r, q, num)] for q in queries) for r in rounds]
        return ratio(sums, [1.0] * len(sums))
    # paired.c's layout: t[(r * nq + q) * 2 + k], k = 0 the reference, 1 the compared
    t = [times[(r, q, cfg)] for r in rounds for q in queries for cfg in (den, num)]
    nq = len(queries)
    return _interval(_paired().pd_suite((ctypes.c_double * len(t))(*t), len(rounds), nq, 2, 1,
                                        (ctypes.c_ubyte * nq)(*[1] * nq)))


def shuffle(seed, rnd, n):
    """The order of n configurations in round rnd (paired.c's pd_shuffle)."""
    order = (ctypes.c_int * n)()
    _paired().pd_shuffle(seed, rnd, n, order)
    return list(order)


def _usable(iv):
    return iv is not None and iv.n >= 1 and not math.isnan(iv.est)


def fmt_ratio(iv, digits=2, percent=False):
    """'1.07 (1.05–1.09)'; 'no measurable difference (0.98–1.03)' when the interval holds
    1.0; '1.07 (one round)' when there is no interval; '-' when there is no ratio.
    percent: as a share of the reference, '107% (105–109%)'."""
    if not _usable(iv):
        return "-"
    scale, unit = (100, "%") if percent else (1, "")

    def num(x):
        return f"{scale * x:.{digits}f}"

    if iv.n < 2:
        return f"{num(iv.est)}{unit} (one round)"
    span = f"{num(iv.lo)}–{num(iv.hi)}{unit}"
    if iv.holds_one():
        return f"{NO_DIFFERENCE} ({span})"
    return f"{num(iv.est)}{unit} ({span})"


def verdict(iv):
    """In words, for summaries: '7.0% slower', '12.0% faster' or 'no measurable difference'."""
    if not _usable(iv):
        return "-"
    if iv.n < 2:
        return f"{NOT_RESOLVED} (one round)"
    if iv.holds_one():
        return NO_DIFFERENCE
    pct = 100 * (iv.est - 1)
    return f"{abs(pct):.1f}% {'slower' if pct > 0 else 'faster'}"


def target(iv, bound):
    """A ratio against the target 'at most bound': MET when the whole interval is within it,
    MISSED when none of it is, else NOT_RESOLVED (NOT_RUN without a ratio)."""
    if not _usable(iv):
        return NOT_RUN
    if iv.n < 2:
        return NOT_RESOLVED
    if iv.hi <= bound:
        return MET
    if iv.lo > bound:
        return MISSED
    return NOT_RESOLVED


def target_text(iv, bound):
    """target()'s word, with why when it is not resolved."""
    word = target(iv, bound)
    if word != NOT_RESOLVED:
        return word
    if iv.n < 2:
        return f"{NOT_RESOLVED} (fewer than 2 rounds)"
    return f"{NOT_RESOLVED} (the interval holds {bound})"


def overall(words):
    """One word for several targets: MISSED if any is, else not resolved if any is, else
    not run if any is, else MET (and not run when there is none)."""
    words = [w.split(" (")[0] for w in words]
    for w in (MISSED, NOT_RESOLVED, NOT_RUN):
        if w in words:
            return w
    return MET if words else NOT_RUN

"""Tests of bench_spill_runs.py (bench-spill-runs): bench_spill --times's output read back
(and refused when cut short), the interval over invocations against hand-computed figures,
the variance components, the interleaved plan, the report's cells and issue 46's words, a
rerun skipping what --out holds (with a fake bench_spill); and, when BENCH_SPILL_BIN names a
built bench_spill, a run of the driver with tiny sizes (the Smoke class)."""

import math
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import bench_spill_runs as b
from tpch_report import stats

# bench_spill --mib=1 --rounds=2 --files=8 --tuple=100 --times --configs=none,auto,control
RECORDED = """\
bench_spill: 1 MiB of lineitem text as 100-byte tuples into 8 batch files (hash order), \
read back file by file, deleted; 2 rounds (shuffled), page cache under /tmp/x
config     write_s   read_s  close_s  total_s  total / stock [95%]             +ns/B
stock        0.001    0.000    0.000    0.001
none         0.003    0.000    0.000    0.003  2.029 [0.004, 995.616]~        +1.783
auto         0.007    0.020    0.000    0.027  9.1 [0.1, 99.0]~               +20.0
control      0.003    0.000    0.000    0.003  2.029 [0.004, 995.616]~        +1.783
auto stored 59.8% of its blocks raw (median over the rounds)
'~': the interval holds 1.0 (no measurable difference); +ns/B: the median over the rounds \
of the time beyond stock's, per byte spilled
times: round place config write_s read_s close_s raw
time 0 0 auto 0.011057426 0.000311024 0.000124753 0.598485
time 0 1 stock 0.001244754 0.000130172 0.000104375 0.000000
time 0 2 none 0.001081084 0.000132552 0.000096866 1.000000
time 0 3 control 0.004636328 0.000137409 0.000113553 0.000000
time 1 0 auto 0.002844471 0.040504663 0.000187953 0.598485
time 1 1 control 0.001402685 0.000149436 0.000127602 0.000000
time 1 2 stock 0.001139641 0.000113773 0.000094876 0.000000
time 1 3 none 0.005175711 0.000168238 0.000132886 1.000000
"""


def invocation(ratios, files=8, tup=100, stock=1.0):
    """A parsed invocation whose none / stock ratio in round r is ratios[r] (all in write)."""
    runs = []
    for r, x in enumerate(ratios):
        runs.append({"round": r, "place": 0, "config": "stock", "write": stock, "read": 0.0,
                     "close": 0.0, "raw": 0.0})
        runs.append({"round": r, "place": 1, "config": "none", "write": stock * x, "read": 0.0,
                     "close": 0.0, "raw": 1.0})
    return {"mib": 1, "tuple": tup, "files": files, "rounds": len(ratios), "runs": runs}


class Parse(unittest.TestCase):
    def test_recorded_output_read_back(self):
        p = b.parse_output(RECORDED)
        self.assertEqual((p["mib"], p["tuple"], p["files"], p["rounds"]), (1, 100, 8, 2))
        self.assertEqual(len(p["runs"]), 8)
        r = p["runs"][4]
        self.assertEqual((r["round"], r["place"], r["config"]), (1, 0, "auto"))
        self.assertAlmostEqual(r["read"], 0.040504663)
        self.assertAlmostEqual(r["raw"], 0.598485)
        self.assertTrue(math.isnan(r["sys"]))  # a bench_spill without CPU times
        none0 = b.round_logs(p, "none")[0]
        self.assertAlmostEqual(none0, math.log((0.001081084 + 0.000132552 + 0.000096866)
                                               / (0.001244754 + 0.000130172 + 0.000104375)))

    def test_output_without_time_lines_refused(self):
        with self.assertRaisesRegex(ValueError, "no time lines"):
            b.parse_output(RECORDED.split("times:")[0])

    def test_output_cut_short_refused(self):
        cut = "\n".join(RECORDED.splitlines()[:-4]) + "\n"  # round 1 without its stock
        with self.assertRaisesRegex(ValueError, "rounds"):
            b.parse_output(cut)
        self.assertEqual(b.parse_output(RECORDED.replace(" 0.598485\n", " 0.598485 0.5 0.25\n"))
                         ["runs"][0]["sys"], 0.25)
        with self.assertRaisesRegex(ValueError, "header"):
            b.parse_output("\n".join(RECORDED.splitlines()[1:]))


class Statistics(unittest.TestCase):
    def test_interval_is_over_the_invocations_geometric_means(self):
        invs = [invocation([1.02, 1.04]), invocation([1.08, 1.10]), invocation([1.05, 1.07])]
        s = b.summarize(invs, "none")
        gms = [math.sqrt(1.02 * 1.04), math.sqrt(1.08 * 1.10), math.sqrt(1.05 * 1.07)]
        logs = [math.log(g) for g in gms]
        m = sum(logs) / 3
        sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 2)
        half = 4.302653 * sd / math.sqrt(3)  # t(0.975, 2 df)
        self.assertEqual(s["iv"].n, 3)
        self.assertAlmostEqual(s["iv"].est, math.exp(m), places=9)
        self.assertAlmostEqual(s["iv"].lo, math.exp(m - half), places=4)
        self.assertAlmostEqual(s["iv"].hi, math.exp(m + half), places=4)
        for got, want in zip(s["per_inv"], gms):
            self.assertAlmostEqual(got, want)

    def test_invocation_effect_widens_the_interval_beyond_pooled_rounds(self):
        # Rounds agree closely within each invocation, invocations differ by ~8%: the
        # pooled rounds claim a narrow interval, the invocations' does not.
        invs = [invocation([1.000, 1.001, 0.999, 1.000]), invocation([1.080, 1.081, 1.079, 1.080]),
                invocation([1.040, 1.041, 1.039, 1.040])]
        s = b.summarize(invs, "none")
        self.assertEqual(s["pooled"].n, 12)
        self.assertGreater(s["iv"].hi - s["iv"].lo, 3 * (s["pooled"].hi - s["pooled"].lo))
        self.assertGreater(s["s_u"], 0.03)
        self.assertLess(s["s_e"], 0.002)

    def test_components_by_hand(self):
        # Pairs m +- d: within variance 2 d^2 (n - k = k), between: var(means) - d^2.
        d = 0.01
        means = [0.0, 0.05, 0.1]
        groups = [[m - d, m + d] for m in means]
        s_u, s_e = b.components(groups)
        self.assertAlmostEqual(s_e, math.sqrt(2) * d)
        var_means = sum((m - 0.05) ** 2 for m in means) / 2
        self.assertAlmostEqual(s_u, math.sqrt(var_means - d * d))

    def test_no_between_component_when_means_agree(self):
        s_u, s_e = b.components([[0.1, -0.1], [-0.1, 0.1], [0.05, -0.05]])
        self.assertEqual(s_u, 0.0)
        self.assertGreater(s_e, 0.05)

    def test_components_need_two_invocations(self):
        self.assertTrue(math.isnan(b.components([[0.1, 0.2, 0.3]])[0]))


class PlanAndReport(unittest.TestCase):
    def test_plan_runs_every_invocation_of_every_cell_once_in_waves(self):
        cells = [(f, t) for f in (8, 32, 256) for t in (40, 100, 1000)]
        p = b.plan(cells, 4)
        self.assertEqual(sorted(p), sorted((k, c) for k in range(4) for c in cells))
        self.assertEqual([k for k, _ in p], sorted(k for k, _ in p))
        self.assertNotEqual([c for _, c in p[:9]], [c for _, c in p[9:18]])  # reshuffled

    def test_report_has_every_cell_and_judges_the_bound(self):
        a = b.parse_args(["--out=x", "--files=8,32", "--tuple=40,1000", "--configs=none",
                          "--invocations=3", "--rounds=2"])
        cells = [(8, 40), (8, 1000), (32, 40), (32, 1000)]
        met = [invocation([1.01, 1.011], f, t) for f, t in [(8, 40)] * 3]
        results = {(8, 40): met,
                   (8, 1000): [invocation([1.2, 1.21]), invocation([1.19, 1.2]),
                               invocation([1.21, 1.2])],
                   (32, 40): [invocation([0.9, 1.0]), invocation([1.1, 1.2]),
                              invocation([1.0, 0.95])]}
        text = b.report(a, cells, results, {(8, 40): [1.0, 2.0, 3.0]})
        rows = [line for line in text.splitlines() if line.startswith("| 8 |")
                or line.startswith("| 32 |")]
        first = [r for r in rows if "issue" not in r and r.count("|") == 5]
        self.assertEqual([tuple(r.split("|")[1:3]) for r in first],
                         [(" 8 ", " 40 "), (" 8 ", " 1000 "), (" 32 ", " 40 "),
                          (" 32 ", " 1000 ")])
        self.assertIn("<= 1.05: MET", first[0])
        self.assertIn("<= 1.03: MISSED", first[1])
        self.assertIn("<= 1.05: not resolved", first[2])
        self.assertIn("| 32 | 1000 | - | <= 1.03: not run |", first[3])
        self.assertIn("2.0 s (6 s)", text)


FAKE = textwrap.dedent("""\
    import sys
    a = dict(x[2:].split("=", 1) for x in sys.argv[1:] if "=" in x)
    with open(a["temp-dir"] + "/calls", "a") as f:
        f.write(" ".join(sys.argv[1:]) + "\\n")
    rounds = int(a["rounds"])
    print(f"bench_spill: {a['mib']} MiB of lineitem text as {a['tuple']}-byte tuples into "
          f"{a['files']} batch files (hash order), read back file by file, deleted; {rounds} "
          f"rounds (shuffled), page cache under {a['temp-dir']}")
    print("times: round place config write_s read_s close_s raw")
    for r in range(rounds):
        for i, c in enumerate(["stock"] + a["configs"].split(",")):
            w = 0.1 * (1.02 if c == "none" else 1.0) * (1 + 0.01 * r)
            print(f"time {r} {i} {c} {w:.9f} {w / 2:.9f} {w / 10:.9f} 1.0 {w:.6f} 0.0")
    """)


class Resume(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        fake = os.path.join(self.dir, "bench_spill")
        with open(fake, "w", encoding="utf-8") as f:
            f.write(f"#!{sys.executable}\n" + FAKE)
        os.chmod(fake, 0o755)
        self.argv = [f"--bin={fake}", f"--temp-dir={self.dir}", f"--out={self.dir}/out",
                     "--files=8,32", "--tuple=100", "--configs=none", "--invocations=2",
                     "--rounds=3", "--mib=1"]

    def tearDown(self):
        self.tmp.cleanup()

    def calls(self):
        with open(os.path.join(self.dir, "calls"), encoding="utf-8") as f:
            return f.read().splitlines()

    def main(self, argv):
        with open(os.devnull, "w", encoding="utf-8") as null:
            old, sys.stdout, sys.stderr = (sys.stdout, sys.stderr), null, null
            try:
                return b.main(argv)
            finally:
                sys.stdout, sys.stderr = old

    def test_rerun_skips_done_invocations_and_runs_added_ones(self):
        self.main(self.argv)
        self.assertEqual(len(self.calls()), 4)
        self.assertTrue(all("--times" in c and "--configs=none" in c for c in self.calls()))
        seeds = sorted(x for c in self.calls() for x in c.split() if x.startswith("--seed="))
        self.assertEqual(seeds, ["--seed=1000", "--seed=1000", "--seed=1001", "--seed=1001"])
        os.remove(os.path.join(self.dir, "out", "f32-t100.inv1.json"))  # as if cut short
        self.main(self.argv[:-3] + ["--invocations=3", "--rounds=3", "--mib=1"])
        self.assertEqual(len(self.calls()), 4 + 1 + 2)
        with open(os.path.join(self.dir, "out", "report.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("| 8 | 100 | 1.020 [1.020, 1.020]", text)
        self.assertIn("| 8 | 100 | none | 0.1030 | 0.0515 | 0.0103 | 0.1648 | 0.1030 | 0.0000 "
                      "| 100.0% |", text)

    def test_rerun_with_other_rounds_refused(self):
        self.main(self.argv)
        with self.assertRaisesRegex(SystemExit, "use another --out"):
            self.main(self.argv[:-2] + ["--rounds=4", "--mib=1"])


@unittest.skipUnless(os.environ.get("BENCH_SPILL_BIN"), "BENCH_SPILL_BIN: a built bench_spill")
class Smoke(unittest.TestCase):
    def test_tiny_run_reports_every_cell(self):
        with tempfile.TemporaryDirectory() as d:
            launcher = os.path.join(os.path.dirname(os.path.abspath(b.__file__)),
                                    "bench-spill-runs")
            p = subprocess.run([sys.executable, launcher, f"--bin={os.environ['BENCH_SPILL_BIN']}",
                                f"--temp-dir={d}", f"--out={d}/out", "--mib=1", "--rounds=2",
                                "--invocations=2"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(os.listdir(os.path.join(d, "out"))), 9 * 2 * 2 + 1)
            for f in (8, 32, 256):
                for t in (40, 100, 1000):
                    row = [line for line in p.stdout.splitlines()
                           if line.startswith(f"| {f} | {t} | ") and "issue" not in line
                           and "<= 1.0" in line]
                    self.assertEqual(len(row), 1, (f, t, p.stdout))
                    self.assertNotIn("| - |", row[0])


if __name__ == "__main__":
    unittest.main()

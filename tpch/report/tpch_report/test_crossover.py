"""Tests of bench-crossover with the fake spillbench (no timing assertions; a few seconds).

The fake's time model: wall = table wall + 2 x physical bytes / rate, so with the table
below at 50 MB/s none takes 1 + 200/50 = 5 s per spilling query, lz4 1.1 + 80/50 = 2.7 s,
zstd-1 1.3 + 50/50 = 2.3 s and zstd-3 1.5 + 48/50 = 2.46 s (zstd-1 best); at 400 MB/s
1.5, 1.3, 1.425, 1.62 (lz4 best); unlimited 1.0, 1.1, 1.3, 1.5 (none best). auto is the
fastest fixed codec of each query times FAKE_AUTO_COST.
"""

import json
import os

from tpch_report import crossover
from tpch_report.testsupport import FakeBenchCase

FAKE = """wm,codec,query,wall,cpu,logical,physical,peak,rows
4MB,none,Q1,1.0,1.0,0,0,0,4
4MB,none,Q3,1.0,1.0,100,100,50,10
4MB,none,Q9,1.0,1.0,100,100,50,175
4MB,lz4,Q1,1.0,1.0,0,0,0,4
4MB,lz4,Q3,1.1,1.1,100,40,20,10
4MB,lz4,Q9,1.1,1.1,100,40,20,175
4MB,zstd-1,Q1,1.0,1.0,0,0,0,4
4MB,zstd-1,Q3,1.3,1.3,100,25,12,10
4MB,zstd-1,Q9,1.3,1.3,100,25,12,175
4MB,zstd-3,Q1,1.0,1.0,0,0,0,4
4MB,zstd-3,Q3,1.5,1.5,100,24,12,10
4MB,zstd-3,Q9,1.5,1.5,100,24,12,175
"""


class Crossover(FakeBenchCase):
    TABLE = FAKE

    def setUp(self):
        super().setUp()
        self.md_path = os.path.join(self.tmp.name, "xo.md")

    def sweep(self, *extra):
        return self.main(crossover.main, f"--out={self.md_path}", "--rates=50,400,unlimited",
                         "--rounds=2", *extra)

    def md(self):
        return self.read(self.md_path)

    def test_unlimited_run_first_then_the_spilling_queries_per_rate(self):
        self.assertEqual(self.sweep()[0], 0)
        calls = [c.split() for c in self.calls()]
        self.assertEqual(len(calls), 3)
        self.assertIn("--queries=all", calls[0])
        self.assertFalse(any(a.startswith("--io-limit") for a in calls[0]))
        for call, rate in zip(calls[1:], ("400MB/s", "50MB/s")):
            for flag in ("--queries=3,9", f"--io-limit={rate}", "--rounds=2",
                         "--codec=none,lz4,zstd:1,zstd:3,auto", "--work-mem=4MB", "--sf=1"):
                self.assertIn(flag, call)
        self.assertEqual(self.sweep()[0], 0)
        self.assertEqual(len(self.calls()), 3)              # all cached
        work = self.md_path[:-3]
        for name in ("time-relative.png", "time-seconds.png", "space-saved.png"):
            with open(os.path.join(work, "charts", name), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn(f"(xo/charts/{name})", self.md())

    def test_table_and_checks_met_when_auto_matches_the_best(self):
        self.sweep()
        md = self.md()
        # 50 MB/s: lz4 2.7/5 = 0.54, zstd-1 0.46, zstd-3 0.492, auto = zstd-1's time
        self.assertIn("| 50 MB/s | 10.00 | 0.54 (0.54–0.54) | 0.46 (0.46–0.46) | "
                      "0.49 (0.49–0.49) | 0.46 (0.46–0.46) | zstd-1 | "
                      "no measurable difference (1.00–1.00) | no measurable difference |", md)
        self.assertIn("| 400 MB/s | 3.00 |", md)
        self.assertRegex(md, r"\| unlimited \| 2\.00 \| 1\.10 \(1\.10–1\.10\) \| .* \| none \|")
        self.assertIn("- **MET**: auto's suite time within 5% of the best fixed codec at every "
                      "rate.", md)
        self.assertIn("- **MET**: in the page cache (unlimited) auto no slower than none by "
                      "more than 3%.", md)
        self.assertIn("- **not run**: on incompressible spill data", md)
        # auto's blocks are lz4's in the fake; saved over the spilling queries
        self.assertIn("| 50 MB/s | 60.0% | 75.0% | 76.0% | 75.0% | lz4 100% |", md)

    def test_auto_4_percent_slower_meets_one_check_and_misses_the_page_cache_one(self):
        os.environ["FAKE_AUTO_COST"] = "1.04"
        self.sweep()
        md = self.md()
        self.assertIn("- **MET**: auto's suite time within 5%", md)
        self.assertIn("- **MISSED**: in the page cache (unlimited) auto no slower than none by "
                      "more than 3%. auto / none = 1.04 (1.04–1.04): 4.0% slower; upper 95% "
                      "bound 1.040 against 1.03", md)

    def test_auto_8_percent_slower_misses_at_every_rate(self):
        os.environ["FAKE_AUTO_COST"] = "1.08"
        self.sweep()
        self.assertIn("- **MISSED**: auto's suite time within 5% of the best fixed codec at every "
                      "rate. Upper 95% bound above 1.05 at 50 MB/s, 400 MB/s, unlimited.",
                      self.md())

    def test_an_interval_reaching_past_the_bound_is_not_resolved(self):
        os.environ["FAKE_AUTO_COST"] = "1.02"
        os.environ["FAKE_JITTER"] = json.dumps({"auto": [1.01, 1 / 1.01]})
        self.sweep()
        # 1.02 x 1.13477 = 1.157: the estimate is within 5%, the interval is not (and holds
        # 1.0, so no estimate is shown)
        self.assertIn("50 MB/s: auto / zstd-1 = no measurable difference (0.90–1.16): the "
                      "interval reaches 1.16 (more rounds could narrow it)", self.md())
        self.assertIn("- **not resolved**: auto's suite time within 5%", self.md())

    def test_missing_rate_exits_1_and_the_check_is_not_run(self):
        os.environ["FAKE_FAIL"] = "--io-limit=50MB/s"
        status, err = self.sweep()
        self.assertEqual(status, 1)
        self.assertIn("- **not run**: auto's suite time within 5% of the best fixed codec at "
                      "every rate. Rates not measured: 50 MB/s. 400 MB/s: auto / lz4 = "
                      "no measurable difference (1.00–1.00)", self.md())

    def test_nothing_spilling_stops_after_the_unlimited_run(self):
        with open(os.environ["FAKE_TABLE"], "w") as f:
            f.write("\n".join(ln for ln in FAKE.splitlines() if ",Q1," in ln or ln[:2] == "wm"))
        status, err = self.sweep()
        self.assertEqual(status, 1)
        self.assertIn("no spilling queries known", err)
        self.assertEqual(len(self.calls()), 1)

    def test_no_absolute_paths(self):
        self.sweep()
        work = self.md_path[:-3]
        self.assert_no_machine_paths(self.md_path, os.path.join(work, "command.txt"),
                                     os.path.join(work, "machine.json"))
        self.assertIn("--out=<out>.md", self.read(os.path.join(work, "command.txt")))

    def test_bad_flags_exit_2_with_one_line(self):
        for bad in ("--rates=fast", "--rates=50,50", "--rounds=1", "--codecs=brotli",
                    "--out=x.txt", "--queries=23", "--work-mem=lots", "--sf=-1", "--sf=x"):
            status, err = self.main(crossover.main, bad)
            self.assertEqual(status, 2, bad)
            self.assertEqual(len(err.strip().splitlines()), 1, bad)
        status, err = self.main(crossover.main, "--rates=50,100")
        self.assertEqual(status, 2)
        self.assertIn("give --queries", err)

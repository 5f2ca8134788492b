"""Tests of tpch-report on a tiny matrix run by the fake spillbench (no real spillbench, no
timing assertions; a few seconds, mostly matplotlib drawing).

Run: PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m unittest discover -s tpch/report/tpch_report \
     -t tpch/report   (ctest -R tpch_report, which also names the build's libpaired.so)
The table FAKE gives each query's time and bytes per codec; FAKE_JITTER multiplies lz4's
spilling times by 1.01 in round 0 and 1/1.01 in round 1, so its intervals are known by hand:
with 2 rounds the log ratios are ln r +- ln 1.01, sd = sqrt(2) ln 1.01, half-width
t(1) sd / sqrt(2) = 12.706 ln 1.01 = 0.12643, a factor of 1.13477 either side.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tpch_report import cli, machine, matrix, results, runner
from tpch_report.testsupport import FakeBenchCase

# wm,codec,query,wall s,cpu s,logical,physical,peak (MiB),rows
FAKE = """wm,codec,query,wall,cpu,logical,physical,peak,rows
1MB,none,Q1,1.0,1.0,0,0,0,4
1MB,none,Q3,2.0,2.0,100,100,50,10
1MB,none,Q9,4.0,4.0,40,40,40,175
1MB,lz4,Q1,1.2,1.0,0,0,0,4
1MB,lz4,Q3,1.0,2.2,100,40,20,10
1MB,lz4,Q9,8.0,4.4,40,20,10,175
1MB,zstd-3,Q1,1.0,1.0,0,0,0,4
1MB,zstd-3,Q3,3.0,3.0,100,25,10,10
1MB,zstd-3,Q9,6.0,6.0,40,10,5,175
4MB,none,Q1,1.0,1.0,0,0,0,4
4MB,none,Q3,1.0,1.0,0,0,0,10
4MB,none,Q9,2.0,2.0,10,10,10,175
4MB,lz4,Q1,1.0,1.0,0,0,0,4
4MB,lz4,Q3,1.0,1.0,0,0,0,10
4MB,lz4,Q9,1.0,2.0,10,5,5,175
4MB,zstd-3,Q1,1.0,1.0,0,0,0,4
4MB,zstd-3,Q3,1.0,1.0,0,0,0,10
4MB,zstd-3,Q9,4.0,4.0,10,2,2,175
"""

SPEC = {"sf": "1", "groups": [
    {"name": "codecs", "rounds": 2, "block_size": ["8K"], "work_mem": ["1MB", "4MB"],
     "codecs": ["lz4", "none", "zstd:3"]},
    {"name": "blocks", "rounds": 2, "block_size": ["32K"], "work_mem": ["1MB"],
     "codecs": ["none", "lz4"]}]}
JITTER = json.dumps({"lz4": [1.01, 1 / 1.01]})


class Report(FakeBenchCase):
    TABLE = FAKE

    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.tmp.name, "out")
        self.spec_path = os.path.join(self.tmp.name, "fake.json")
        with open(self.spec_path, "w") as f:
            json.dump(SPEC, f)
        self.runs = matrix.expand(SPEC)
        os.environ["FAKE_JITTER"] = JITTER

    def report(self, *extra):
        return self.main(cli.main, f"--matrix={self.spec_path}", f"--out={self.out}", *extra)

    def md(self):
        return self.read(os.path.join(self.out, "report.md"))

    def run_all(self):
        """The runner alone (no report, no drawing): the failed runs."""
        return runner.run_all(self.bench, self.runs, self.out, self.data, self.temp,
                              log=lambda msg: None)

    def test_failed_run_exits_1_and_the_report_lists_it(self):
        os.environ["FAKE_FAIL"] = "--work-mem=4MB"
        status, err = self.report()
        self.assertEqual(status, 1)
        self.assertIn("simulated failure", err)
        self.assertIn("**1 missing**", self.md())
        self.assertIn(f"Missing runs: `{self.runs[1].key}`", self.md())

    def test_cache_reuses_finished_runs_and_reruns_failed(self):
        os.environ["FAKE_FAIL"] = "--work-mem=4MB"
        failed = self.run_all()
        self.assertEqual([r for r, _ in failed], [self.runs[1]])
        self.assertEqual(failed[0][1], "spillbench: simulated failure")
        self.assertEqual(len(self.calls()), 3)
        self.assertEqual(sorted(os.listdir(os.path.join(self.out, "cells"))),
                         sorted(r.key + ext for r in (self.runs[0], self.runs[2])
                                for ext in (".json", ".meta.json")))   # no .tmp left behind
        meta = runner.load_meta(runner.paths(self.out, self.runs[0])[1])
        self.assertEqual(len(meta["load_before"]), 3)
        self.assertEqual(len(meta["load_after"]), 3)
        del os.environ["FAKE_FAIL"]
        self.assertEqual(self.run_all(), [])
        self.assertEqual(len(self.calls()), 4)          # only the failed run ran again
        self.assertEqual(self.run_all(), [])
        self.assertEqual(len(self.calls()), 4)          # everything cached now

    def test_truncated_or_foreign_run_file_is_not_done(self):
        self.run_all()
        path = runner.paths(self.out, self.runs[1])[0]
        with open(path, "r+") as f:
            f.truncate(20)
        self.assertFalse(runner.is_done(self.out, self.runs[1]))
        shutil.copy(runner.paths(self.out, self.runs[2])[0], path)   # other codecs
        self.assertFalse(runner.is_done(self.out, self.runs[1]))
        self.run_all()
        self.assertEqual(len(self.calls()), 4)
        self.assertTrue(runner.is_done(self.out, self.runs[1]))

    def test_one_paired_call_per_setting_with_every_codec_none_first(self):
        self.run_all()
        calls = self.calls()
        self.assertEqual(len(calls), 3)
        for flag in ("--codec=none,lz4,zstd:3", "--rounds=2", "--block-size=8K",
                     "--work-mem=1MB", "--queries=all", "--format=json", "--sf=1"):
            self.assertIn(flag, calls[0].split())
        self.assertIn("--codec=none,lz4", calls[2].split())
        self.assertNotIn("--io-limit", calls[0])

    def test_report_tables_from_known_paired_runs(self):
        self.assertEqual(self.report()[0], 0)
        md = self.md()
        self.assertIn("not comparable to published TPC-H results", md)
        # summary, 1MB: lz4's geomean holds 1.0 (0.5 x 2.0 with +-1% jitter), zstd-3's does not
        self.assertIn("| lz4 | no measurable difference (0.88–1.13) | 1.10 (1.10–1.10) | "
                      "1.20 (1.20–1.20) | 0.0 | 140.0 | 60.0 | 57.1% | 20.0 | 40.0% |", md)
        self.assertIn("| zstd-3 | 1.50 (1.50–1.50): 50.0% slower | 1.50 (1.50–1.50) | "
                      "no measurable difference (1.00–1.00) | 0.0 | 140.0 | 35.0 | 75.0% | "
                      "10.0 | 20.0% |", md)
        # per query, wall then CPU
        self.assertIn("| Q3 | 100.0 | 2.000 | 0.50 (0.44–0.57) | 1.50 (1.50–1.50) |", md)
        self.assertIn("| Q9 | 40.0 | 4.000 | 2.00 (1.76–2.27) | 1.50 (1.50–1.50) |", md)
        self.assertIn("| Q3 | 100.0 | 2.000 | 1.10 (1.10–1.10) | 1.50 (1.50–1.50) |", md)
        self.assertIn("| Q3 | 100.0 | 100.0 | 40.0 (60.0%) | 25.0 (75.0%) |", md)
        self.assertIn("Spilling queries (1): Q9.", md)          # Q3 spills only at 1MB
        self.assertIn("**holds**", md)
        self.assertNotIn("WARNING", md)
        cells = [c for line in md.splitlines() if line.startswith("|") for c in line.split("|")]
        held = [c for c in cells if "no measurable difference" in c]
        self.assertGreater(len(held), 5)
        for c in held:                    # an interval holding 1.0 is never a speed-up
            self.assertNotRegex(c, "faster|slower|1.00 ")
        charts = os.listdir(os.path.join(self.out, "charts"))
        for name in ("tradeoff-wall.png", "tradeoff-cpu.png", "time-ratio-wm1MB-b8K.png",
                     "space-saved-wm4MB-b8K.png", "block-size-wm1MB.png"):
            self.assertIn(name, charts)
            with open(os.path.join(self.out, "charts", name), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn(f"(charts/{name})", md)
        with open(os.path.join(self.out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), (3 + 3 + 2) * 3)             # codecs of each run x queries
        q9 = [r for r in rows if r["codec"] == "lz4" and r["work_mem"] == str(1 << 20)
              and r["block_size"] == "8192" and r["query"] == "Q9"][0]
        self.assertEqual((q9["wall_ratio"], q9["wall_lo"], q9["wall_hi"]),
                         ("2.0000", "1.7625", "2.2695"))
        with open(os.path.join(self.out, "matrix.json")) as f:
            self.assertEqual(json.load(f), SPEC)

    def test_report_only_rewrites_the_same_report(self):
        self.report()
        first = self.md()
        os.remove(os.path.join(self.out, "report.md"))
        self.assertEqual(self.report("--report-only")[0], 0)
        self.assertEqual(self.md(), first)
        self.assertEqual(len(self.calls()), 3)

    def test_noisy_control_is_flagged_and_fails_unless_allowed(self):
        os.environ["FAKE_NOISE"] = json.dumps({"zstd-3": [1.05, 1 / 1.05]})
        status, err = self.report()
        self.assertEqual(status, 3)
        self.assertIn("control interval wider than +-5%", err)
        md = self.md()
        self.assertIn("**WARNING: 2 noisy run(s).**", md)
        self.assertIn(f"`{self.runs[0].key}`: control ±85.9%", md)
        self.assertIn("±85.9% **NOISY**", md)
        self.assertNotIn(f"`{self.runs[2].key}`: control", md)     # no zstd-3 in that run
        self.assertEqual(self.report("--report-only", "--allow-noisy")[0], 0)
        self.assertIn("WARNING", self.md())

    def test_no_absolute_paths_in_what_is_committed(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, "machine.json"), "w") as f:   # of runs now gone
            json.dump({"temp_dir": "/stale/tmp"}, f)
        self.report()
        cells = os.path.join(self.out, "cells")
        files = [os.path.join(self.out, n) for n in ("report.md", "command.txt",
                                                     "machine.json")]
        files += [os.path.join(cells, n) for n in os.listdir(cells)]
        self.assert_no_machine_paths(*files)
        cmd = self.read(os.path.join(self.out, "command.txt"))
        for shown in ("--data-dir=<data-dir>", "--temp-dir=<temp-dir>", "--out=<out-dir>",
                      "--spillbench=tpch/report/tpch_report/fake_spillbench.py",
                      "--matrix=<matrix-file>"):
            self.assertIn(shown, cmd)

    def test_consistency_flags_logical_bytes_and_rows(self):
        self.run_all()
        found, _ = results.load(self.out, self.runs)
        self.assertEqual(results.consistency_problems(found), [])
        found[0].by_query["Q3"]["configs"][1]["logical_bytes"] += 1
        found[1].by_query["Q9"]["rows"] = 1
        problems = results.consistency_problems(found)
        self.assertIn(f"{self.runs[0].key} Q3: lz4 spills other logical bytes than none",
                      problems)
        self.assertIn("Q9: row counts differ between runs: [1, 175]", problems)


class Matrix(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(matrix.parse_size("8K"), 8192)
        self.assertEqual(matrix.parse_size("4MB"), 4 << 20)
        self.assertEqual(matrix.size_label(128 * 1024), "128K")
        self.assertEqual(matrix.size_label(64 << 20), "64MB")
        for bad in ("", "K", "-4K", "4X"):
            with self.assertRaises(ValueError):
                matrix.parse_size(bad)

    def test_codecs(self):
        self.assertEqual(matrix.parse_codec("zstd:-3"), ("zstd", "-3"))
        self.assertEqual(matrix.parse_codec("auto"), ("auto", ""))
        self.assertEqual(matrix.codec_list(["lz4", "none", "lz4", "auto"]),
                         (("none", ""), ("lz4", ""), ("auto", "")))
        for bad in ("brotli", "none:1", "auto:3", "zstd:x"):
            with self.assertRaises(ValueError):
                matrix.parse_codec(bad)

    def test_expand_merges_settings(self):
        spec = {"sf": "1", "groups": [
            {"rounds": 3, "block_size": ["8K"], "work_mem": ["4MB"], "codecs": ["lz4"]},
            {"rounds": 5, "block_size": ["8K", "32K"], "work_mem": ["4MB"],
             "codecs": ["zstd:1", "lz4"]}]}
        self.assertEqual([r.key for r in matrix.expand(spec)],
                         ["sf1_wm4MB_b8K_r5_none+lz4+zstd-1", "sf1_wm4MB_b32K_r5_none+zstd-1+lz4"])
        self.assertEqual(matrix.expand(spec, "0.1")[0].sf, "0.1")
        for bad in ({"rounds": 1}, {"repeat": 3}):
            g = {"block_size": ["8K"], "work_mem": ["4MB"], "codecs": ["lz4"], **bad}
            with self.assertRaises(ValueError):
                matrix.expand({"sf": "1", "groups": [g]})

    def test_builtin_presets(self):
        runs = matrix.expand(matrix.PRESETS["sf1"])
        self.assertEqual([(matrix.size_label(r.work_mem), matrix.size_label(r.block))
                          for r in runs],
                         [("4MB", "8K"), ("4MB", "32K"), ("4MB", "128K"), ("1MB", "8K"),
                          ("64MB", "8K")])
        self.assertEqual(runs[0].labels, ["none", "lz4", "zstd-1", "zstd-3", "zstd-9",
                                          "zlib-1", "zlib-6", "auto"])
        self.assertEqual(runs[1].labels, ["none", "lz4", "zstd-1"])
        self.assertEqual({r.rounds for r in runs}, {5})
        smoke = matrix.expand(matrix.PRESETS["smoke"])
        self.assertEqual(({r.sf for r in smoke}, {r.rounds for r in smoke}), ({"0.1"}, {2}))

    def test_shown_path(self):
        inside = os.path.join(machine.REPO, "docs", "x")
        self.assertEqual(machine.shown_path(inside, "<p>"), os.path.join("docs", "x"))
        outside = tempfile.gettempdir()
        self.assertEqual(machine.shown_path(outside, "<p>"), "<p>")
        self.assertEqual(machine.shown_args(["--data-dir", outside, "--x=/y"],
                                            {"--data-dir": "<d>"}),
                         ["--data-dir", "<d>", "--x=/y"])


class Cli(FakeBenchCase):
    def run_script(self, *argv):
        script = os.path.join(machine.REPO, "tpch", "report", "tpch-report")
        return subprocess.run([sys.executable, script, *argv], capture_output=True, text=True)

    def test_version(self):
        p = self.run_script("--version")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^tpch-report \(buffile\) (\d+\.\d+\.\d+|unknown)\n$")

    def test_bad_flag_exits_2_with_one_line(self):
        p = self.run_script("--bogus")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    def test_bad_matrix_exits_2(self):
        status, err = self.main(cli.main, "--matrix=/nonexistent.json", "--dry-run")
        self.assertEqual(status, 2)
        self.assertIn("bad matrix", err)

    def test_dry_run_lists_runs(self):
        p = self.run_script("--matrix=smoke", "--dry-run", f"--out={self.tmp.name}")
        self.assertEqual(p.returncode, 0)
        self.assertIn("todo    sf0.1_wm4MB_b8K_r2_none+lz4+zstd-1+auto", p.stdout)

class Charts(unittest.TestCase):
    """Scales that show the figures: a whisker far above the bars is cut and its end written,
    a negative saving keeps its point, a bar whose interval holds 1 is marked."""

    def test_a_long_whisker_is_cut_and_written(self):
        import matplotlib.pyplot as plt
        from tpch_report import charts
        from tpch_report.stats import Interval
        ivs = {("Q1", "lz4"): Interval(1.05, 0.98, 1.12, 3),
               ("Q2", "lz4"): Interval(1.9, 0.13, 28.0, 3)}
        top, clip = charts._ratio_top(list(ivs.values()))
        self.assertTrue(clip)
        self.assertLess(top, 3.0)
        fig, ax = plt.subplots()
        self.addCleanup(plt.close, fig)
        self.assertEqual(charts._grouped_bars(ax, ["Q1", "Q2"], ["lz4"], ivs, ytop=top), 1)
        self.assertEqual([t.get_text() for t in ax.texts], ["28"])
        # Without a long whisker the axis just holds them all.
        top, clip = charts._ratio_top([Interval(1.05, 0.98, 1.12, 3)])
        self.assertFalse(clip)
        self.assertGreater(top, 1.12)

    def test_a_negative_saving_keeps_its_point(self):
        from tpch_report import charts
        self.assertEqual(charts.saved_axis_low([-1.3, 60.0]), -10)
        self.assertEqual(charts.saved_axis_low([55.0, 70.0]), 50)
        self.assertLess(charts.saved_axis_low([-1.3]), -1.3)

    def test_no_measurable_difference_is_marked(self):
        import matplotlib.pyplot as plt
        from tpch_report import charts
        from tpch_report.stats import Interval
        fig, ax = plt.subplots()
        self.addCleanup(plt.close, fig)
        charts._grouped_bars(ax, ["Q1", "Q2"], ["lz4"],
                             {("Q1", "lz4"): Interval(1.02, 0.97, 1.08, 3),
                              ("Q2", "lz4"): Interval(1.3, 1.2, 1.4, 3)})
        bars = [p for p in ax.patches]
        self.assertEqual([b.get_hatch() for b in bars], ["///", None])

"""Tests of tpch-report's logic on a tiny fake matrix (no real spillbench; 10-30 s, mostly drawing).

Run: PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m unittest discover -s scripts/tpch_report \
     -t scripts
A fake spillbench (a Python script written into a temp dir) produces cells from the hand-made
table FAKE below, so the ratios, geomeans, cache and report can be checked against numbers
worked out by hand.
"""

import csv
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest
from types import SimpleNamespace

from tpch_report import matrix, report, results, runner

# codec,work_mem,query,seconds,logical,physical,peak,rows  (bytes in MiB to keep it readable)
FAKE = """codec,wm,query,seconds,logical,physical,peak,rows
none,1MB,Q1,1.0,0,0,0,4
none,1MB,Q3,2.0,100,100,50,10
none,1MB,Q9,4.0,40,40,40,175
lz4,1MB,Q1,1.2,0,0,0,4
lz4,1MB,Q3,1.0,100,40,20,10
lz4,1MB,Q9,8.0,40,20,10,175
zstd,1MB,Q1,0.9,0,0,0,4
zstd,1MB,Q3,3.0,100,25,10,10
zstd,1MB,Q9,6.0,40,10,5,175
none,4MB,Q1,1.0,0,0,0,4
none,4MB,Q3,1.0,0,0,0,10
none,4MB,Q9,2.0,10,10,10,175
lz4,4MB,Q1,1.0,0,0,0,4
lz4,4MB,Q3,1.0,0,0,0,10
lz4,4MB,Q9,1.0,10,5,5,175
zstd,4MB,Q1,1.0,0,0,0,4
zstd,4MB,Q3,1.0,0,0,0,10
zstd,4MB,Q9,4.0,10,2,2,175
"""

FAKE_SPILLBENCH = r'''#!/usr/bin/python3
import csv, json, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if "=" in a)
with open(os.environ["FAKE_TABLE"]) as f:
    table = list(csv.DictReader(f))
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
if args["codec"] == os.environ.get("FAKE_FAIL", "-"):
    print("spillbench: simulated failure", file=sys.stderr)
    sys.exit(1)
M = 1024 * 1024
qs = []
for r in table:
    if r["codec"] == args["codec"] and r["wm"] == args["work-mem"]:
        qs.append({"query": r["query"], "rows": int(r["rows"]), "seconds": float(r["seconds"]),
                   "logical_bytes": int(r["logical"]) * M, "physical_bytes": int(r["physical"]) * M,
                   "peak_temp_bytes": int(r["peak"]) * M, "codec_ms": 1.0})
total = {"query": "total", "rows": sum(q["rows"] for q in qs),
         "seconds": sum(q["seconds"] for q in qs), "codec_ms": 1.0 * len(qs)}
for k in ("logical_bytes", "physical_bytes"):
    total[k] = sum(q[k] for q in qs)
total["peak_temp_bytes"] = max(q["peak_temp_bytes"] for q in qs)
with open(args["out"], "w") as f:
    json.dump({"sf": float(args["sf"]), "codec": args["codec"], "queries": qs, "total": total}, f)
'''

SPEC = {"sf": "1", "groups": [{"name": "g", "repeat": 1, "block_size": ["8K"],
                               "work_mem": ["1MB", "4MB"], "codecs": ["none", "lz4", "zstd:3"]}]}


class FakeRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.out = os.path.join(d, "out")
        self.bench = os.path.join(d, "spillbench")
        with open(self.bench, "w") as f:
            f.write(FAKE_SPILLBENCH)
        os.chmod(self.bench, os.stat(self.bench).st_mode | stat.S_IXUSR)
        table = os.path.join(d, "fake.csv")
        with open(table, "w") as f:
            f.write(FAKE)
        self.log = os.path.join(d, "calls.log")
        os.environ.update(FAKE_TABLE=table, FAKE_LOG=self.log)
        os.environ.pop("FAKE_FAIL", None)
        self.data = os.path.join(d, "data")
        os.makedirs(self.data)
        open(os.path.join(self.data, "meta.txt"), "w").close()  # no generation step
        self.cells = matrix.expand(SPEC)

    def tearDown(self):
        self.tmp.cleanup()

    def run_matrix(self):
        return runner.run_matrix(self.bench, self.cells, self.out, self.data,
                                 os.path.join(self.tmp.name, "t"), log=lambda m: None)

    def calls(self):
        if not os.path.exists(self.log):
            return 0
        with open(self.log) as f:
            return len(f.readlines())

    def test_cache_reuses_finished_cells_and_reruns_failed(self):
        os.environ["FAKE_FAIL"] = "zstd"
        failed = self.run_matrix()
        self.assertEqual(sorted(c.key for c, _ in failed),
                         ["sf1_zstd-3_b8K_wm1MB_r1", "sf1_zstd-3_b8K_wm4MB_r1"])
        self.assertIn("simulated failure", failed[0][1])
        self.assertEqual(self.calls(), 6)
        self.assertFalse(any(n.startswith("sf1_zstd") for n in os.listdir(
            os.path.join(self.out, "cells"))))
        os.environ.pop("FAKE_FAIL")
        self.assertEqual(self.run_matrix(), [])
        self.assertEqual(self.calls(), 8)          # only the two failed cells ran again
        self.assertEqual(self.run_matrix(), [])
        self.assertEqual(self.calls(), 8)          # everything cached now

    def test_truncated_cell_file_is_not_done(self):
        self.run_matrix()
        path = runner.cell_paths(self.out, self.cells[1])[0]
        with open(path, "r+") as f:
            f.truncate(20)
        self.assertFalse(runner.is_done(self.out, self.cells[1]))
        self.run_matrix()
        self.assertEqual(self.calls(), 7)
        self.assertTrue(runner.is_done(self.out, self.cells[1]))

    def test_command_carries_level_and_settings(self):
        self.run_matrix()
        with open(self.log) as f:
            lines = f.read().splitlines()
        zstd = [ln for ln in lines if "--codec=zstd" in ln][0]
        for flag in ("--level=3", "--block-size=8K", "--work-mem=1MB", "--repeat=1",
                     "--format=json", "--sf=1"):
            self.assertIn(flag, zstd)
        self.assertFalse(any("--level" in ln for ln in lines if "--codec=none" in ln))

    def comparisons(self):
        self.run_matrix()
        found, missing = results.load(self.out, self.cells)
        self.assertEqual(missing, [])
        return {(c.cell.codec_label, c.cell.work_mem): c for c in results.comparisons(found)}

    def test_ratios_against_none_of_same_work_mem(self):
        cmps = self.comparisons()
        lz4 = cmps[("lz4", 1 << 20)]
        self.assertAlmostEqual(lz4.time_ratio("Q3"), 0.5)
        self.assertAlmostEqual(lz4.time_ratio("Q9"), 2.0)
        self.assertEqual(lz4.spilling(), ["Q3", "Q9"])
        self.assertAlmostEqual(lz4.geomean_time_ratio(), 1.0)      # sqrt(0.5 * 2)
        self.assertAlmostEqual(lz4.geomean_time_ratio_control(), 1.2)   # Q1 only
        self.assertAlmostEqual(lz4.total_time_ratio(), 10.2 / 7.0)
        self.assertAlmostEqual(lz4.saved("Q3"), 0.6)
        self.assertIsNone(lz4.saved("Q1"))
        self.assertAlmostEqual(lz4.total_saved(), 1 - 60 / 140)
        self.assertAlmostEqual(lz4.peak_ratio("Q9"), 0.25)
        self.assertIsNone(lz4.peak_ratio("Q1"))
        self.assertAlmostEqual(lz4.total_peak_ratio(), 20 / 50)
        self.assertAlmostEqual(lz4.codec_share(), 0.003 / 7.0)         # 3 x 1 ms / 7 s
        z4 = cmps[("zstd-3", 4 << 20)]
        self.assertEqual(z4.spilling(), ["Q9"])                    # Q3 spills only at 1MB
        self.assertAlmostEqual(z4.geomean_time_ratio(), 2.0)
        self.assertAlmostEqual(z4.total_saved(), 0.8)

    def test_consistency_flags_row_and_logical_mismatch(self):
        self.run_matrix()
        found, _ = results.load(self.out, self.cells)
        self.assertEqual(results.consistency_problems(found), [])
        res = next(r for r in found.values() if r.cell.codec == "lz4")
        res.queries["Q9"]["rows"] = 1
        res.queries["Q3"]["logical_bytes"] += 1
        problems = results.consistency_problems(found)
        self.assertTrue(any(p.startswith("Q9: row counts differ") for p in problems))
        self.assertTrue(any("Q3: logical bytes differ" in p for p in problems))

    def test_report_tables_csv_and_charts(self):
        self.run_matrix()
        args = SimpleNamespace(matrix="fake.json", sf="", title="", spillbench=self.bench)
        with open(os.path.join(self.out, "command.txt"), "w") as f:
            f.write("scripts/tpch-report --matrix=fake.json\n")
        missing = report.write(self.out, SPEC, self.cells, args, self.tmp.name, self.data)
        self.assertEqual(missing, 0)
        with open(os.path.join(self.out, "report.md")) as f:
            md = f.read()
        self.assertIn("not comparable to published TPC-H results", md)
        self.assertIn("scripts/tpch-report --matrix=fake.json", md)
        self.assertIn("| lz4 | 10.20 | 1.46 | 1.00 |", md)       # sum, total ratio, geomean
        self.assertIn("| Q3 | 100.0 | 100.0 | 40.0 (60.0%) | 25.0 (75.0%) |", md)
        self.assertIn("Spilling queries (1): Q9.", md)
        self.assertIn("**holds**", md)
        for name in ("tradeoff.png", "tradeoff-codec-time.png", "time-ratio-wm1MB-b8K.png",
                     "space-saved-wm4MB-b8K.png"):
            with open(os.path.join(self.out, "charts", name), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn(f"(charts/{name})", md)
        with open(os.path.join(self.out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 6 * 4)                        # 6 cells x (3 queries + total)
        q3 = [r for r in rows if r["codec"] == "zstd" and r["work_mem"] == str(1 << 20)
              and r["query"] == "Q3"][0]
        self.assertEqual((q3["level"], q3["physical_bytes"]), ("3", str(25 << 20)))
        with open(os.path.join(self.out, "matrix.json")) as f:
            self.assertEqual(json.load(f), SPEC)

    def test_recheck_section_compares_bytes_and_times(self):
        self.run_matrix()
        cell = self.cells[1]
        rdir = os.path.join(self.out, "recheck")
        os.makedirs(rdir)
        with open(runner.cell_paths(self.out, cell)[0]) as f:
            doc = json.load(f)
        doc["queries"][1]["seconds"] *= 1.1
        doc["queries"][2]["physical_bytes"] += 1
        with open(os.path.join(rdir, cell.key + ".json"), "w") as f:
            json.dump(doc, f)
        args = SimpleNamespace(matrix="fake.json", sf="", title="", spillbench=self.bench)
        report.write(self.out, SPEC, self.cells, args, self.tmp.name, self.data)
        with open(os.path.join(self.out, "report.md")) as f:
            md = f.read()
        self.assertIn(f"### Rerun of cell `{cell.key}`", md)
        self.assertIn("| Q3 | 1.000 | 1.100 | +10% |", md)
        self.assertIn("identical for every query: **NO**", md)


class MatrixSpec(unittest.TestCase):
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
        self.assertEqual(matrix.parse_codec("lz4"), ("lz4", ""))
        for bad in ("brotli", "none:1", "zstd:x"):
            with self.assertRaises(ValueError):
                matrix.parse_codec(bad)

    def test_expand_dedupes_and_keeps_larger_repeat(self):
        spec = {"sf": "1", "groups": [
            {"repeat": 1, "block_size": ["8K"], "work_mem": ["4MB"], "codecs": ["none", "lz4"]},
            {"repeat": 3, "block_size": ["8K", "32K"], "work_mem": ["4MB"], "codecs": ["lz4"]}]}
        keys = [c.key for c in matrix.expand(spec)]
        self.assertEqual(keys, ["sf1_none_b8K_wm4MB_r1", "sf1_lz4_b8K_wm4MB_r3",
                                "sf1_lz4_b32K_wm4MB_r3"])
        self.assertEqual(matrix.expand(spec, "0.1")[0].key, "sf0.1_none_b8K_wm4MB_r1")

    def test_builtin_presets_expand(self):
        cells = matrix.expand(matrix.PRESETS["sf1"])
        self.assertEqual(len(cells), 27)
        self.assertEqual(len({c.key for c in cells}), 27)
        for c in cells:                       # every codec cell has its none baseline
            self.assertIn(c.baseline(), {x.config for x in cells})


class Cli(unittest.TestCase):
    def run_cli(self, *argv):
        script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "tpch-report")
        return subprocess.run([sys.executable, script, *argv], capture_output=True, text=True)

    def test_bad_flag_exits_2_with_one_line(self):
        p = self.run_cli("--bogus")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    def test_bad_matrix_exits_2(self):
        p = self.run_cli("--matrix=/nonexistent.json", "--dry-run")
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad matrix", p.stderr)

    def test_dry_run_lists_cells(self):
        with tempfile.TemporaryDirectory() as d:
            p = self.run_cli("--matrix=smoke", "--dry-run", f"--out={d}")
        self.assertEqual(p.returncode, 0)
        self.assertIn("todo    sf0.1_zlib-1_b8K_wm4MB_r1", p.stdout)


if __name__ == "__main__":
    unittest.main()

"""Tests of pg_device.py (pg-device.sh's --device as the runners' Python sees it) and of
what the runners do with it, the parts that need no server: /proc's io, slowfs's stats and
diskstats read, a run's figures (differences, bytes that reached the disk, high-water
marks), auto's device figures parsed from pg_buffile's log in each of its forms, the
report's rows, the device in the TPC-H key and the matrix's cells (page lines keep their
old key), and issue 46's targets off the page cache (slowfs: auto / lz4 at most 1.05;
the disk: auto within 2% of the best fixed method; the matrix: auto / the cell's best
fixed method at most 1.05)."""

import argparse
import json
import os
import tempfile
import unittest

import pg_device as d
import pg_hook_tpch as t
import pg_hook_wall as w
from tpch_report import stats

IO = """rchar: 1000
wchar: 2000
syscr: 5
syscw: 6
read_bytes: 4096
write_bytes: 81920
cancelled_write_bytes: 8192
"""
SLOWFS = """rate 209715200
read_rate 0
read_requests 10
read_bytes 81920
read_wait_ns 500
write_requests 12
write_bytes 98304
write_wait_ns 700
"""
DISKSTATS = """ 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 100 0 2000 50 300 0 6000 80 0 100 130
"""
LOG = """LOG:  temporary file compression auto: blocks written none 0, lz4 5, zstd 0, gzip 0
DETAIL:  Last decision: lz4: 3.91 ns/B (ratio 0.218), none 14.83 (1.000); device 4.27 ns/B (timed), transfers 3.14, caller 0.00. Started from the device figures of earlier processes.
DETAIL:  Last decision: none: 0.00 ns/B (ratio 1.000), lz4 5.44 (0.571); device not known, no transfer waited yet. Started from nothing learned of the device.
DETAIL:  Last decision: none: 0.00 ns/B (ratio 1.000), lz4 4.52 (0.301); device not limiting, transfers 0.15 ns/B, caller 0.00. Started from the device figures of earlier processes.
DETAIL:  Last decision: lz4: 4.00 ns/B (ratio 0.5); device 4.00 ns/B (prior). Started from nothing learned of the device.
"""
# The forms since writes and reads are priced apart (pg_buffile at 200 MB/s on slowfs): the
# writes not limiting with the reads timed, and both timed.
SPLIT_LOG = """DETAIL:  Last decision: zstd:1: 15.35 ns/B (ratio 0.195), none 35.42 (1.000), lz4 16.17 (0.395); device not limiting writes, reads 4.84 (timed), transfers 29.08 (reads 0.80), caller 1.46; writes + reads: none 30.86 + 4.56 lz4 14.32 + 1.85; writes' runs 23 (4.11 ns/B, 189.2 us a request, 2 fits), reads' runs 349 (4.84 ns/B). Started from the device figures of earlier processes.
DETAIL:  Last decision: lz4: 9.10 ns/B (ratio 0.400), none 12.00 (1.000); device 5.10 ns/B (timed), reads 4.70 (timed), transfers 2.50 (reads 0.70), caller 1.00; writes + reads: none 10.00 + 2.00. Started from nothing learned of the device.
DETAIL:  Last decision: lz4: 9.10 ns/B (ratio 0.400), none 12.00 (1.000); device 6.00 ns/B (pace), transfers 2.50 (reads 0.70), caller 1.00. Started from nothing learned of the device.
DETAIL:  Last decision: lz4: 9.10 ns/B (ratio 0.400); the device part of a form to come.
"""


class ParseTest(unittest.TestCase):
    def test_proc_io_keeps_the_byte_counters(self):
        self.assertEqual(d.parse_io(IO), {"rchar": 1000, "wchar": 2000, "read_bytes": 4096,
                                          "write_bytes": 81920, "cancelled_write_bytes": 8192})

    def test_slowfs_stats_are_name_value_lines(self):
        st = d.parse_slowfs(SLOWFS)
        self.assertEqual(st["write_bytes"], 98304)
        self.assertEqual(st["rate"], 209715200)

    def test_diskstats_gives_bytes_of_the_device_by_major_and_minor(self):
        self.assertEqual(d.parse_diskstats(DISKSTATS, 254, 0), (2000 * 512, 6000 * 512))
        self.assertIsNone(d.parse_diskstats(DISKSTATS, 0, 40))

    def test_auto_device_reads_each_form_of_the_decision(self):
        x = d.auto_device(LOG)
        self.assertEqual(x["states"], {"timed": 1, "not known": 1, "not limiting": 1,
                                       "prior": 1})
        self.assertEqual(x["device_ns_per_b"], [4.27, 0.0, 4.0])
        self.assertEqual(x["transfer_ns_per_b"], [3.14, 0.15])
        self.assertEqual(x["unread"], 0)
        self.assertEqual(len(x["reasons"]), 4)

    def test_auto_device_reads_the_directions_apart(self):
        x = d.auto_device(SPLIT_LOG)
        self.assertEqual(x["states"], {"not limiting writes": 1, "timed": 1, "pace": 1})
        # the writes' figure: 0 where they do not limit; the reads' where their runs timed
        self.assertEqual(x["device_ns_per_b"], [0.0, 5.1, 6.0])
        self.assertEqual(x["read_device_ns_per_b"], [4.84, 4.7])
        self.assertEqual(x["transfer_ns_per_b"], [29.08, 2.5, 2.5])
        # a decision whose device part no form matches is counted, not dropped
        self.assertEqual(x["unread"], 1)
        self.assertTrue(x["reasons"][0].startswith("Last decision: zstd:1: 15.35"))


class FiguresTest(unittest.TestCase):
    def test_a_runs_figures_are_differences_and_bytes_that_reached_the_disk(self):
        before = {"write_bytes": 100, "cancelled_write_bytes": 10, "read_bytes": 5,
                  "peak_usage_bytes": 50, "failcnt": 1}
        after = {"write_bytes": 900, "cancelled_write_bytes": 310, "read_bytes": 5,
                 "peak_usage_bytes": 70, "failcnt": 4}
        f = d.Device.figures(before, after)
        self.assertEqual(f["write_bytes"], 800)
        self.assertEqual(f["disk_write_bytes"], 500)
        self.assertEqual(f["failcnt"], 3)
        # a high-water mark is a level: its value after the run
        self.assertEqual(f["peak_usage_bytes"], 70)

    def test_a_rounds_total_sums_counts_and_keeps_the_highest_level(self):
        self.assertEqual(d.total([{"failcnt": 2, "peak_usage_bytes": 5},
                                  {"failcnt": 3, "peak_usage_bytes": 9, "read_bytes": 1}]),
                         {"failcnt": 5, "peak_usage_bytes": 9, "read_bytes": 1})

    def test_device_json_details_apply_only_to_the_device_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "device.json")
            with open(p, "w", encoding="utf-8") as f:
                json.dump({"device": "slowfs:200MB", "kind": "slowfs", "rate_bytes": 1,
                           "validated_mib_s": 198.3, "validated_share": 99.1}, f)
            self.assertIn("99.1%", d.Device.load("slowfs:200MB", p).title())
            other = d.Device.load("cgroup:640MB", p)
            self.assertEqual(other.kind, "cgroup")
            self.assertIn("640MB", other.title())
        self.assertEqual(d.Device.load().kind, "page")
        self.assertIn("page cache", d.Device.load("page", "/nonexistent").title())

    def test_children_cpu_is_cutime_and_cstime(self):
        # fields after the command: state ppid ... utime(14) stime(15) cutime(16) cstime(17)
        rest = " ".join(["S", "1"] + ["0"] * 9 + ["7", "8", str(3 * d.CLK_TCK),
                                                   str(2 * d.CLK_TCK)] + ["0"] * 30)
        self.assertEqual(d.children_cpu(f"42 (postgres: a (b)) {rest}"), (3.0, 2.0))

    def test_slowfs_titles_say_what_is_behind_the_mount(self):
        disk = d.Device.load("slowfs:200MB").title()
        tmpfs = d.Device.load("slowfs:200MB:tmpfs").title()
        self.assertIn("slowfs at 200MB/s", disk)
        self.assertIn("disk", disk)
        self.assertIn("slowfs at 200MB/s", tmpfs)
        self.assertIn("tmpfs", tmpfs)
        self.assertEqual(d.Device.load("slowfs:200MB:tmpfs").kind, "slowfs")

    def test_report_rows_have_the_devices_own_columns(self):
        runs = [{"read_bytes": 0, "disk_write_bytes": 2 << 20, "slowfs_write_bytes": 3 << 20,
                 "slowfs_read_bytes": 3 << 20, "slowfs_write_requests": 10,
                 "slowfs_read_requests": 5, "slowfs_write_wait_ns": 10 ** 9,
                 "slowfs_cpu_s": 0.25, "server_user_s": 1.5, "server_sys_s": 0.5}]
        rows = d.summary_rows(d.Device.load("slowfs:200MB"), {"off": runs})
        self.assertIn("slowfs daemon CPU s", rows[0])
        self.assertEqual(rows[2], "| off | 1 | 0 | 2 | 1.50 / 0.50 | 3 | 3 | 15 | 1.00 | 0.25 |")
        rows = d.summary_rows(d.Device.load("cgroup:640MB"),
                              {"auto": [{"peak_usage_bytes": 1 << 20, "failcnt": 2},
                                        {"peak_usage_bytes": 3 << 20, "failcnt": 4}]})
        self.assertIn("limit hits", rows[0])
        # failcnt's median, the peak's highest
        self.assertTrue(rows[2].startswith("| auto | 2 | - | - | - | 3 | 3 |"), rows[2])
        self.assertEqual(len(d.summary_rows(d.Device.load(), {"x": []})[0].split("|")), 7)

    def test_autos_view_gives_the_median_device_figure_as_a_rate(self):
        text = d.auto_rows([d.auto_device(LOG)])
        self.assertIn("median 4.00 ns/B (about 238 MiB/s)", text)
        self.assertIn("device timed in 1", text)
        self.assertIn("no decision", d.auto_rows([{}]))

    def test_autos_view_never_takes_an_unread_decision_for_none(self):
        text = d.auto_rows([d.auto_device(SPLIT_LOG)])
        self.assertIn("device not limiting writes in 1", text)
        self.assertIn("for reads, where timed: median 4.77 ns/B", text)
        self.assertIn("1 decision(s) logged in a form this report does not read", text)
        only = d.auto_rows([d.auto_device("DETAIL:  Last decision: lz4: 1.00 ns/B; odd.")])
        self.assertNotIn("no decision", only)
        self.assertIn("none read", only)


def targs(**kw):
    a = dict(sf="1", workers=2, work_mem="4MB", method="off,lz4,auto", timeout=300)
    a.update(kw)
    return argparse.Namespace(**a)


class TpchTest(unittest.TestCase):
    def test_the_page_caches_key_is_unchanged_and_other_devices_are_in_it(self):
        self.assertNotIn("device", t.key_of(targs()))
        self.assertNotIn("device", t.key_of(targs(device="page")))
        self.assertEqual(t.key_of(targs(device="slowfs:200MB"))["device"], "slowfs:200MB")

    def test_slowfs_target_is_auto_over_lz4_and_the_disks_the_best_fixed(self):
        times = {}
        for r in range(3):
            for q in (1, 2):
                times[(r, q, "off")] = 10.0 + r * 0.01
                times[(r, q, "lz4")] = 5.0 + r * 0.01
                times[(r, q, "auto")] = 5.2 + r * 0.01
        out = t.device_targets(d.Device.load("slowfs:200MB"), times, [1, 2],
                               ["off", "lz4", "auto"])
        self.assertEqual(len(out), 1)
        self.assertIn("auto / lz4", out[0][0])
        self.assertEqual(out[0][1], stats.MET)
        out = t.device_targets(d.Device.load("cgroup:640MB"), times, [1, 2],
                               ["off", "lz4", "auto"])
        # the best fixed is lz4 (auto / lz4 is the larger ratio): 1.04, over 1.02
        self.assertIn("auto / lz4", out[0][0])
        self.assertEqual(out[0][1], stats.MISSED)
        self.assertEqual(t.device_targets(d.Device.load("page"), times, [1, 2],
                                          ["off", "lz4", "auto"]), [])


class MatrixTest(unittest.TestCase):
    def test_cells_name_their_device_and_page_cells_keep_their_old_key(self):
        page = w.matrix_cells(10, [1], [1], False, "none,auto", "4MB")
        slow = w.matrix_cells(10, [1], [1], False, "none,auto", "4MB", "slowfs:400MB")
        self.assertNotIn("device", page[0])
        self.assertEqual(w.cell_key(page[0])[-1], "page")
        self.assertNotEqual(w.cell_key(page[0]), w.cell_key(slow[0]))
        self.assertIn("slowfs:400MB", w.cell_title(slow[0]))

    def test_auto_against_the_cells_best_fixed_method(self):
        labels = w.hook_labels("none,lz4,auto")
        pairs = [{"hook:none": {"s": 2.0}, "hook:lz4": {"s": 1.0 + i * 0.01},
                  "hook:auto": {"s": 1.02 + i * 0.01}} for i in range(3)]
        m, iv, word = w.best_fixed(pairs, labels)
        self.assertEqual(m, "lz4")
        self.assertAlmostEqual(iv.est, 1.02, places=2)
        self.assertEqual(word, stats.MET)
        for p in pairs:
            p["hook:auto"]["s"] *= 1.1
        self.assertEqual(w.best_fixed(pairs, labels)[2], stats.MISSED)
        self.assertIsNone(w.best_fixed(pairs, w.hook_labels("none,lz4")))


if __name__ == "__main__":
    unittest.main()

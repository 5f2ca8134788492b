"""Tests of pg_hook_tpch.py (pg-hook-tpch.sh), the part that needs no server: /proc's stat
line read for CPU time, which children of the postmaster a run made, psql's timing summed
over a query's statements, the statements EXPLAIN takes, the query list, the results file
read back with its own lines, and the report's figures and issue 46's word on auto / off
CPU (at most 1.01, half-width at most 2%)."""

import argparse
import json
import os
import tempfile
import unittest

import pg_hook_tpch as t
import pg_hook_wall as w
from tpch_report import stats

KEY = {"sf": "1", "workers": 2, "work_mem": "4MB", "methods": "off,auto", "timeout": 300}


def args(**kw):
    d = dict(sf="1", workers=2, work_mem="4MB", method="off,auto", timeout=300, rounds=3,
             seed=1, queries="3,6,9", major="18", command="pg-hook-tpch.sh 18 --sf=1",
             version="postgres (PostgreSQL) 18.6")
    d.update(kw)
    return argparse.Namespace(**d)


def run(method, wall, cpu, temp=1, raw=None):
    r = {"method": method, "status": "ok", "wall_s": wall, "cpu_s": cpu, "temp_files": temp,
         "temp_bytes": temp * 1000000, "answer": "h"}
    if raw is not None:
        r["auto_blocks"] = {"none": raw[0], "lz4": raw[1], "zstd": 0, "gzip": 0}
    return r


def warm(q, temp=1, status="ok"):
    return {"key": KEY, "warm": True, "query": q, "status": status, "answer": "h",
            "runs": {"off": run("off", 1, 1, temp), "auto": run("auto", 1, 1, temp)}}


def rnd(q, r, off, auto, raw=(90, 10), temp=1):
    return {"key": KEY, "query": q, "round": r, "order": ["auto", "off"],
            "off": run("off", off[0], off[1], temp),
            "auto": run("auto", auto[0], auto[1], temp, raw=raw)}


class ProcTest(unittest.TestCase):
    def test_stat_line_with_spaces_and_parentheses_in_its_command(self):
        # fields after the command: state ppid ... utime(14) stime(15) cutime(16) cstime(17)
        rest = "S 42 " + " ".join(["0"] * 9) + " 300 200 1000 500 20 0"
        st = t.parse_stat(f"1234 (postgres: a (b) c) {rest}")
        self.assertEqual(st[0], "S")
        self.assertEqual(st[1], 42)
        self.assertAlmostEqual(st[2], 500 / t.CLK_TCK)
        self.assertAlmostEqual(st[3], 1500 / t.CLK_TCK)

    def test_backends_workers_and_zombies_are_a_runs_children_long_lived_ones_are_not(self):
        self.assertTrue(t.is_transient("S", "postgres: pgbuf tpch [local] SELECT"))
        self.assertTrue(t.is_transient("R", "postgres: parallel worker for PID 7"))
        self.assertTrue(t.is_transient("Z", "postgres: checkpointer"))
        for aux in ("checkpointer", "background writer", "walwriter", "io worker 0",
                    "autovacuum launcher", "logical replication launcher"):
            self.assertFalse(t.is_transient("S", f"postgres: {aux}"), aux)


class ParseTest(unittest.TestCase):
    def test_query_list_takes_ranges_in_the_order_given_without_repeats(self):
        self.assertEqual(t.parse_list("2-5,8,3"), [2, 3, 4, 5, 8])
        self.assertEqual(t.parse_list("22"), [22])

    def test_wall_time_is_the_sum_of_the_statements_timings(self):
        out = "Time: 1.500 ms\nrow|1\nTime: 1679.123 ms (00:01.679)\nTime: 0.377 ms\n"
        s, n = t.wall_of(out)
        self.assertEqual(n, 3)
        self.assertAlmostEqual(s, 1.681)

    def test_explain_takes_selects_and_no_file_with_other_statements(self):
        self.assertEqual(t.explainable("-- Q1\nselect 1;\n"), ["select 1"])
        self.assertEqual(t.explainable("create view v as select 1;\nselect * from v;\n"
                                       "drop view v;\n"), [])

    def test_results_file_keeps_the_runners_own_lines_and_the_matrix_its_own(self):
        fd, path = tempfile.mkstemp()
        os.close(fd)
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(rnd(3, 0, (1, 1), (1, 1))) + "\n")
                f.write(json.dumps({"cell": {}, "round": 0}) + "\n")
                f.write('{"key": {}, "query": 3, "rou')
            mine = w.load_results(path, lambda r: "key" in r and "query" in r)
            self.assertEqual([r["query"] for r in mine], [3])
            self.assertEqual(len(w.load_results(path)), 1)
        finally:
            os.unlink(path)


class ReportTest(unittest.TestCase):
    def test_cpu_target_met_only_at_most_1_01_with_a_narrow_interval(self):
        self.assertEqual(t.cpu_word(stats.Interval(1.005, 1.0, 1.01, 5)), stats.MET)
        self.assertEqual(t.cpu_word(stats.Interval(1.05, 1.03, 1.07, 5)), stats.MISSED)
        self.assertTrue(t.cpu_word(stats.Interval(1.0, 0.9, 1.1, 5))
                        .startswith(stats.NOT_RESOLVED))
        self.assertTrue(t.cpu_word(stats.Interval(1.0, 1.0, 1.0, 1))
                        .startswith(stats.NOT_RESOLVED))

    def test_report_leaves_out_timeouts_and_keeps_non_spilling_queries_out_of_the_suite(self):
        recs = [warm(3), warm(6, temp=0), warm(9, status="timeout")]
        for r in range(3):
            recs.append(rnd(3, r, (10.0, 8.0), (10.5 + 0.01 * r, 8.4 + 0.01 * r)))
            recs.append(rnd(6, r, (1.0, 1.0), (3.0, 3.0), temp=0))
        text = t.report(args(), recs)
        self.assertIn("Left out (the warm-up hit the statement timeout): Q9.", text)
        self.assertIn("the suite): Q6.", text)
        self.assertIn("1 queries (Q3), 3 rounds.", text)
        # Q6's 3x is not in the suite: auto / off there is Q3's alone, about 1.05
        suite = [ln for ln in text.splitlines() if ln.startswith("| auto / off |")][0]
        self.assertIn("1.05", suite)
        self.assertIn(stats.MISSED, suite)
        self.assertIn("0.9000 of 300", text)

    def test_a_query_off_spilled_in_a_round_only_is_in_the_suite(self):
        recs = [warm(3), warm(6, temp=0)]
        for r in range(2):
            recs.append(rnd(3, r, (10.0, 8.0), (10.0, 8.0)))
            recs.append(rnd(6, r, (1.0, 1.0), (1.0, 1.0)))
        recs[-1]["auto"]["temp_files"] = 0
        text = t.report(args(rounds=2), recs)
        self.assertIn("2 queries (Q3, Q6), 2 rounds.", text)

    def test_suite_takes_only_rounds_every_query_has(self):
        recs = [warm(3), warm(9)]
        for r in range(3):
            recs.append(rnd(3, r, (10.0, 8.0), (10.0, 8.0)))
        recs.append(rnd(9, 1, (5.0, 4.0), (5.0, 4.0)))
        text = t.report(args(), recs)
        self.assertIn("2 queries (Q3, Q9), 1 rounds.", text)

    def test_a_round_of_another_key_is_not_this_measurement(self):
        recs = [warm(3)] + [rnd(3, r, (1, 1), (1, 1)) for r in range(2)]
        other = rnd(3, 2, (1, 1), (9, 9))
        other["key"] = dict(KEY, workers=0)
        recs.append(other)
        self.assertEqual(len(t.rounds_of(recs, KEY, 3, 3)), 2)


if __name__ == "__main__":
    unittest.main()

"""Tests of pg_hook_wall.py's hash-join matrix (pg-hook-wall.sh --matrix), the part that
needs no server: the results file read back (a cut-short line, other cells, a round run
twice), auto's log lines summed into the blocks stored raw, and a cell's figures and
words against issue 46's targets (1.03 for the time, 0.99 of the blocks raw)."""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import pg_hook_wall as w
from tpch_report import stats

CELL = {"rows": 200000, "d": 10, "conns": 2, "burner": True, "method": "auto",
        "work_mem": "4MB"}


def pair(rnd, pristine, hook, raw=None, cell=CELL, same=True):
    r = {"cell": dict(cell), "round": rnd, "order": ["hook", "pristine"],
         "pristine": {"s": pristine, "sessions": [pristine]},
         "hook": {"s": hook, "sessions": [hook]}, "same_answer": same}
    if raw is not None:
        r["hook"]["raw"] = raw
    return r


def raw(none, lz4=0, logical=0, stored=0):
    return {"blocks": {"none": none, "lz4": lz4, "zstd": 0, "gzip": 0}, "lines": 2,
            "stats": {"auto": [2, logical, stored]}}


def args(**kw):
    d = dict(method="auto", burner=True, rounds=3, major="18", command="pg-hook-wall.sh 18",
             pristine_version="postgres (PostgreSQL) 18.6", rows=200000, work_mem="4MB",
             seed=1)
    d.update(kw)
    return argparse.Namespace(**d)


class AutoLines(unittest.TestCase):
    def test_blocks_summed_over_the_spaces_and_other_lines_ignored(self):
        text = "\n".join([
            "2026-12-05 18:00:00 UTC [7] LOG:  temporary file compression auto: blocks "
            "written none 990, lz4 10, zstd 0, gzip 0, probing 0.4 ms",
            '2026-12-05 18:00:00 UTC [7] LOG:  temporary file: path "base/pgsql_tmp/'
            'pgsql_tmp7.0", size 8192, logical size 8192, method auto',
            "2026-12-05 18:00:00 UTC [8] LOG:  temporary file compression auto: blocks "
            "written none 5, lz4 1, zstd 2, gzip 3, probing 1.0 ms",
            "2026-12-05 18:00:00 UTC [8] DETAIL:  Last decision: none. Started from nothing.",
        ])
        blocks, n = w.auto_blocks(text)
        self.assertEqual(n, 2)
        self.assertEqual(blocks, {"none": 995, "lz4": 11, "zstd": 2, "gzip": 3})

    def test_no_line_no_block(self):
        self.assertEqual(w.auto_blocks("LOG:  checkpoint complete\n"),
                         ({"none": 0, "lz4": 0, "zstd": 0, "gzip": 0}, 0))


class ResultsFile(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        self.addCleanup(os.unlink, self.path)

    def test_a_line_cut_short_and_lines_not_pairs_are_left_out(self):
        with open(self.path, "w") as f:
            f.write(json.dumps(pair(0, 1.0, 1.0)) + "\n")
            f.write(json.dumps({"note": "not a pair"}) + "\n")
            f.write(json.dumps(pair(1, 1.0, 1.0))[:40])
        recs = w.load_results(self.path)
        self.assertEqual([r["round"] for r in recs], [0])

    def test_a_missing_file_is_no_result(self):
        self.assertEqual(w.load_results(self.path + ".none"), [])

    def test_pairs_of_the_cell_only_each_round_once(self):
        other = dict(CELL, conns=4)
        stock = dict(CELL, burner=False)
        recs = [pair(1, 1.0, 1.1), pair(0, 1.0, 1.2), pair(0, 9.0, 9.0, cell=other),
                pair(2, 9.0, 9.0, cell=stock), pair(1, 5.0, 5.0), pair(3, 1.0, 1.0)]
        got = w.cell_pairs(recs, CELL, 3)
        self.assertEqual([(p["round"], p["hook"]["s"]) for p in got], [(0, 1.2), (1, 1.1)])

    def test_a_second_invocation_runs_the_rounds_left(self):
        # what Matrix.run_cell skips: the rounds already in the file
        recs = [pair(0, 1.0, 1.0), pair(2, 1.0, 1.0)]
        done = {p["round"] for p in w.cell_pairs(recs, CELL, 4)}
        self.assertEqual([r for r in range(4) if r not in done], [1, 3])


class Figures(unittest.TestCase):
    def test_a_hook_ten_percent_slower_misses_1_03(self):
        pairs = [pair(i, p, p * 1.10) for i, p in enumerate([2.0, 2.1, 1.9, 2.05, 1.95])]
        e = w.summarize(pairs, "none")
        self.assertAlmostEqual(e["iv"].est, 1.10, places=6)
        self.assertEqual(e["word"], stats.MISSED)
        self.assertAlmostEqual(e["pristine_median"], 2.0)

    def test_a_hook_as_fast_as_pristine_meets_1_03(self):
        pairs = [pair(i, 2.0, 2.0 * f) for i, f in enumerate([1.001, 0.999, 1.002, 0.998])]
        self.assertEqual(w.summarize(pairs, "auto")["word"], stats.MET)

    def test_one_round_is_not_resolved_and_none_is_not_run(self):
        self.assertTrue(w.summarize([pair(0, 1.0, 1.0)], "none")["word"]
                        .startswith(stats.NOT_RESOLVED))
        self.assertEqual(w.summarize([], "none")["word"], stats.NOT_RUN)

    def test_raw_share_is_over_all_blocks_with_the_lowest_round(self):
        pairs = [pair(0, 1.0, 1.0, raw(990, 10, 1000, 1010)),
                 pair(1, 1.0, 1.0, raw(3000, 0, 3000, 3030))]
        e = w.summarize(pairs, "auto")
        self.assertAlmostEqual(e["raw_share"], 3990 / 4000)
        self.assertAlmostEqual(e["raw_min"], 0.99)
        self.assertAlmostEqual(e["stored_per_logical"], 4040 / 4000)

    def test_raw_share_against_0_99(self):
        self.assertEqual(w.raw_text(0.99), stats.MET)
        self.assertEqual(w.raw_text(0.9899), stats.MISSED)
        self.assertEqual(w.raw_text(None), stats.NOT_RUN)
        e = w.summarize([pair(0, 1.0, 1.0, raw(0))], "auto")
        self.assertIsNone(e["raw_share"])

    def test_counts(self):
        self.assertEqual(w.parse_count("10M"), 10_000_000)
        self.assertEqual(w.parse_count("200k"), 200_000)
        self.assertEqual(w.parse_count("2500"), 2500)
        self.assertEqual(w.count_label(200_000), "200k")


class Report(unittest.TestCase):
    def cells(self):
        return w.matrix_cells(200000, [1, 10], [2], True, "auto", "4MB")

    def test_a_table_per_cell_and_the_words_against_both_targets(self):
        c1, c10 = self.cells()
        recs = [pair(i, 2.0, 2.0 * f, raw(999, 1), cell=c1)
                for i, f in enumerate([1.001, 0.999, 1.0])]
        recs += [pair(i, 2.0, 2.2 * f, raw(900, 100), cell=c10)
                 for i, f in enumerate([1.001, 0.999, 1.0])]
        text = w.matrix_report(args(), [c1, c10], recs)
        summary = [ln for ln in text.splitlines() if ln.startswith("| 200k rows")]
        self.assertEqual(len(summary), 2)
        self.assertIn("| MET | 0.9990 | MET |", summary[0])
        self.assertIn("| MISSED | 0.9000 | MISSED |", summary[1])
        self.assertIn("## 200k rows, D = 1, 2 connections, CPU burner", text)
        self.assertIn("## 200k rows, D = 10, 2 connections, CPU burner", text)
        self.assertIn("The matrix as a whole: MISSED (2 of 4 targets met)", text)

    def test_without_the_burner_the_raw_share_has_no_target(self):
        c1 = w.matrix_cells(200000, [1], [1], False, "auto", "4MB")[0]
        recs = [pair(i, 2.0, 2.0, raw(10, 90), cell=c1) for i in range(3)]
        text = w.matrix_report(args(burner=False), [c1], recs)
        self.assertIn("| 0.1000 | (none) |", text)
        self.assertIn("The matrix as a whole: MET (1 of 1 targets met)", text)

    def test_a_cell_not_run_and_answers_that_differ_are_said(self):
        c1, c10 = self.cells()
        recs = [pair(0, 2.0, 2.0, raw(1), cell=c1, same=False)]
        text = w.matrix_report(args(), [c1, c10], recs)
        self.assertIn("Not run yet.", text)
        self.assertIn("DIFFER", text)


MCELL = dict(CELL, method="none,auto", burner=False)


def round3(rnd, pristine, none, auto, raw_auto=None, cell=MCELL):
    """A round of two methods as Matrix.run_cell writes it."""
    r = {"cell": dict(cell), "round": rnd, "order": ["hook:auto", "pristine", "hook:none"],
         "pristine": {"s": pristine, "sessions": [pristine]},
         "hook:none": {"s": none, "sessions": [none]},
         "hook:auto": {"s": auto, "sessions": [auto]}, "same_answer": True}
    if raw_auto is not None:
        r["hook:auto"]["raw"] = raw_auto
    return r


class TwoMethods(unittest.TestCase):
    def test_each_round_runs_pristine_and_both_methods_in_shuffled_orders(self):
        orders = set()
        for r in range(20):
            plan = w.round_plan("none,auto", 7, r)
            self.assertEqual(sorted(plan), [("hook:auto", "auto"), ("hook:none", "none"),
                                            ("pristine", None)])
            orders.add(tuple(k for k, _ in plan))
        # 20 rounds of 3 runs: pristine is not always in one place, the order changes
        self.assertGreaterEqual(len(orders), 3)
        self.assertEqual({o.index("pristine") for o in orders}, {0, 1, 2})

    def test_one_method_keeps_the_pair_of_pristine_and_hook(self):
        for r in range(6):
            plan = w.round_plan("auto", 1, r)
            self.assertEqual([k for k, _ in plan],
                             [("pristine", "hook")[i] for i in stats.shuffle(1, r, 2)])
        self.assertEqual(w.hook_labels(""), [("hook", "")])
        self.assertEqual(w.hook_labels("none,auto"), [("hook:none", "none"),
                                                       ("hook:auto", "auto")])

    def test_the_report_gives_auto_over_none_from_the_same_rounds(self):
        # auto 2% slower than none in every round while pristine wanders by 10%: the
        # paired auto / none is 1.02 with a narrow interval
        recs = [round3(i, p, p * 1.03, p * 1.03 * 1.02 * f, raw(990 + i, 10 - i))
                for i, (p, f) in enumerate([(2.0, 1.001), (2.2, 0.999), (1.8, 1.0),
                                            (2.1, 1.0005)])]
        text = w.matrix_report(args(method="none,auto", burner=False, rounds=4), [MCELL],
                               recs)
        row = [ln for ln in text.splitlines() if ln.startswith("| 200k rows")][0]
        cols = [c.strip() for c in row.strip("|").split("|")]
        # cell, rounds, none / pristine, target, auto / pristine, target, auto / none, raw
        self.assertEqual(cols[1], "4")
        self.assertTrue(cols[2].startswith("1.030"), cols[2])
        self.assertTrue(cols[4].startswith("1.051"), cols[4])
        self.assertTrue(cols[6].startswith("1.020 ("), cols[6])
        iv = stats.ratio([r["hook:auto"]["s"] for r in recs],
                         [r["hook:none"]["s"] for r in recs])
        self.assertLess(iv.hi - iv.lo, 0.01)
        self.assertIn(stats.fmt_ratio(iv, digits=3), cols[6])
        # the raw share is auto's runs' blocks: 3966 of 4000
        self.assertEqual(cols[7], f"{(990 + 991 + 992 + 993) / 4000:.4f}")
        self.assertIn("| auto / none | | 1.020", text)
        self.assertIn("pristine/none/auto", text)

    def test_resuming_runs_only_the_rounds_of_this_method_list_left(self):
        recs = [round3(0, 1.0, 1.0, 1.0), round3(2, 1.0, 1.0, 1.0),
                pair(1, 1.0, 1.0, cell=dict(MCELL, method="auto"))]
        done = {p["round"] for p in w.cell_pairs(recs, MCELL, 4)}
        self.assertEqual([r for r in range(4) if r not in done], [1, 3])
        # and the one-method line reports as it always did
        c = dict(MCELL, method="auto")
        text = w.matrix_report(args(method="auto", burner=False), [c], recs)
        self.assertIn("| 200k rows, D = 10, 2 connections | 1 |", text)


class Burner(unittest.TestCase):
    """The burner's processes end with the runner that started them, even killed."""

    def test_burners_end_when_their_runner_is_killed(self):
        here = os.path.dirname(os.path.abspath(__file__))
        runner = subprocess.Popen(
            [sys.executable, "-c",
             "import sys, time\nsys.path.insert(0, sys.argv[1])\nimport pg_hook_wall as w\n"
             "print(' '.join(str(p.pid) for p in w.start_burners(2)), flush=True)\n"
             "time.sleep(60)\n", here],
            stdout=subprocess.PIPE, text=True)
        pids = [int(x) for x in runner.stdout.readline().split()]
        self.assertEqual(len(pids), 2)
        for pid in pids:
            os.kill(pid, 0)  # spinning
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        deadline = time.monotonic() + 30
        alive = pids
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in pids if _running(p)]
        self.assertEqual(alive, [], "burner processes outlived their runner")


def _running(pid):
    """Whether pid is a process that has not exited (a zombie has: it only waits for init
    to reap it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()

"""Tests of the statistics module: its binding of paired.c gives tpch/exec/tests/test_paired.c's
known intervals (worked out by hand there and in the comments here), and the words a ratio is
judged with."""

import math
import unittest

from tpch_report.stats import (MET, MISSED, NOT_RESOLVED, NOT_RUN, Interval, fmt_ratio, overall,
                               ratio, shuffle, suite_interval, t975, target, target_text, verdict)


class Binding(unittest.TestCase):
    """The figures of test_paired.c, through ctypes: the library this module loads is paired.c
    with the layout and the types this module assumes."""

    def assert_close(self, got, want):
        self.assertLessEqual(abs(got - want), 1e-6 * abs(want), f"{got} != {want}")

    def test_t_quantiles(self):
        self.assert_close(t975(1), 12.706)
        self.assert_close(t975(4), 2.776)
        self.assert_close(t975(30), 2.042)
        self.assertAlmostEqual(t975(40), 1.972214, places=6)   # 1.959964 (1 + 1/160)
        self.assertTrue(math.isnan(t975(0)))

    def test_ratio_interval_of_test_paired(self):
        # test_paired.c test_ratio_interval: ratios 1.0, 1.1, 0.9, 1.05, 0.95
        iv = ratio([10, 11, 9, 10.5, 9.5], [10] * 5)
        self.assertEqual(iv.n, 5)
        self.assert_close(iv.est, 0.997492456)
        self.assert_close(iv.lo, 0.903950987)
        self.assert_close(iv.hi, 1.100713660)
        self.assertTrue(iv.holds_one())
        self.assertLess(abs(iv.halfwidth() - 0.10346), 1e-4)
        # a constant ratio has no spread; one pair has no interval
        iv = ratio([12, 24, 36], [10, 20, 30])
        self.assertEqual((round(iv.est, 9), round(iv.lo, 9)), (1.2, 1.2))
        self.assertFalse(iv.holds_one())
        iv = ratio([12], [10])
        self.assertEqual((iv.lo, iv.hi, iv.n), (iv.est, iv.est, 1))

    def test_suite_interval_of_test_paired(self):
        # test_paired.c test_suite_interval: 3 rounds, queries q0 and q2 (q1 left out)
        rows = [(10, 12, 20, 22), (11, 12.1, 19, 20.9), (10, 11.5, 21, 23)]
        t = {}
        for r, (a0, a1, c0, c1) in enumerate(rows):
            t.update({(r, "q0", 0): a0, (r, "q0", 1): a1, (r, "q2", 0): c0, (r, "q2", 1): c1})
        iv = suite_interval(t, ["q0", "q2"], 1, 0)
        self.assertEqual(iv.n, 3)
        self.assert_close(iv.est, 1.123554855)
        self.assert_close(iv.lo, 1.064389590)
        self.assert_close(iv.hi, 1.186008885)
        self.assert_close(suite_interval(t, ["q0", "q2"], 0, 0).hi, 1.0)

    def test_suite_ratio_is_per_round_geomean_then_interval(self):
        # round 0: Q1 2/1, Q2 1/2 -> geomean 1; round 1: Q1 4/1, Q2 2/2 -> geomean 2
        t = {(0, "Q1", 0): 1, (0, "Q1", 1): 2, (0, "Q2", 0): 2, (0, "Q2", 1): 1,
             (1, "Q1", 0): 1, (1, "Q1", 1): 4, (1, "Q2", 0): 2, (1, "Q2", 1): 2}
        iv = suite_interval(t, ["Q1", "Q2"], 1, 0)
        self.assertAlmostEqual(iv.est, math.sqrt(2))
        # logs 0 and ln 2: half = 12.706 x (ln 2 / sqrt 2) / sqrt 2
        self.assertAlmostEqual(iv.hi, math.exp(math.log(2) / 2 + 12.706 * math.log(2) / 2))
        self.assertAlmostEqual(suite_interval(t, ["Q1"], 1, 0).est, math.sqrt(8))
        # absolute: per round Q1 + Q2 of configuration 1: 3 and 6 -> geomean sqrt(18)
        self.assertAlmostEqual(suite_interval(t, ["Q1", "Q2"], 1).est, math.sqrt(18))
        self.assertEqual(suite_interval(t, [], 1, 0).n, 0)

    def test_shuffle_is_a_permutation_the_seed_replays(self):
        order = shuffle(42, 3, 5)
        self.assertEqual(sorted(order), list(range(5)))
        self.assertEqual(shuffle(42, 3, 5), order)

    def test_interval_is_written_as_a_list(self):
        self.assertEqual(list(Interval(1.0, 0.9, 1.1, 3)), [1.0, 0.9, 1.1, 3])


class Words(unittest.TestCase):
    def test_ratio_against_one(self):
        same, slower = Interval(0.99, 0.97, 1.02, 5), Interval(1.07, 1.05, 1.09, 5)
        self.assertEqual(fmt_ratio(same), "no measurable difference (0.97–1.02)")
        self.assertEqual(verdict(same), "no measurable difference")
        self.assertEqual(fmt_ratio(slower), "1.07 (1.05–1.09)")
        self.assertEqual(fmt_ratio(slower, digits=3), "1.070 (1.050–1.090)")
        self.assertEqual(fmt_ratio(slower, digits=0, percent=True), "107% (105–109%)")
        self.assertEqual(verdict(slower), "7.0% slower")
        self.assertEqual(verdict(Interval(0.8, 0.75, 0.85, 5)), "20.0% faster")
        self.assertEqual(fmt_ratio(Interval(1.2, 1.2, 1.2, 1)), "1.20 (one round)")
        self.assertEqual(fmt_ratio(None), "-")
        self.assertEqual(fmt_ratio(Interval(math.nan, math.nan, math.nan, 0)), "-")

    def test_ratio_against_a_target(self):
        self.assertEqual(target(Interval(1.01, 1.00, 1.02, 5), 1.02), MET)
        self.assertEqual(target(Interval(1.05, 1.03, 1.07, 5), 1.02), MISSED)
        self.assertEqual(target(Interval(1.02, 1.01, 1.03, 5), 1.02), NOT_RESOLVED)
        self.assertEqual(target_text(Interval(1.02, 1.01, 1.03, 5), 1.02),
                         "not resolved (the interval holds 1.02)")
        self.assertEqual(target_text(Interval(1.0, 1.0, 1.0, 1), 1.02),
                         "not resolved (fewer than 2 rounds)")
        self.assertEqual(target(None, 1.02), NOT_RUN)

    def test_overall(self):
        self.assertEqual(overall([MET, MET]), MET)
        self.assertEqual(overall([MET, "not resolved (the interval holds 1.05)"]), NOT_RESOLVED)
        self.assertEqual(overall([NOT_RESOLVED, MISSED]), MISSED)
        self.assertEqual(overall([MET, NOT_RUN]), NOT_RUN)
        self.assertEqual(overall([]), NOT_RUN)


if __name__ == "__main__":
    unittest.main()

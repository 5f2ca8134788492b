"""Tests of the paired statistics and their wording: known inputs give known intervals
(worked out by hand in the comments)."""

import math
import unittest

from tpch_report.stats import Interval, fmt_ratio, from_logs, suite_interval, t975, verdict


class Stats(unittest.TestCase):
    def test_t_quantiles(self):
        self.assertEqual(t975(1), 12.706)
        self.assertEqual(t975(4), 2.776)
        self.assertEqual(t975(30), 2.042)
        self.assertAlmostEqual(t975(40), 1.972214, places=6)   # 1.959964 (1 + 1/160)
        with self.assertRaises(ValueError):
            t975(0)

    def test_interval_from_two_logs(self):
        # mean 0.2, sd sqrt(0.02) = 0.141421, half = 12.706 x 0.141421 / sqrt(2) = 1.2706
        iv = from_logs([0.1, 0.3])
        self.assertAlmostEqual(iv.est, 1.221403, places=6)
        self.assertAlmostEqual(iv.lo, 0.342803, places=6)     # exp(-1.0706)
        self.assertAlmostEqual(iv.hi, 4.351845, places=6)     # exp(1.4706)
        self.assertEqual(iv.n, 2)

    def test_one_round_has_no_width(self):
        self.assertEqual(from_logs([math.log(2)]), Interval(2.0, 2.0, 2.0, 1))

    def test_suite_ratio_is_per_round_geomean_then_interval(self):
        # round 0: Q1 2/1, Q2 1/2 -> geomean 1; round 1: Q1 4/1, Q2 2/2 -> geomean 2
        t = {(0, "Q1", 0): 1, (0, "Q1", 1): 2, (0, "Q2", 0): 2, (0, "Q2", 1): 1,
             (1, "Q1", 0): 1, (1, "Q1", 1): 4, (1, "Q2", 0): 2, (1, "Q2", 1): 2}
        iv = suite_interval(t, ["Q1", "Q2"], 1, 0)
        self.assertAlmostEqual(iv.est, math.sqrt(2))
        # logs 0 and ln 2: half = 12.706 x (ln 2 / sqrt 2) / sqrt 2 = 4.40357
        self.assertAlmostEqual(iv.hi, math.exp(math.log(2) / 2 + 12.706 * math.log(2) / 2))
        only_q1 = suite_interval(t, ["Q1"], 1, 0)
        self.assertAlmostEqual(only_q1.est, math.sqrt(8))
        # absolute: per round Q1 + Q2 of configuration 1: 3 and 6 -> geomean sqrt(18)
        self.assertAlmostEqual(suite_interval(t, ["Q1", "Q2"], 1).est, math.sqrt(18))
        with self.assertRaises(ValueError):
            suite_interval(t, [], 1, 0)

    def test_holds_one_and_half_width(self):
        self.assertTrue(Interval(1.02, 1.0, 1.04, 5).holds_one())
        self.assertFalse(Interval(1.03, 1.01, 1.05, 5).holds_one())
        self.assertAlmostEqual(Interval(1.0, 1 / 1.05, 1.05, 5).halfwidth(), 0.05)

    def test_wording(self):
        self.assertEqual(fmt_ratio(Interval(0.99, 0.97, 1.02, 5)),
                         "no measurable difference (0.97–1.02)")
        self.assertEqual(verdict(Interval(0.99, 0.97, 1.02, 5)), "no measurable difference")
        self.assertEqual(fmt_ratio(Interval(1.07, 1.05, 1.09, 5)), "1.07 (1.05–1.09)")
        self.assertEqual(verdict(Interval(1.07, 1.05, 1.09, 5)), "7.0% slower")
        self.assertEqual(verdict(Interval(0.8, 0.75, 0.85, 5)), "20.0% faster")
        self.assertEqual(fmt_ratio(None), "-")


if __name__ == "__main__":
    unittest.main()

"""Tests of the PostgreSQL benchmarks' charts (pgcharts.py). Run by ctest as pg_scripts, or by
hand from this folder with PYTHONPATH=../../../tpch/report:
    /usr/bin/python3 -m unittest discover -s . -p 'test_*.py'
"""

import os
import shutil
import tempfile
import unittest

import pgcharts


class PgHeatmap(unittest.TestCase):
    """The PostgreSQL matrix's heat map: a cell with no ratios says why instead of staying
    blank (a missing cell once read as a chart with a hole)."""

    def cell(self, dups, **extra):
        return {"rows": 10**6, "dups": dups, "conns": 1, "device": "page", **extra}

    def test_labels(self):
        ok = self.cell(1, status="ok", ratios={"wall": {"lz4": [0.8, 0.7, 0.9, 3]},
                                               "cpu": {"lz4": [1.05, 0.95, 1.2, 3]}})
        self.assertEqual(pgcharts.cell_label(ok, "wall", "lz4"), ("80%\n70-90", 0.8))
        self.assertEqual(pgcharts.cell_label(ok, "cpu", "lz4"), ("105%~\n95-120", 1.05))
        self.assertEqual(pgcharts.cell_label(None, "wall", "lz4"), ("not run", None))
        for status, shown in (("not run", "not run"), ("incomplete (1 of 3 rounds)", "incomplete"),
                              ("failed: lz4 timeout", "failed"), ("timeout", "timeout")):
            self.assertEqual(pgcharts.cell_label(self.cell(10, status=status), "wall", "lz4"),
                             (shown, None))

    def test_chart_with_a_missing_cell(self):
        ok = self.cell(1, status="ok", ratios={k: {"lz4": [0.8, 0.7, 0.9, 3]}
                                               for k in ("wall", "cpu")})
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out)
        pgcharts.matrix_heatmaps([ok, self.cell(10, status="timeout")], ["off", "lz4"], out)
        for kind in ("wall", "cpu"):
            self.assertGreater(os.path.getsize(os.path.join(out, f"matrix-{kind}.png")), 1000)


if __name__ == "__main__":
    unittest.main()

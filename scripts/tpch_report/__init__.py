"""tpch-report: paired spillbench runs with a resumable cache, turned into report.md and
charts.

Modules: matrix (what to run), runner (running paired runs, cached), stats (paired ratios
and intervals, and how they are written), results (reading cached runs), machine (where they
ran; paths shown without the machine's absolute paths), charts, report (report.md), tool and
cli (the command line).
"""

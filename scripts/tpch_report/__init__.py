"""tpch-report: run a matrix of spillbench cells and turn them into report.md and charts.

Modules: matrix (what to run), runner (running it with a resumable cache), results
(loading cells and computing ratios), machine (where it ran), charts, render (report.md),
cli (the command line).
"""

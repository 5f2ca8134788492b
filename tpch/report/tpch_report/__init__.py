"""tpch-report and bench-crossover: paired spillbench runs with a resumable cache, turned into
markdown reports and charts.

Modules: matrix (what tpch-report runs), runner (running paired runs, cached), stats (paired
ratios and intervals from tpch/exec/paired.c, and the words every report judges them with;
the PostgreSQL benchmarks use it too), results (reading cached runs), machine
(where they ran; paths shown without the machine's absolute paths), charts, report
(tpch-report's report.md), crossover (bench-crossover), tool and cli (the command lines).
"""

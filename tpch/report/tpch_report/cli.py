"""Command line of tpch/report/tpch-report: run the matrix of paired runs (resumably), then write
the report. Exit status: see tool.py.
"""

import os
import sys
import time

from . import machine, matrix, results, runner, tool

PROG = "tpch-report"


def parse_args(argv):
    p = tool.Parser(prog=PROG,
                    description="Run a matrix of paired spillbench runs (one per work_mem and "
                                "block size, all codecs interleaved in it) with a resumable "
                                "cache and write report.md with charts. Results are derived "
                                "from TPC-H, not comparable to published TPC-H results.")
    p.add_argument("--matrix", default="sf1",
                   help="built-in matrix (%s) or a JSON file of the same shape (default sf1)"
                        % ", ".join(matrix.PRESETS))
    p.add_argument("--sf", default="", help="override the matrix's scale factor")
    p.add_argument("--out", default="", help="output directory (default tpch-report-sf<SF>)")
    p.add_argument("--title", default="", help="report title")
    p.add_run_flags()
    return p.parse_args(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        spec = matrix.load_spec(args.matrix)
        runs = matrix.expand(spec, args.sf)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{PROG}: bad matrix '{args.matrix}': {e}", file=sys.stderr)
        return tool.EXIT_USAGE
    sf = runs[0].sf
    out_dir = args.out or f"tpch-report-sf{sf}"
    data_dir = args.data_dir or os.path.join("tpch-data", f"sf{sf}")
    temp_dir = args.temp_dir or os.environ.get("TMPDIR", "/tmp")

    if args.dry_run:
        for line in matrix.describe(spec, args.sf):
            print(line)
        for r in runs:
            print(f"{'cached' if runner.is_done(out_dir, r) else 'todo  '}  {r.key}")
        return tool.EXIT_OK

    failed = []
    if not args.report_only:
        if not tool.usable_spillbench(PROG, args.spillbench):
            return tool.EXIT_USAGE
        path_flags = {"--out": "<out-dir>"}
        if args.matrix not in matrix.PRESETS:
            path_flags["--matrix"] = "<matrix-file>"
        tool.record_command(out_dir, "tpch/report/tpch-report", argv, path_flags)
        os.makedirs(temp_dir, exist_ok=True)
        machine.ensure(out_dir, args.spillbench, temp_dir, data_dir,
                       fresh=not any(runner.is_done(out_dir, r) for r in runs))
        t0 = time.monotonic()
        failed = tool.run(PROG, out_dir, runs, args, data_dir, temp_dir)
        if failed is None:
            return tool.EXIT_INTERRUPTED
        print(f"{PROG}: matrix finished in {(time.monotonic() - t0) / 60:.1f} min",
              file=sys.stderr)

    found, missing = results.load(out_dir, runs)
    if not found:
        print(f"{PROG}: no finished runs in {out_dir}", file=sys.stderr)
        return tool.EXIT_FAILED
    from . import report  # matplotlib is only needed once there is something to draw
    m = machine.ensure(out_dir, args.spillbench, temp_dir, data_dir)
    report.write(out_dir, spec, runs, args, found, missing, m)
    print(f"{PROG}: wrote {os.path.join(out_dir, 'report.md')}", file=sys.stderr)
    return tool.exit_status(PROG, failed, missing, found, args.allow_noisy)

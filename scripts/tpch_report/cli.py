"""Command line of scripts/tpch-report: run the matrix (resumably), then write the report.

Exit status: 0 all cells present and the report written, 1 some cell failed or is missing
(the report is still written from what exists), 2 bad flags, 130 interrupted (finished cells
stay cached).
"""

import argparse
import json
import os
import shlex
import sys
import time

from . import machine, matrix, runner

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"tpch-report: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    p = _Parser(prog="tpch-report",
                description="Run a matrix of spillbench cells (codec x level x block size x "
                            "work_mem) with a resumable cache and write report.md with charts. "
                            "Results are derived from TPC-H, not comparable to published "
                            "TPC-H results.")
    p.add_argument("--matrix", default="sf1",
                   help="built-in matrix (%s) or a JSON file of the same shape (default sf1)"
                        % ", ".join(matrix.PRESETS))
    p.add_argument("--sf", default="", help="override the matrix's scale factor")
    p.add_argument("--out", default="", help="output directory (default tpch-report-sf<SF>)")
    p.add_argument("--spillbench",
                   default=os.path.join(REPO, "build", "tpch", "exec", "spillbench"),
                   help="spillbench binary (default build/tpch/exec/spillbench)")
    p.add_argument("--data-dir", default="", help="table directory (default ./tpch-data/sf<SF>)")
    p.add_argument("--temp-dir", default="",
                   help="parent of spill directories (default $TMPDIR or /tmp)")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing; write the report from the cached cells")
    p.add_argument("--dry-run", action="store_true",
                   help="list the cells and whether each is cached, run nothing")
    p.add_argument("--title", default="", help="report title")
    return p.parse_args(argv)


def record_run(out_dir, argv, args, temp_dir, data_dir):
    """command.txt (this invocation) and, for the first run into DIR, machine.json."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "command.txt"), "w", encoding="utf-8") as f:
        f.write(shlex.join(["scripts/tpch-report"] + list(argv)) + "\n")
    mpath = os.path.join(out_dir, "machine.json")
    if not os.path.exists(mpath):
        with open(mpath, "w", encoding="utf-8") as f:
            json.dump(machine.collect(args.spillbench, temp_dir, data_dir), f, indent=1)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        spec = matrix.load_spec(args.matrix)
        cells = matrix.expand(spec, args.sf)
    except (OSError, ValueError, KeyError) as e:
        print(f"tpch-report: bad matrix '{args.matrix}': {e}", file=sys.stderr)
        return 2
    sf = cells[0].sf
    out_dir = args.out or f"tpch-report-sf{sf}"
    data_dir = args.data_dir or os.path.join("tpch-data", f"sf{sf}")
    temp_dir = args.temp_dir or os.environ.get("TMPDIR", "/tmp")

    if args.dry_run:
        for line in matrix.describe(spec, args.sf):
            print(line)
        for c in cells:
            print(f"{'cached' if runner.is_done(out_dir, c) else 'todo  '}  {c.key}")
        return 0

    failed = []
    if not args.report_only:
        if not os.access(args.spillbench, os.X_OK):
            print(f"tpch-report: spillbench not found at {args.spillbench} (--spillbench)",
                  file=sys.stderr)
            return 2
        record_run(out_dir, argv if argv is not None else sys.argv[1:], args, temp_dir,
                   data_dir)
        t0 = time.monotonic()
        try:
            failed = runner.run_matrix(args.spillbench, cells, out_dir, data_dir, temp_dir)
        except KeyboardInterrupt:
            done = sum(runner.is_done(out_dir, c) for c in cells)
            print(f"tpch-report: interrupted; {done} of {len(cells)} cells cached, run the same "
                  "command again to resume", file=sys.stderr)
            return 130
        print(f"tpch-report: matrix finished in {(time.monotonic() - t0) / 60:.1f} min",
              file=sys.stderr)

    from . import report  # matplotlib is only needed once there is something to draw
    missing = report.write(out_dir, spec, cells, args, temp_dir, data_dir)
    print(f"tpch-report: wrote {os.path.join(out_dir, 'report.md')}", file=sys.stderr)
    if failed or missing:
        print(f"tpch-report: {len(failed)} failed, {missing} missing cells", file=sys.stderr)
        return 1
    return 0

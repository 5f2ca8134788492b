"""What tpch/report/tpch-report and bench/bench-crossover share on the command line.

Exit status of both: 0 every run present and none noisy; 1 some run failed or is missing
(the report is still written from what exists); 2 bad flags; 3 a run's control interval
is wider than +-5% (unless --allow-noisy; the report flags it either way); 130 interrupted
(finished runs stay cached). Invariant: command.txt shows every path relative to the
repository or as a placeholder (machine.shown_args).
"""

import argparse
import os
import shlex
import shutil
import sys

from . import machine, runner

# In the source tree the build's spillbench; installed (buffile-report), the one on PATH.
_BUILT_SPILLBENCH = os.path.join(machine.REPO, "build", "tpch", "exec", "spillbench")
DEFAULT_SPILLBENCH = (_BUILT_SPILLBENCH if os.path.exists(_BUILT_SPILLBENCH)
                      else shutil.which("spillbench") or _BUILT_SPILLBENCH)
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOISY, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def version_line(prog, spillbench=DEFAULT_SPILLBENCH):
    """`PROG (buffile) X.Y.Z`: the version of the spillbench it drives (its first line), which
    is the version of the tree or package both come from; `unknown` without one."""
    import subprocess
    try:
        out = subprocess.run([spillbench, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.split()
        ver = out[2] if len(out) > 2 and out[1] == "(buffile)" else "unknown"
    except (OSError, subprocess.SubprocessError):
        ver = "unknown"
    return f"{prog} (buffile) {ver}"


class _Version(argparse.Action):
    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version (that of the spillbench it runs) and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line(parser.prog))
        parser.exit(EXIT_OK)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error and exit status 2, and --version."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.add_argument("--version", action=_Version)

    def error(self, message):
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)

    def add_run_flags(self):
        """The flags of where and how spillbench runs, common to both tools."""
        self.add_argument("--spillbench", default=DEFAULT_SPILLBENCH,
                          help="spillbench binary (default build/tpch/exec/spillbench, else the "
                               "one on PATH)")
        self.add_argument("--data-dir", default="",
                          help="table directory (default ./tpch-data/sf<SF>)")
        self.add_argument("--temp-dir", default="",
                          help="parent of spill directories (default $TMPDIR or /tmp)")
        self.add_argument("--report-only", action="store_true",
                          help="run nothing; write the report from the cached runs")
        self.add_argument("--dry-run", action="store_true",
                          help="list the runs and whether each is cached, run nothing")
        self.add_argument("--allow-noisy", action="store_true",
                          help="exit 0 even when a run's control interval is wider than +-5%%")


PATH_FLAGS = {"--spillbench": "<spillbench>", "--data-dir": "<data-dir>",
              "--temp-dir": "<temp-dir>"}


def record_command(out_dir, script, argv, path_flags):
    """DIR/command.txt: this invocation, paths shown relative to the repository or as
    placeholders."""
    os.makedirs(out_dir, exist_ok=True)
    shown = machine.shown_args(list(argv), {**PATH_FLAGS, **path_flags})
    with open(os.path.join(out_dir, "command.txt"), "w", encoding="utf-8") as f:   # <x> unquoted
        f.write(" ".join(a if "<" in a else shlex.quote(a) for a in [script] + shown) + "\n")


def run(prog, out_dir, runs, args, data_dir, temp_dir):
    """Run what is not cached; return the failed (run, error) list, or None when
    interrupted (after saying how to resume)."""
    try:
        return runner.run_all(args.spillbench, runs, out_dir, data_dir, temp_dir)
    except KeyboardInterrupt:
        done = sum(runner.is_done(out_dir, r) for r in runs)
        print(f"{prog}: interrupted; {done} of {len(runs)} runs cached, run the same command "
              "again to resume", file=sys.stderr)
        return None


def usable_spillbench(prog, path):
    if os.access(path, os.X_OK):
        return True
    print(f"{prog}: spillbench not found at {path} (--spillbench)", file=sys.stderr)
    return False


def exit_status(prog, failed, missing, found, allow_noisy):
    """Say what went wrong on stderr and return the exit status."""
    noisy = [res.run.key for res in found if res.noisy()]
    if failed or missing:
        print(f"{prog}: {len(failed)} failed, {len(missing)} missing runs", file=sys.stderr)
        return EXIT_FAILED
    if noisy:
        print(f"{prog}: {'warning: ' if allow_noisy else ''}control interval wider than +-5% "
              f"in {', '.join(noisy)} (see the report)", file=sys.stderr)
        return EXIT_OK if allow_noisy else EXIT_NOISY
    return EXIT_OK

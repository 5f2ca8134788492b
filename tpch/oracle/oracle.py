#!/usr/bin/env python3
"""SQLite oracle for the TPC-H executor: loads the generator's .tbl files into SQLite, runs
the translated standard queries, writes the oracle's own qN.tsv files and compares the
executor's qN.tsv files with them (rules in oracle_compare.py).

The last line printed is always "N passed, M failed"; the exit status is 0 only if every
selected query agreed, 1 if any differed or could not be checked, 2 for bad flags.
"""

import argparse
import os
import sys

# The oracle runs from the source tree; keep it free of __pycache__ directories.
sys.dont_write_bytecode = True

import oracle_compare  # noqa: E402 (must follow the line above)
import oracle_load  # noqa: E402
import oracle_queries  # noqa: E402

ALL_QUERIES = list(range(1, 23))
MAX_PROBLEMS_SHOWN = 8


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("oracle.py: %s (see --help)\n" % message)
        sys.exit(2)


def _query_list(text):
    if text == "all":
        return ALL_QUERIES
    chosen = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            chosen += range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError("expected 'all' or numbers and ranges like 1,3,5-7") from None
    if not chosen or any(q not in ALL_QUERIES for q in chosen):
        raise argparse.ArgumentTypeError("queries are numbered 1 to 22")
    return sorted(set(chosen))


def _parse(argv):
    p = _Parser(description="Check the executor's TPC-H results against SQLite.")
    p.add_argument("--self-test", action="store_true",
                   help="test the comparator and loader on built-in data, then exit")
    p.add_argument("--tbl-dir", help="directory with the generator's <table>.tbl files")
    p.add_argument("--results-dir", help="directory with the executor's qN.tsv files")
    p.add_argument("--queries", type=_query_list, default=ALL_QUERIES,
                   help="'all' (default) or a list like 1,3,5-7")
    p.add_argument("--db", help="SQLite cache of the loaded tables "
                   "(default: TBL_DIR/oracle.sqlite3; rebuilt when the .tbl files change)")
    p.add_argument("--oracle-dir", help="where the oracle writes its own qN.tsv "
                   "(default: TBL_DIR/oracle-results)")
    p.add_argument("--sqlite3", default="sqlite3", help="the sqlite3 shell used to load")
    args = p.parse_args(argv)
    if not args.self_test:
        if not args.tbl_dir or not args.results_dir:
            p.error("--tbl-dir and --results-dir are required")
        if not os.path.isdir(args.tbl_dir):
            p.error("--tbl-dir %s is not a directory" % args.tbl_dir)
        if not os.path.isdir(args.results_dir):
            p.error("--results-dir %s is not a directory" % args.results_dir)
    return args


def _check_query(con, number, results_dir, oracle_dir):
    """Runs one query; returns (row count, problems, notes)."""
    query = oracle_queries.load_query(number)
    names, expected_all = oracle_queries.run(con, query)
    expected = expected_all if query.limit is None else expected_all[:query.limit]
    oracle_compare.write_tsv(os.path.join(oracle_dir, "q%d.tsv" % number), expected)
    path = os.path.join(results_dir, "q%d.tsv" % number)
    try:
        got = oracle_compare.read_tsv(path)
    except FileNotFoundError:
        return len(expected), ["the executor wrote no %s" % path], []
    except (OSError, UnicodeDecodeError) as e:
        return len(expected), ["cannot read the executor's result %s: %s" % (path, e)], []
    problems = oracle_compare.compare(query.kinds, query.order_keys, query.limit,
                                      expected_all, got, names)
    notes = [] if problems else [
        "note: row %d %s is %s, the oracle's %s (within tolerance)" % loose
        for loose in oracle_compare.loose_fields(query.kinds, names, expected, got)]
    return len(expected), problems, notes


def _report(number, rows, problems, notes):
    if problems:
        print("q%d: DIFFERS (oracle has %d rows)" % (number, rows))
    else:
        print("q%d: ok (%d rows)" % (number, rows))
    lines = problems or notes
    for line in lines[:MAX_PROBLEMS_SHOWN]:
        print("  " + line)
    if len(lines) > MAX_PROBLEMS_SHOWN:
        print("  ... and %d more" % (len(lines) - MAX_PROBLEMS_SHOWN))


def run(args):
    db = args.db or os.path.join(args.tbl_dir, "oracle.sqlite3")
    oracle_dir = args.oracle_dir or os.path.join(args.tbl_dir, "oracle-results")
    try:
        if oracle_load.load(args.tbl_dir, db, args.sqlite3):
            print("loaded %s into %s" % (args.tbl_dir, db))
        os.makedirs(oracle_dir, exist_ok=True)
    except (oracle_load.LoadError, OSError) as e:
        print("oracle.py: %s" % e, file=sys.stderr)
        print("0 passed, %d failed" % len(args.queries))
        return 1
    passed = failed = 0
    con = oracle_queries.connect(db)
    try:
        for number in args.queries:
            try:
                rows, problems, notes = _check_query(con, number, args.results_dir, oracle_dir)
            except (oracle_queries.QueryError, OSError) as e:
                rows, problems, notes = 0, ["the oracle could not run it: %s" % e], []
            _report(number, rows, problems, notes)
            passed += not problems
            failed += bool(problems)
    finally:
        con.close()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def main(argv):
    args = _parse(argv)
    if args.self_test:
        import oracle_selftest
        return oracle_selftest.main()
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

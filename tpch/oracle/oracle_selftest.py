"""Self-test of the oracle (oracle.py --self-test): proves that the comparator rejects a
changed value, a missing row, an extra row and a wrong order while accepting the freedoms
results_format.md grants (tolerance, ties, a LIMIT cutting a tie), and that the loader and
all 22 translated queries work on a tiny hand-made data set with known answers.
Each check is independent; the test fails if any check fails.
"""

import os
import sqlite3
import tempfile

import oracle_compare
import oracle_load
import oracle_queries

# Q3-like shape: int key, num revenue (order key, descending), str date.
KINDS = ["int", "num", "str"]
ORDER = [1]
ROWS = [["7", "300.0000", "1995-01-02"],
        ["5", "200.0000", "1995-01-01"],
        ["9", "200.0000", "1995-01-03"],
        ["3", "100.0000", "1995-01-04"]]


def _differs(got, kinds=KINDS, order=ORDER, limit=None, expected=ROWS):
    return bool(oracle_compare.compare(kinds, order, limit, expected, got))


def _swap(rows, i, j):
    rows = [list(r) for r in rows]
    rows[i], rows[j] = rows[j], rows[i]
    return rows


def _with(rows, i, col, value):
    rows = [list(r) for r in rows]
    rows[i][col] = value
    return rows


def comparator_checks():
    return [
        ("identical rows agree", not _differs(ROWS)),
        ("a changed numeric value differs", _differs(_with(ROWS, 3, 1, "100.0200"))),
        ("a value within tolerance agrees", not _differs(_with(ROWS, 3, 1, "100.0050"))),
        ("relative tolerance scales with the value",
         not _differs(_with(ROWS, 0, 1, "300.0100"))
         and _differs(_with(ROWS, 0, 1, "300.0200"))),
        ("a changed string differs", _differs(_with(ROWS, 0, 2, "1995-01-12"))),
        ("a changed integer differs", _differs(_with(ROWS, 0, 0, "8"))),
        ("an integer printed as a decimal differs", _differs(_with(ROWS, 0, 0, "7.00"))),
        ("a missing row differs", _differs(ROWS[:2] + ROWS[3:])),
        ("a missing last row differs", _differs(ROWS[:3])),
        ("an extra row differs", _differs(ROWS + [["1", "50.0000", "1995-01-05"]])),
        ("a duplicated row in place of another differs",
         _differs([ROWS[0], ROWS[1], ROWS[1], ROWS[3]])),
        ("a wrong order differs", _differs(_swap(ROWS, 0, 3))),
        ("the wrong-order report says only the order differs",
         "only their order differs" in (oracle_compare.compare(KINDS, ORDER, None, ROWS,
                                                                _swap(ROWS, 0, 1)) or [""])[0]),
        ("rows tied on the ORDER BY may come in any order", not _differs(_swap(ROWS, 1, 2))),
        ("without ORDER BY any order agrees", not _differs(_swap(ROWS, 0, 3), order=[])),
        ("without ORDER BY a changed value still differs",
         _differs(_with(ROWS, 2, 1, "201.0000"), order=[])),
        ("a row with a field too few differs", _differs([ROWS[0][:2]] + ROWS[1:])),
        ("a LIMIT cutting a tie accepts either tied row",
         not _differs(ROWS[:2], limit=2) and not _differs([ROWS[0], ROWS[2]], limit=2)),
        ("a LIMIT cutting a tie still rejects a row from outside it",
         _differs([ROWS[0], ROWS[3]], limit=2)),
        ("a gap above a printed digit but within tolerance is noted",
         oracle_compare.loose_fields(KINDS, ["k", "v", "d"], ROWS, _with(ROWS, 3, 1, "100.0050"))
         == [(4, "v", "100.0000", "100.0050")]
         and not oracle_compare.loose_fields(KINDS, ["k", "v", "d"], ROWS, ROWS)),
        ("a LIMIT that cuts no tie still checks the row",
         _differs([ROWS[0], _with(ROWS, 1, 0, "6")[1], ROWS[2]], limit=3)),
    ]


def _tsv_roundtrip_check(tmp):
    path = os.path.join(tmp, "q.tsv")
    rows = [["a", "", "1.00"], [""]]
    oracle_compare.write_tsv(path, rows)
    empty = os.path.join(tmp, "empty.tsv")
    oracle_compare.write_tsv(empty, [])
    return [("result files round-trip, empty fields and empty results included",
             oracle_compare.read_tsv(path) == rows and oracle_compare.read_tsv(empty) == [])]


# The tiny data set: every table, enough rows for the known answers below.
TINY = {
    "region": ["0|AFRICA|r0", "1|AMERICA|r1", "2|ASIA|r2", "3|EUROPE|r3", "4|MIDDLE EAST|r4"],
    "nation": ["2|BRAZIL|1|n2", "3|CANADA|1|n3", "6|FRANCE|3|n6", "7|GERMANY|3|n7",
               "20|SAUDI ARABIA|4|n20", "8|INDIA|2|n8"],
    "part": ["1|forest green navy|Manufacturer#1|Brand#23|PROMO BRUSHED BRASS|15|MED BOX|901.00|p1",
             "2|lace green|Manufacturer#2|Brand#12|ECONOMY ANODIZED STEEL|3|SM CASE|902.00|p2"],
    "supplier": ["1|Supplier#000000001|addr one|7|17-123-456-7890|1000.00|Customer x Complaints",
                 "2|Supplier#000000002|\"two\" addr|3|13-123-456-7890|-5.50|customer x complaints"],
    "partsupp": ["1|1|100|10.00|ps", "1|2|200|20.00|ps", "2|1|300|30.00|ps", "2|2|400|40.00|ps"],
    "customer": ["1|Customer#000000001|c addr|6|13-111-222-3333|500.00|BUILDING|c1",
                 "2|Customer#000000002|c addr|2|31-111-222-3333|700.00|MACHINERY|c2"],
    "orders": ["1|1|F|600.00|1994-02-01|1-URGENT|Clerk#000000001|0|special requests",
               "2|1|F|100.00|1995-03-01|2-HIGH|Clerk#000000001|0|o2"],
    "lineitem": [
        "1|1|1|1|10|100.00|0.07|0.00|R|F|1994-03-01|1994-03-05|1994-03-10|DELIVER IN PERSON|AIR|l",
        "1|1|2|2|10|200.00|0.05|0.01|R|F|1994-03-01|1994-03-05|1994-03-10|NONE|MAIL|l",
        "1|2|1|3|10|300.00|0.08|0.02|A|F|1994-03-01|1994-03-05|1994-03-10|NONE|SHIP|l",
        "2|2|2|1|5|50.00|0.00|0.00|N|O|1995-03-20|1995-03-25|1995-03-30|NONE|AIR|l"],
}
LINES_1998 = 4  # every lineitem ships before 1998-09-02


def _write_tiny(tbl_dir, broken_table=None):
    os.makedirs(tbl_dir, exist_ok=True)
    for table, lines in TINY.items():
        with open(os.path.join(tbl_dir, table + ".tbl"), "w", encoding="utf-8") as f:
            for n, line in enumerate(lines):
                end = "" if table == broken_table and n == 0 else "|"
                f.write(line + end + "\n")


def _query(con, number):
    return oracle_queries.run(con, oracle_queries.load_query(number))[1]


def _load_fails(tmp, name, broken_table):
    tbl_dir = os.path.join(tmp, name)
    _write_tiny(tbl_dir, broken_table)
    try:
        oracle_load.load(tbl_dir, os.path.join(tbl_dir, "o.sqlite3"))
    except oracle_load.LoadError:
        return not os.path.exists(os.path.join(tbl_dir, "o.sqlite3"))
    return False


def loader_checks(tmp):
    tbl_dir = os.path.join(tmp, "tiny")
    db = os.path.join(tbl_dir, "o.sqlite3")
    _write_tiny(tbl_dir)
    built = oracle_load.load(tbl_dir, db)
    reused = not oracle_load.load(tbl_dir, db)
    with open(os.path.join(tbl_dir, "orders.tbl"), "a", encoding="utf-8") as f:
        f.write("3|1|O|1.00|1996-01-01|5-LOW|Clerk#000000001|0|o3|\n")
    rebuilt = oracle_load.load(tbl_dir, db)
    con = oracle_queries.connect(db)
    try:
        runs = {}
        for number in range(1, 23):
            try:
                runs[number] = _query(con, number)
            except oracle_queries.QueryError as e:
                runs[number] = e
        failing = [n for n, r in runs.items() if isinstance(r, Exception)]
        like = con.execute("select count(*) from supplier "
                           "where s_comment like '%Customer%Complaints%'").fetchone()[0]
        quoted = con.execute("select s_address from supplier where s_suppkey = 2").fetchone()[0]
        columns = [r[1] for r in con.execute("pragma table_info(lineitem)")]
    finally:
        con.close()
    ok = not failing
    return [
        ("the loader builds the cache, reuses it, and rebuilds it when a file changes",
         built and reused and rebuilt),
        ("the loader keeps '\"' verbatim and drops the trailing empty field",
         quoted == '"two" addr' and "tbl_end" not in columns and len(columns) == 16),
        ("the loader rejects a line without its trailing '|' and leaves no cache",
         _load_fails(tmp, "broken", "nation")),
        ("all 22 queries run (failing: %s)" % (failing or "none"), ok),
        ("LIKE is case-sensitive as in PostgreSQL", like == 1),
        ("Q1 counts every line shipped by 1998-09-02",
         ok and sum(int(r[-1]) for r in runs[1]) == LINES_1998),
        ("Q6 keeps l_discount = 0.07 (the 0.05..0.07 translation)",
         ok and runs[6] == [["17.0000"]]),
        ("Q13 counts the customers without orders", ok and ["0", "1"] in runs[13]),
        ("Q16 leaves out the supplier with 'Customer...Complaints'",
         ok and runs[16] == [["Brand#12", "ECONOMY ANODIZED STEEL", "3", "1"]]),
        ("Q22 finds the customer with no orders above the average balance",
         ok and runs[22] == [["31", "1", "700.0000"]]),
    ]


def main():
    with tempfile.TemporaryDirectory(prefix="oracle-selftest-") as tmp:
        try:
            checks = comparator_checks() + _tsv_roundtrip_check(tmp) + loader_checks(tmp)
        except (oracle_load.LoadError, sqlite3.Error, OSError) as e:
            print("self-test: could not run: %s" % e)
            return 1
    failed = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print("%s: %s" % ("ok  " if ok else "FAIL", name))
    print("self-test: %d passed, %d failed" % (len(checks) - len(failed), len(failed)))
    return 1 if failed else 0

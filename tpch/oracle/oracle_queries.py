"""Runs the SQLite translations of the TPC-H queries and formats their rows.

Each sql/qN.sql opens with comment lines that tell the oracle how to read its result:
  -- columns: <kind> ...     one kind per output column, in select-list order:
                             int (digits, exact), str (text or date, exact),
                             dec (decimal from data, 2 places), num (computed, 4 places)
  -- order-keys: <k> ...     1-based output columns of the ORDER BY (empty: no ORDER BY)
Invariants: the query runs with its trailing LIMIT removed, so the caller sees every row
that could tie with the last one kept; rows are formatted in the results format of
docs/oracle.md (spillbench's), a NULL as an empty field.
"""

import os
import re
import sqlite3

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql")
KINDS = ("int", "str", "dec", "num")
_LIMIT = re.compile(r"\blimit\s+(\d+)\s*;?\s*\Z", re.IGNORECASE)


class QueryError(Exception):
    """A query file is malformed or SQLite rejected it."""


class Query:
    """One translated query: its text without LIMIT, its limit, column kinds and order keys."""

    def __init__(self, number, text):
        self.number = number
        self.kinds = self._header(text, "columns")
        bad = [k for k in self.kinds if k not in KINDS]
        if not self.kinds or bad:
            raise QueryError("q%d: bad '-- columns:' line" % number)
        try:
            self.order_keys = [int(k) - 1 for k in self._header(text, "order-keys")]
        except ValueError:
            raise QueryError("q%d: bad '-- order-keys:' line" % number) from None
        if any(k < 0 or k >= len(self.kinds) for k in self.order_keys):
            raise QueryError("q%d: order key out of range" % number)
        m = _LIMIT.search(text)
        self.limit = int(m.group(1)) if m else None
        self.sql = text[:m.start()] if m else text.rstrip().rstrip(";")

    def _header(self, text, name):
        for line in text.splitlines():
            if line.startswith("-- %s:" % name):
                return line.split(":", 1)[1].split()
        raise QueryError("q%d: no '-- %s:' line" % (self.number, name))


def load_query(number, sql_dir=SQL_DIR):
    path = os.path.join(sql_dir, "q%d.sql" % number)
    try:
        with open(path, encoding="utf-8") as f:
            return Query(number, f.read())
    except OSError as e:
        raise QueryError("cannot read %s: %s" % (path, e)) from None


def connect(db_path):
    con = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
    # PostgreSQL's LIKE is case-sensitive; SQLite's is not unless told so.
    con.execute("pragma case_sensitive_like = on")
    return con


def _format(kind, value):
    if value is None:
        return ""
    if kind == "str":
        return str(value).rstrip(" ")
    if kind == "int":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise QueryError("integer column holds %r" % (value,))
        return str(value)
    return ("%.2f" if kind == "dec" else "%.4f") % value


def run(con, query):
    """(column names, every result row with LIMIT not applied as a list of formatted fields)."""
    try:
        cur = con.execute(query.sql)
        rows = cur.fetchall()
    except sqlite3.Error as e:
        raise QueryError("q%d: sqlite: %s" % (query.number, e)) from None
    if len(cur.description) != len(query.kinds):
        raise QueryError("q%d: %d columns but the header names %d"
                         % (query.number, len(cur.description), len(query.kinds)))
    try:
        formatted = [[_format(k, v) for k, v in zip(query.kinds, row)] for row in rows]
    except (QueryError, TypeError) as e:
        raise QueryError("q%d: %s" % (query.number, e)) from None
    return [d[0] for d in cur.description], formatted

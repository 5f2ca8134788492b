"""Loads the generator's .tbl files into a cached SQLite database with the sqlite3 CLI.

The parsing is left to Debian's sqlite3 shell (.import), so no code of ours sits between
the generator's text and the oracle's tables.  Invariants:
- the cache is used only if its recorded fingerprint (size and mtime of every .tbl file and
  the text of schema.sql) matches the current files; otherwise it is rebuilt;
- a cache is built under a temporary name and renamed into place only after every check
  passed, so a killed or failed load never leaves a cache that looks valid;
- a load passes only if every line of every file became one row with exactly the standard
  fields (the trailing '|' gives an empty tbl_end on every row, which is then dropped).
"""

import hashlib
import os
import sqlite3
import subprocess

TABLES = ("region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem")
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.sql")


class LoadError(Exception):
    """The .tbl files could not be loaded faithfully; the message says why."""


def _fingerprint(tbl_dir):
    with open(SCHEMA_PATH, "rb") as f:
        parts = ["schema " + hashlib.sha256(f.read()).hexdigest()]
    for table in TABLES:
        path = os.path.join(tbl_dir, table + ".tbl")
        try:
            st = os.stat(path)
        except OSError:
            raise LoadError("missing table file %s" % path) from None
        parts.append("%s %d %d" % (table, st.st_size, st.st_mtime_ns))
    return "\n".join(parts)


def _cached_fingerprint(db_path):
    if not os.path.exists(db_path):
        return None
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
        try:
            row = con.execute("select fingerprint from oracle_source").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def _count_lines(path):
    lines = 0
    last = b"\n"
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (0 if last == b"\n" else 1)


def _import_with_cli(sqlite3_cli, db_path, tbl_dir):
    # ascii mode reads fields verbatim: list/csv mode would treat a '"' as CSV quoting.
    script = [".bail on", '.read "%s"' % SCHEMA_PATH, ".mode ascii", '.separator "|" "\\n"']
    for table in TABLES:
        path = os.path.join(tbl_dir, table + ".tbl")
        if '"' in path or '"' in SCHEMA_PATH:
            raise LoadError("cannot quote path %s for the sqlite3 shell" % path)
        script.append('.import "%s" %s' % (path, table))
    try:
        proc = subprocess.run([sqlite3_cli, db_path], input="\n".join(script) + "\n",
                              capture_output=True, text=True, check=False)
    except OSError as e:
        raise LoadError("cannot run %s: %s" % (sqlite3_cli, e)) from None
    complaints = (proc.stderr + proc.stdout).strip()
    if proc.returncode != 0 or complaints:
        first = complaints.splitlines()[:5] if complaints else ["exit status %d" % proc.returncode]
        raise LoadError("sqlite3 .import failed: " + " / ".join(first))


def _check_and_seal(db_path, tbl_dir, fingerprint):
    con = sqlite3.connect(db_path)
    try:
        for table in TABLES:
            path = os.path.join(tbl_dir, table + ".tbl")
            rows = con.execute("select count(*) from %s" % table).fetchone()[0]
            lines = _count_lines(path)
            if rows != lines:
                raise LoadError("%s: %d lines but %d rows loaded" % (path, lines, rows))
            bad = con.execute("select count(*) from %s where tbl_end is not ''" % table).fetchone()[0]
            if bad:
                raise LoadError("%s: %d lines do not have exactly the standard fields, each "
                                "followed by '|'" % (path, bad))
            con.execute("alter table %s drop column tbl_end" % table)
        con.execute("create table oracle_source (fingerprint text not null)")
        con.execute("insert into oracle_source values (?)", (fingerprint,))
        con.commit()
        con.execute("analyze")
    finally:
        con.close()


def load(tbl_dir, db_path, sqlite3_cli="sqlite3"):
    """Make db_path hold the tables of tbl_dir; returns True if it was (re)built."""
    fingerprint = _fingerprint(tbl_dir)
    if _cached_fingerprint(db_path) == fingerprint:
        return False
    tmp_path = db_path + ".tmp"
    if os.path.exists(tmp_path):
        os.remove(tmp_path)
    try:
        _import_with_cli(sqlite3_cli, tmp_path, tbl_dir)
        _check_and_seal(tmp_path, tbl_dir, fingerprint)
    except sqlite3.Error as e:
        os.remove(tmp_path)
        raise LoadError("checking the loaded tables: %s" % e) from None
    except LoadError:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        raise
    os.replace(tmp_path, db_path)
    return True

"""Tests of templog.py, the temp-file lines of the server logs pg-hook.sh judges by:
a log with one line of each kind, counted by hand (the same counts the parts' awk gave)."""

import contextlib
import io
import os
import tempfile
import unittest

import templog

PRE = "2026-12-05 00:00:00.001 UTC [100] pg_regress/join "
LOG = "\n".join([
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp100.0", size 4096, '
          'logical size 16384, compression lz4',
    PRE + "STATEMENT:  select 1;",
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp101.0.fileset/compressed/i3of8.p0", '
          'size 1000, logical size 5000, compression lz4',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp102.1.fileset/compressed/0", '
          'size 2000, logical size 3000, compression lz4, encrypted',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp103.2.fileset/compressed/'
          '16394-743.changes", size 10, logical size 30, compression zstd',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp104.3.fileset/compressed/weird", '
          'size 7, logical size 9, compression lz4',
    "2026-12-05 00:00:00.007 UTC [105] LOG:  temporary file: path "
    '"base/pgsql_tmp/pgsql_tmp105.0", size 123456',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp106.0.fileset/odd", size 5, '
          'logical size 6, compression lz4',
    "2026-12-05 00:00:00.009 UTC [107] LOG:  temporary file compression auto: blocks written "
    "none 1, lz4 2, zstd 0, gzip 0, probing 0.5 ms",
]) + "\n"

# pg_buffile's lines: "method" for a private file; a FileSet file <name>.bf is logged by
# stock's code when it is deleted, a line per segment <name>.bf.N, beside the marker
# libbuffile leaves for a file appended onto another
HOOK_LOG = "\n".join([
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp200.0", size 100, '
          'logical size 400, method zstd',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp201.0.fileset/i1of16.p0.bf.0", '
          'size 70',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp201.0.fileset/i1of16.p0.bf.1", '
          'size 30',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp202.0.fileset/0.bf.0", '
          'size 20',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp202.0.fileset/1.bf.consumed", '
          'size 0',
    PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp203.0", size 5, '
          'logical size 9, method lz4, encrypted',
]) + "\n"


class TempLog(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.write(LOG)
        self.addCleanup(os.unlink, self.path)

    def run_main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = templog.main([*argv, self.path])
        return rc, out.getvalue()

    def test_lines(self):
        files = templog.parse(LOG)
        self.assertEqual(len(files), 7)
        self.assertEqual((files[0].size, files[0].logical, files[0].codec), (4096, 16384, "lz4"))
        self.assertTrue(files[2].encrypted)
        self.assertEqual((files[5].logical, files[5].codec), (None, None))   # stock's

    def test_counts(self):
        c = templog.count([self.path])
        # private: pgsql_tmp100.0; shared: the four under compressed/; not through the
        # library: stock's line and the library line outside compressed/
        self.assertEqual((c.private, c.shared, c.other), (1, 4, 2))
        self.assertEqual((c.logical, c.physical), (16384 + 5000 + 3000 + 30 + 9 + 6,
                                                   4096 + 1000 + 2000 + 10 + 7 + 5))
        self.assertEqual(c.codecs, {"lz4": 5, "zstd": 1})
        self.assertEqual(c.kinds, {"hash": 1, "sort": 1, "logrep": 1, "other": 1})
        self.assertEqual(c.encrypted, 1)
        self.assertEqual(c.describe(), "temp files: 1 private, 4 shared (FileSet), 2 not through "
                         "libbuffile; logical 24429 B, physical 7118 B (ratio 3.43), by codec: "
                         "lz4 5, zstd 1")

    def test_pgstat_counts_every_file_and_byte(self):
        self.assertEqual(self.run_main("pgstat"), (0, "7 130574\n"))

    def test_checks(self):
        rc, out = self.run_main("check", "--codec=lz4", "--both", "--kinds=hash,sort")
        self.assertEqual(rc, 1)
        self.assertIn("2 temp files did not go through libbuffile", out)
        self.assertNotIn("not every temp file was written", out)   # lz4: 5 of 1 + 4
        self.assertNotIn("FileSet file of", out)
        rc, out = self.run_main("check", "--codec=zstd", "--kinds=hash,sort,logrep")
        self.assertIn("not every temp file was written with zstd", out)
        rc, out = self.run_main("check", "--smaller", "--shared")
        self.assertEqual(rc, 0, out)
        rc, out = self.run_main("check", "--encrypted")
        self.assertEqual(rc, 1)
        self.assertIn("encrypted: 1 of 5 files", out)
        rc, out = self.run_main("check", "--stock")
        self.assertIn("must all be stock's", out)

    def test_a_stock_log(self):
        with open(self.path, "w") as f:
            f.write(PRE + 'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp9.0", size 8192\n')
        self.assertEqual(self.run_main("check", "--stock")[0], 0)
        self.assertEqual(self.run_main("check", "--codec=lz4")[0], 1)

    def test_pg_buffile_lines(self):
        files = templog.parse(HOOK_LOG)
        self.assertEqual([(f.logical, f.codec) for f in files],
                         [(400, "zstd"), (None, None), (None, None), (None, None), (None, None),
                          (9, "lz4")])
        c = templog.Counts()
        for f in files:
            c.add(f)
        # segment 0 of a FileSet file is a file of ours whose codec the log does not say;
        # a later segment and the marker are neither files of ours nor ones that missed
        # the library
        self.assertEqual((c.private, c.shared, c.other), (2, 2, 0))
        self.assertEqual((c.unseen, c.segments, c.consumed), (2, 1, 1))
        self.assertEqual(c.kinds, {"hash": 1, "sort": 1, "logrep": 0, "other": 0})
        self.assertEqual(c.codecs, {"zstd": 1, "lz4": 1})
        fd, path = tempfile.mkstemp(suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.write(HOOK_LOG)
        self.addCleanup(os.unlink, path)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            # pg_stat_database counts every line, as stock's code reports them
            self.assertEqual(templog.main(["pgstat", path]), 0)
            self.assertEqual(templog.main(["check", "--both", "--kinds=hash,sort", path]), 0)
            # the files whose codec is logged must have it; encryption likewise
            self.assertEqual(templog.main(["check", "--codec=zstd", path]), 1)
            self.assertEqual(templog.main(["check", "--encrypted", path]), 1)
        self.assertEqual(out.getvalue().splitlines()[0], "6 225")
        self.assertIn("not every temp file was written with zstd", out.getvalue())
        self.assertIn("encrypted: 1 of 2 files", out.getvalue())
        # the sizes are of the files whose line gives a logical size, not of the FileSet's
        self.assertIn("logical 409 B, physical 105 B of the 2 with a logical size logged "
                      "(ratio 3.90)", out.getvalue())


if __name__ == "__main__":
    unittest.main()

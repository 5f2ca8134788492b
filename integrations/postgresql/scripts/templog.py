#!/usr/bin/python3
"""The temp-file lines of PostgreSQL server logs (log_temp_files = 0), counted and judged:
read by pg-hook.sh (its extension part and the parts of pg-test/).

A line is stock's, "temporary file: path "P", size N", or the patched server's,
"temporary file: path "P", size N, logical size L, compression C[, encrypted]". A file that
went through the library is *private* (pgsql_tmp<pid>.<n>) or *shared* (a FileSet file,
under <fileset>/compressed/); any other line is a file that did not go through it (stock's,
or a library line outside both). Shared files are told apart by the subsystem that names
them: hash (a parallel hash join's sharedtuplestore, i3of8.p0), sort (a parallel sort's
worker tape, 0), logrep (a streamed transaction, 16394-743.changes) or other.

pg_buffile (the extension over the hook) writes "method C" where the retired series wrote
"compression C"; its FileSet files are <fileset>/<name>.bf, beside a marker that stock's
FileSetCreate() made. When the FileSet is deleted, stock's code logs (and counts in
pg_stat_database) what it finds in the directory: <name>.bf (size 0) and <name>.bf.0
(the file's bytes). Those lines are counted apart, as "stock's lines at the FileSet's
deletion", for pgstat, and not as files that did not go through the library.

    templog.py count LOG...           what the logs hold, in two lines
    templog.py pgstat LOG...          "FILES BYTES" as pg_stat_database counts them
    templog.py check [--stock | --codec=C] [--both] [--shared] [--smaller]
                     [--kinds=hash,sort] [--encrypted] LOG...
        count, then what must hold; exit 1, saying what does not, otherwise
"""

import argparse
import re
import sys
from dataclasses import dataclass, field

# The line's text after the log's prefix, whatever log_line_prefix is (pg_regress adds
# the application name, the TAP tests their own): stock's line, then the library's.
TEMP_LINE = re.compile(r'LOG:  temporary file: path "([^"]*)", size (\d+)'
                       r'(?:, logical size (\d+), (?:compression|method) (\w+)(, encrypted)?)?$')
SHARED = ".fileset/compressed/"
# pg_buffile's FileSet file, after the FileSet's directory; stock's line of a file of
# that name or of its segment .N (logical size None) is one of the FileSet's deletion
HOOK_SHARED = re.compile(r"\.fileset/([^/]+)\.bf$")
HOOK_DELETED = re.compile(r"\.fileset/[^/]+\.bf(\.\d+)?$")
KINDS = (("hash", re.compile(r"[io]\d+of\d+\.p\d+")),
         ("sort", re.compile(r"\d+")),
         ("logrep", re.compile(r"\d+-\d+\.(changes|subxacts)")))


@dataclass
class TempFile:
    path: str
    size: int
    logical: int = None   # None: a stock file
    codec: str = None
    encrypted: bool = False


def parse(text):
    """The temp files of a log's text, in order."""
    out = []
    for line in text.splitlines():
        m = TEMP_LINE.search(line)
        if m:
            out.append(TempFile(m.group(1), int(m.group(2)),
                                int(m.group(3)) if m.group(3) else None, m.group(4),
                                bool(m.group(5))))
    return out


def shared(path):
    """Whether path is a FileSet file of the library's (the series' or pg_buffile's)."""
    return SHARED in path or HOOK_SHARED.search(path) is not None


def kind(path):
    """The subsystem of a shared file: hash, sort, logrep or other."""
    m = HOOK_SHARED.search(path)
    name = m.group(1) if m else path.split(SHARED, 1)[1]
    return next((k for k, rx in KINDS if rx.fullmatch(name)), "other")


@dataclass
class Counts:
    private: int = 0
    shared: int = 0
    other: int = 0            # files that did not go through the library
    deleted: int = 0          # stock's lines at a pg_buffile FileSet's deletion
    logical: int = 0          # of the library's files
    physical: int = 0
    stock_bytes: int = 0      # of the others
    encrypted: int = 0
    codecs: dict = field(default_factory=dict)
    kinds: dict = field(default_factory=lambda: {"hash": 0, "sort": 0, "logrep": 0, "other": 0})

    def add(self, f):
        if f.logical is None and HOOK_DELETED.search(f.path):
            self.deleted += 1
            self.stock_bytes += f.size
            return
        if f.logical is None:
            self.other += 1
            self.stock_bytes += f.size
            return
        if shared(f.path):
            self.shared += 1
            self.kinds[kind(f.path)] += 1
        elif ".fileset/" in f.path:
            self.other += 1     # a library file outside the FileSet's files: never
        else:
            self.private += 1
        self.logical += f.logical
        self.physical += f.size
        self.codecs[f.codec] = self.codecs.get(f.codec, 0) + 1
        self.encrypted += f.encrypted

    @property
    def through(self):
        """Files that went through the library."""
        return self.private + self.shared

    def describe(self):
        ratio = f"{self.logical / self.physical:.2f}" if self.physical else "-"
        codecs = ", by codec: " + ", ".join(f"{c} {n}" for c, n in self.codecs.items()) \
            if self.codecs else ""
        deleted = f" (and {self.deleted} lines of stock's at their deletion)" \
            if self.deleted else ""
        return (f"temp files: {self.private} private, {self.shared} shared (FileSet){deleted}, "
                f"{self.other} not through libbuffile; logical {self.logical} B, physical "
                f"{self.physical} B (ratio {ratio}){codecs}")

    def describe_kinds(self):
        return "FileSet files by subsystem: " + " ".join(f"{k} {n}" for k, n in self.kinds.items())


def count(paths):
    c = Counts()
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            for tf in parse(f.read()):
                c.add(tf)
    return c


def problems(c, a):
    """What does not hold of counts c under check's flags a, in words."""
    out = []
    if a.stock and not (c.through == 0 and c.other > 0):
        out.append("under off, the suite's temp files must all be stock's, and some logged")
    if a.kinds:
        missing = [k for k in a.kinds.split(",") if not c.kinds.get(k)]
        if missing:
            out.append(f"no FileSet file of {', '.join(missing)} (expected files of "
                       f"{a.kinds.replace(',', ' and ')})")
    if a.both and not (c.private > 0 and c.shared > 0):
        out.append("the log does not show both private and FileSet temp files through libbuffile")
    if a.shared and not c.shared:
        out.append("no FileSet file went through libbuffile")
    if a.codec:
        if c.other:
            out.append(f"{c.other} temp files did not go through libbuffile")
        if c.codecs.get(a.codec, 0) != c.through:
            out.append(f"not every temp file was written with {a.codec}")
    if a.smaller and not c.physical < c.logical:
        out.append(f"{a.codec or 'the codec'} stored more bytes than it was given")
    if a.encrypted:
        print(f"encrypted: {c.encrypted} of {c.through} files")
        if c.encrypted != c.through:
            out.append("not every temp file was encrypted")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="templog.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("count", "pgstat", "check"):
        p = sub.add_parser(name)
        p.add_argument("logs", nargs="+")
        if name == "check":
            p.add_argument("--stock", action="store_true",
                           help="every file stock's (temp_file_compression = off), some logged")
            p.add_argument("--codec", help="every file through the library, with this codec")
            p.add_argument("--both", action="store_true", help="private and shared files")
            p.add_argument("--shared", action="store_true", help="shared files")
            p.add_argument("--smaller", action="store_true", help="physical < logical bytes")
            p.add_argument("--kinds", help="FileSet files of these subsystems (hash,sort,logrep)")
            p.add_argument("--encrypted", action="store_true", help="every library file encrypted")
    a = ap.parse_args(argv)
    c = count(a.logs)
    if a.cmd == "pgstat":
        print(c.through + c.other + c.deleted, c.physical + c.stock_bytes)
        return 0
    print(c.describe())
    if c.shared or a.cmd == "count":
        print(c.describe_kinds())
    if a.cmd == "count":
        return 0
    bad = problems(c, a)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

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

pg_buffile (the extension over the hook) writes "method C" where the retired series
wrote "compression C", for its private files. Its FileSet files are <fileset>/<name>.bf, stored
as segments <name>.bf.0, <name>.bf.1...: they are logged (and counted in pg_stat_database)
as stock logs its own FileSet files, when they are deleted, a stock line per segment. A
line of segment 0 is a FileSet file of pg_buffile whose codec, logical size and encryption
the log does not say ("unseen"); a later segment's is counted apart, as stock counts it.
So is a line of <name>.bf.consumed, the empty marker libbuffile leaves beside a file that
was appended onto a writable one (PostgreSQL appends onto read-only files only), which
stock's code would find when it deletes the FileSet's directory.

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
# pg_buffile's FileSet file, after the FileSet's directory: stock's line of its segment
# 0 (logical size None), of a later segment, of libbuffile's marker of an appended file
HOOK_SHARED = re.compile(r"\.fileset/([^/]+)\.bf\.0$")
HOOK_SEGMENT = re.compile(r"\.fileset/[^/]+\.bf\.[1-9]\d*$")
HOOK_CONSUMED = re.compile(r"\.fileset/[^/]+\.bf\.consumed$")
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
    unseen: int = 0           # pg_buffile's FileSet files (in shared): no codec logged
    segments: int = 0         # their later segments, each a line of stock's
    consumed: int = 0         # libbuffile's markers of appended files, each a line
    unseen_bytes: int = 0     # of those three
    logical: int = 0          # of the library's files
    physical: int = 0
    stock_bytes: int = 0      # of the others
    encrypted: int = 0
    codecs: dict = field(default_factory=dict)
    kinds: dict = field(default_factory=lambda: {"hash": 0, "sort": 0, "logrep": 0, "other": 0})

    def add(self, f):
        if f.logical is None and HOOK_SHARED.search(f.path):
            self.shared += 1
            self.unseen += 1
            self.kinds[kind(f.path)] += 1
            self.unseen_bytes += f.size
            return
        if f.logical is None and (HOOK_SEGMENT.search(f.path) or HOOK_CONSUMED.search(f.path)):
            if HOOK_SEGMENT.search(f.path):
                self.segments += 1
            else:
                self.consumed += 1
            self.unseen_bytes += f.size
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
        deleted = f" ({self.unseen} logged by stock's code at their deletion, with " \
            f"{self.segments} more segments and {self.consumed} markers of appended files)" \
            if self.unseen or self.segments or self.consumed else ""
        # pg_buffile's FileSet files log no logical size: the figures are of the others'
        # final sizes (not of the bytes written, rewrites included: pg_buffile_stats has
        # those, for every file)
        scope = f" of the {self.through - self.unseen} with a logical size logged" \
            if self.unseen else ""
        return (f"temp files: {self.private} private, {self.shared} shared (FileSet){deleted}, "
                f"{self.other} not through libbuffile; logical {self.logical} B, physical "
                f"{self.physical} B{scope} (ratio {ratio}){codecs}")

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
        if c.codecs.get(a.codec, 0) != c.through - c.unseen:
            out.append(f"not every temp file was written with {a.codec}")
    if a.smaller and not c.physical < c.logical:
        out.append(f"{a.codec or 'the codec'} stored more bytes than it was given")
    if a.encrypted:
        print(f"encrypted: {c.encrypted} of {c.through - c.unseen} files")
        if c.encrypted != c.through - c.unseen:
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
        print(c.through + c.other + c.segments + c.consumed,
              c.physical + c.stock_bytes + c.unseen_bytes)
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

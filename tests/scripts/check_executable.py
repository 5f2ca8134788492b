#!/usr/bin/env python3
"""Every script in the tree that starts with a #! line is executable.

The docs run the project's scripts by their path (scripts/run-tests.sh,
integrations/postgresql/scripts/pg-hook-wall.sh, ...); a script committed
without its executable bit works under `bash script` and in the author's
tree, and a fresh clone refuses it ("Permission denied").  Build trees,
git's own directory and the fetched engines' sources are not the
project's and are skipped.

Usage: check_executable.py ROOT      exit 1, naming each offender
       check_executable.py --self-test
"""
import os
import stat
import sys
import tempfile

SKIP_DIRS = {".git", "node_modules", "__pycache__"}


def skipped(name):
    return name in SKIP_DIRS or name.startswith("build") or name == "tpch-data"


def offenders(root):
    found = []
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not skipped(d))
        for name in sorted(files):
            path = os.path.join(top, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            try:
                with open(path, "rb") as f:
                    head = f.read(2)
            except OSError:
                continue
            if head == b"#!" and not os.access(path, os.X_OK):
                found.append(os.path.relpath(path, root))
    return found


def self_test():
    with tempfile.TemporaryDirectory() as d:
        def write(rel, text, mode):
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
            os.chmod(p, mode)
        write("a/run.sh", "#!/bin/sh\ntrue\n", 0o755)
        write("a/lib.sh", "# sourced, no #!\n", 0o644)
        write("build-x/gen.sh", "#!/bin/sh\n", 0o644)  # a build tree: skipped
        if offenders(d):
            print("self-test: flagged a good tree:", offenders(d))
            return 1
        write("b/tool.py", "#!/usr/bin/env python3\n", 0o644)
        if offenders(d) != ["b/tool.py"]:
            print("self-test: missed a script without its bit:", offenders(d))
            return 1
    print("self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print("usage: check_executable.py ROOT | --self-test", file=sys.stderr)
        return 2
    bad = offenders(argv[1])
    for rel in bad:
        print(f"{rel}: starts with #! but is not executable (git update-index --chmod=+x)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

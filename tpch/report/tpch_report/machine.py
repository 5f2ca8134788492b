"""Where the runs ran: CPU, cores, kernel, OS, library versions, buffile commit, temp
filesystem. Collected once when the first run into a directory starts (machine.json) so a
later --report-only on another machine does not misdescribe the numbers. Every probe
degrades to 'unknown'.

Invariant: nothing written here or shown in a report names an absolute path of the machine:
a path is shown relative to the repository when it lies inside it, else as a placeholder
(<data-dir>, <temp-dir>, ...), see shown_path.
"""

import json
import os
import platform
import subprocess

UNKNOWN = "unknown"
# The source tree: this package is its tpch/report/tpch_report (installed, the prefix above
# share/buffile/tpch_report, where no repository path is shown anyway).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def shown_path(path, placeholder):
    """path relative to the repository when it lies inside it, else the placeholder."""
    full = os.path.realpath(path)
    repo = os.path.realpath(REPO)
    if full == repo or full.startswith(repo + os.sep):
        return os.path.relpath(full, repo)
    return placeholder


def shown_args(argv, path_flags):
    """argv with the value of each --flag=PATH in path_flags ({flag: placeholder}) shown by
    shown_path; '--flag PATH' is shown the same way."""
    out, pending = [], None
    for a in argv:
        if pending:
            out.append(shown_path(a, pending))
            pending = None
            continue
        flag, eq, val = a.partition("=")
        if flag in path_flags and eq:
            out.append(f"{flag}={shown_path(val, path_flags[flag])}")
        else:
            out.append(a)
            pending = path_flags.get(a)
    return out


def _run(cmd, cwd=None):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _first_field(path, prefix):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip().strip('"') if ":" in line \
                        else line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return UNKNOWN


def source_dir_of(spillbench):
    """The source tree spillbench was built from, read from its build tree's CMakeCache."""
    d = os.path.dirname(os.path.abspath(spillbench))
    while d != os.path.dirname(d):
        cache = os.path.join(d, "CMakeCache.txt")
        if os.path.exists(cache):
            return _first_field(cache, "CMAKE_HOME_DIRECTORY:INTERNAL=").split("=")[-1]
        d = os.path.dirname(d)
    return UNKNOWN


def buffile_commit(src):
    """Short commit of the source tree (+'-dirty' with local changes), or the COMMIT file a
    `git archive` snapshot carries."""
    if src != UNKNOWN:
        head = _run(["git", "rev-parse", "--short", "HEAD"], cwd=src)
        if head:
            dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=src)
            return head + ("-dirty" if dirty else "")
        try:
            with open(os.path.join(src, "COMMIT"), encoding="utf-8") as f:
                return f.read().strip() + " (clean snapshot)"
        except OSError:
            pass
    return UNKNOWN


def collect(spillbench, temp_dir, data_dir):
    libs = _run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n",
                 "liblz4-1", "libzstd1", "zlib1g", "libjemalloc2"])
    fs = _run(["findmnt", "-n", "-T", temp_dir, "-o", "SOURCE,FSTYPE,OPTIONS"]).split()
    data_fs = _run(["findmnt", "-n", "-T", data_dir, "-o", "SOURCE"]) if os.path.exists(data_dir) \
        else ""
    mem_kb = _first_field("/proc/meminfo", "MemTotal").split()[0]
    try:
        import matplotlib
        mpl = matplotlib.__version__
    except ImportError:
        mpl = UNKNOWN
    return {
        "cpu": _first_field("/proc/cpuinfo", "model name"),
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem_kb) / 1024 / 1024, 1) if mem_kb.isdigit() else UNKNOWN,
        "kernel": platform.release(),
        "os": _first_field("/etc/os-release", "PRETTY_NAME="),
        "libraries": libs.splitlines() if libs else [UNKNOWN],
        "compiler": (_run(["gcc", "--version"]).splitlines() or [UNKNOWN])[0],
        "buffile_commit": buffile_commit(source_dir_of(spillbench)),
        "spillbench": shown_path(spillbench, "<spillbench>"),
        "temp_dir": shown_path(temp_dir, "<temp-dir>"),
        "temp_fs": " ".join(fs[1:]) or UNKNOWN,   # type and options, not the device path
        "data_dir": shown_path(data_dir, "<data-dir>"),
        "data_same_device": (data_fs == fs[0]) if fs and data_fs else UNKNOWN,
        "python": platform.python_version(),
        "matplotlib": mpl,
    }


def ensure(out_dir, spillbench, temp_dir, data_dir, fresh=False):
    """DIR/machine.json, collected now when it does not exist yet or when fresh (no run is
    cached, so an existing file describes runs that are gone)."""
    path = os.path.join(out_dir, "machine.json")
    try:
        with open(path, encoding="utf-8") as f:
            if not fresh:
                return json.load(f)
    except (OSError, ValueError):
        pass
    m = collect(spillbench, temp_dir, data_dir)
    os.makedirs(out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(m, f, indent=1)
    return m

"""Where the matrix ran: CPU, cores, kernel, OS, library versions, buffile commit, temp
filesystem. Collected once when a run starts (machine.json) so a later --report-only on
another machine does not misdescribe the numbers. Every probe degrades to 'unknown'.
"""

import os
import platform
import subprocess

UNKNOWN = "unknown"


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
    fs = _run(["findmnt", "-n", "-T", temp_dir, "-o", "SOURCE,FSTYPE,OPTIONS"])
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
        "spillbench": os.path.abspath(spillbench),
        "temp_dir": temp_dir,
        "temp_fs": " ".join(fs.split()) or UNKNOWN,
        "data_dir": data_dir,
        "data_same_device": (data_fs == fs.split()[0]) if fs and data_fs else UNKNOWN,
        "load_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "matplotlib": mpl,
    }

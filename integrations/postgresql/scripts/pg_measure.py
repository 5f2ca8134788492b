"""Measuring PostgreSQL runs for the benchmarks of pg-bench.sh (TPC-H) and
pg-bench-hashmatrix.sh (the hash-join matrix), beside this file: what one run is and what is
recorded of it, the configurations compared, the slow device, and the paired statistics.

A *configuration* is `stock` (the stock binary's server) or a value of the patched
server's `temp_file_compression` (`off` = PostgreSQL's own BufFile code, `none`, `lz4`,
`zstd:1`, `auto`, ... and any method a later library offers, such as `pglz`: the server's
check hook is the judge of a value, so a new method needs no change here).

A *run* is one or more psql sessions started together, each in a fresh connection running
one script. Recorded per run:
- time: per session the sum of psql's \\timing over its statements (execution and result
  transfer; connection start is not in it); the run's time is the longest session's;
- CPU time (user + system) of the sessions' backends and of their parallel workers, from
  /proc (method in `cpu_of_run`);
- temp files and bytes: pg_stat_database's deltas, checked against the run's log_temp_files
  lines (whose sizes they must sum to); logical bytes and codecs from those lines;
- on the slow device: the bytes and requests it served and its daemon's CPU time;
- each session's answer (a hash of its output).

The statistics, their wording and the order of configurations in a round are those of
every report of the project (tpch_report.stats: spillbench's tpch/exec/paired.c).
"""

import hashlib
import json
import os
import re
import subprocess
import time

import templog

CLK_TCK = os.sysconf("SC_CLK_TCK")
# The postmaster's long-lived children; every other child is a backend or a worker of a run.
AUX = ("checkpointer", "background writer", "walwriter", "autovacuum launcher",
       "logical replication launcher", "archiver", "logger", "stats collector", "startup")


def median(v):
    v = sorted(v)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


# --- configurations and devices -----------------------------------------------------
class Config:
    """`stock`, or a temp_file_compression value of the patched server."""

    def __init__(self, name):
        self.name = name
        self.server = "stock" if name == "stock" else "patched"
        # file names and report columns: zstd:level=1 and zstd:1 are zstd-1
        self.label = name.replace(":level=", "-").replace(":", "-")

    def gucs(self):
        return [] if self.server == "stock" else [f"temp_file_compression={self.name}"]


def parse_configs(s):
    cfgs = [Config(x) for x in s.split(",")]
    labels = [c.label for c in cfgs]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"--configs: '{s}' names a configuration twice")
    return cfgs


def config_set(cfgs):
    """The runs of one list of configurations are cached apart from another's: a round
    pairs the configurations that ran in it together, so adding one (pglz) starts new
    rounds for all rather than pairing it with runs made hours before."""
    return "+".join(c.label for c in cfgs)


class Device:
    """Where temp files go: `page` (the database's own directory: the page cache over the
    VM's disk) or `fuse:RATE` (the temp tablespace on slowfs at RATE)."""

    def __init__(self, spec):
        self.spec = spec
        if spec == "page":
            self.rate = None
            self.name = "page"
        else:
            m = re.fullmatch(r"fuse:(\d+)(MB|GB)", spec)
            if not m:
                raise SystemExit(f"--devices: '{spec}' is not page or fuse:RATE (e.g. fuse:200MB)")
            self.rate = m.group(1) + m.group(2)
            self.name = "fuse" + self.rate

    def gucs(self):
        return ["temp_tablespaces=slowtemp"] if self.rate else []

    def title(self):
        return ("page cache (temp files in the data directory's file system)" if not self.rate
                else f"slowfs at {self.rate}/s (temp tablespace on the FUSE device)")


# --- CPU time from /proc ---------------------------------------------------------------
def proc_stat(pid):
    """(state, ppid, utime + stime, cutime + cstime) in seconds, or None if gone."""
    try:
        s = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    f = s[s.rindex(")") + 2:].split()
    return f[0], int(f[1]), (int(f[11]) + int(f[12])) / CLK_TCK, (int(f[13]) + int(f[14])) / CLK_TCK


def parse_stat_text(s):
    f = s[s.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / CLK_TCK


def transient_children(pm):
    """Children of the postmaster that are not its long-lived processes: backends and
    parallel workers, alive or zombie (a zombie's times reach the postmaster's cutime only
    when it is reaped)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = proc_stat(d)
        if st is None or st[1] != pm:
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        if st[0] == "Z" or not any(("postgres: " + a) in cmd for a in AUX):
            out.append(int(d))
    return out


def wait_quiet(pm, timeout=60.0):
    """Wait until every backend and worker of the postmaster has exited and been reaped."""
    deadline = time.monotonic() + timeout
    while transient_children(pm):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# --- the slow device -------------------------------------------------------------------
class Slowfs:
    """slowfs mounted over a directory in place (its content stays), at one rate at a time;
    run by us in the foreground (-f) so that its pid, and so its CPU time, is known."""

    def __init__(self, binary, mnt, logdir):
        self.binary, self.mnt, self.logdir = binary, mnt, logdir
        self.proc = None
        self.rate = None

    def ensure(self, rate):
        if self.proc is not None and self.rate == rate and os.path.ismount(self.mnt):
            return
        self.unmount()
        if os.path.ismount(self.mnt):  # one a killed run left
            subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        err = open(os.path.join(self.logdir, "slowfs.err"), "a")
        self.proc = subprocess.Popen(
            [self.binary, self.mnt, self.mnt, "-f", f"--rate={rate}", "-o", "allow_other",
             "--stats-file=" + os.path.join(self.logdir, f"slowfs-{rate}.stats")],
            stderr=err)
        deadline = time.monotonic() + 10
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"slowfs did not mount {self.mnt} (see {err.name})")
            time.sleep(0.05)
        self.rate = rate

    def unmount(self):
        if self.proc is None:
            return
        for _ in range(100):  # busy while a server still has a temp file open
            if subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.proc, self.rate = None, None

    def stats(self):
        """The device's counters and its daemon's CPU seconds."""
        d = {}
        with open(os.path.join(self.mnt, ".slowfs-stats")) as f:
            for line in f:
                k, v = line.split()
                d[k] = int(v)
        st = proc_stat(self.proc.pid)
        d["daemon_cpu_s"] = st[2] if st else float("nan")
        return d


DEV_KEYS = ("read_bytes", "write_bytes", "read_requests", "write_requests", "read_wait_ns",
            "write_wait_ns", "daemon_cpu_s")


# --- servers and runs ------------------------------------------------------------------
class Server:
    def __init__(self, name, port, log, data):
        self.name, self.port, self.log, self.data = name, port, log, data

    def postmaster(self):
        return int(open(os.path.join(self.data, "postmaster.pid")).readline())


AUTO_RE = re.compile(r"\[(\d+)\] LOG:  temporary file compression auto: blocks written none (\d+), "
                     r"lz4 (\d+), zstd (\d+), zlib (\d+), probing ([\d.]+) ms\n"
                     r"(?:[^\n]*DETAIL:  Last decision: ([^\n]*))?")


class Runner:
    """Runs sessions on a server, one run at a time, and measures them."""

    def __init__(self, psql, sock, user, db, tmp, slowfs=None):
        self.psql_bin, self.sock, self.user, self.db, self.tmp = psql, sock, user, db, tmp
        self.slowfs = slowfs
        os.makedirs(tmp, exist_ok=True)

    def cmd(self, server, *args):
        return [self.psql_bin, "-X", "-q", "-h", self.sock, "-p", str(server.port), "-U",
                self.user, "-d", self.db] + list(args)

    def env(self, opts=None):
        e = dict(os.environ)
        e.pop("PGOPTIONS", None)
        if opts:
            e["PGOPTIONS"] = opts
        return e

    def psql(self, server, *args, opts=None, check=True):
        return subprocess.run(self.cmd(server, *args), capture_output=True, text=True,
                              env=self.env(opts), check=check)

    def stat(self, server):
        r = self.psql(server, "-At", "-F", " ", "-c", "select temp_files, temp_bytes from "
                      "pg_stat_database where datname = current_database()")
        f, b = r.stdout.split()
        return int(f), int(b)

    def script(self, base, body_file, pre=""):
        """A session's script: note the backend's pid and its CPU time so far (read by
        `\\!` from /proc before the query starts), then time body_file's statements."""
        pidf, statf, ansf, scr = (base + x for x in (".pid", ".stat", ".out", ".sql"))
        for p in (pidf, statf, ansf):
            if os.path.exists(p):
                os.unlink(p)
        with open(scr, "w") as f:
            f.write(f"\\set ON_ERROR_STOP 1\n\\o {pidf}\nselect pg_backend_pid();\n\\o\n"
                    f"\\! cat /proc/$(cat {pidf})/stat > {statf}\n{pre}"
                    f"\\o {ansf}\n\\timing on\n\\i {body_file}\n")
        return scr, pidf, statf, ansf

    def measure(self, server, scripts, opts, device, timeout_s, probe=None):
        """Run the scripts (from `script`) as concurrent sessions; a dict of the run.
        probe: a function read where the CPU baseline and end are read (its difference is
        the run's "probe")."""
        opts = opts + f" -c statement_timeout={timeout_s}s"
        pm = server.postmaster()
        f0, b0 = self.stat(server)
        # The stat connection's backend must be reaped before the CPU baseline is read,
        # and ours before its end is.
        wait_quiet(pm)
        dev0 = self.slowfs.stats() if device.rate else None
        pos = os.path.getsize(server.log)
        load = os.getloadavg()[0]
        c0 = proc_stat(pm)[3]
        p0 = probe() if probe else 0
        t0 = time.monotonic()
        procs = [subprocess.Popen(self.cmd(server, "-A", "-t", "-F", "|", "-f", s[0]),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=self.env(opts)) for s in scripts]
        outs = [p.communicate() for p in procs]
        wall = time.monotonic() - t0
        quiet = wait_quiet(pm)
        c1 = proc_stat(pm)[3]
        p1 = probe() if probe else 0
        dev1 = self.slowfs.stats() if device.rate else None
        res = {"opts": opts, "timeout_s": timeout_s, "wall_s": wall, "load1": load,
               "sessions": len(scripts), "rc": [p.returncode for p in procs]}
        errs = [e for p, (o, e) in zip(procs, outs) if p.returncode != 0]
        if not errs:
            res["status"] = "ok"
        elif any("statement timeout" in e for e in errs):
            res["status"] = "timeout"
        else:
            res["status"] = "error"
            res["error"] = errs[0].strip()[-500:]
        times = [sum(float(x) for x in re.findall(r"^Time: ([\d.]+) ms", o, re.M)) for o, _ in outs]
        res["ms"] = max(times)
        res["session_ms"] = times
        # CPU: everything the postmaster reaped in the window (our backends and their
        # workers, nothing else: wait_quiet) less what the backends had used before
        # their query started (connection start, the pid query).
        before = 0.0
        answers, rows = [], 0
        for scr, pidf, statf, ansf in scripts:
            try:
                before += parse_stat_text(open(statf).read())
            except (OSError, ValueError):
                res["cpu_before_missing"] = True
            if os.path.exists(ansf):
                data = open(ansf, "rb").read()
                answers.append(hashlib.sha256(data).hexdigest())
                rows += data.count(b"\n")
            else:
                answers.append(None)
        res["cpu_s"] = (c1 - c0 - before) if quiet else float("nan")
        res["cpu_whole_s"] = c1 - c0
        if probe:
            res["probe"] = p1 - p0
        res["answer"] = answers[0] if len(set(answers)) == 1 else "sessions differ"
        res["rows"] = rows // len(scripts)
        if dev0:
            res["device"] = {k: dev1[k] - dev0[k] for k in DEV_KEYS}
        # temp usage, once every backend has flushed its statistics (they have exited)
        deadline = time.monotonic() + 10
        while True:
            f1, b1 = self.stat(server)
            with open(server.log, "rb") as lf:
                lf.seek(pos)
                text = lf.read().decode("utf-8", "replace")
            files = templog.parse(text)
            lfiles, lphys = len(files), sum(f.size for f in files)
            if (f1 - f0, b1 - b0) == (lfiles, lphys) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        res["temp_files"], res["temp_bytes"] = f1 - f0, b1 - b0
        res["log_files"], res["log_bytes"] = lfiles, lphys
        res["log_logical"] = sum(f.size if f.logical is None else f.logical for f in files)
        res["stat_matches_log"] = (f1 - f0, b1 - b0) == (lfiles, lphys)
        codecs = {}
        for f in files:
            codecs[f.codec or "stock"] = codecs.get(f.codec or "stock", 0) + 1
        res["codecs"] = codecs
        autos = AUTO_RE.findall(text)
        if autos:
            res["auto_blocks"] = [sum(int(x[i]) for x in autos) for i in range(1, 5)]
            res["auto_probe_ms"] = sum(float(x[5]) for x in autos)
            res["auto_reasons"] = [x[6] for x in autos if x[6]]
        return res


def check_configs(runner, servers, cfgs):
    """Every configuration must be a value its server takes: one error line otherwise."""
    for c in cfgs:
        if c.server == "stock":
            continue
        r = runner.psql(servers["patched"], "-At", "-c",
                        f"set temp_file_compression = '{c.name}'", check=False)
        if r.returncode != 0:
            msg = " ".join(r.stderr.split())
            raise SystemExit(f"--configs: the server refuses temp_file_compression = '{c.name}': {msg}")


def scrub_paths(out, text):
    """A committed report must not name this machine's folders: the output folder becomes
    <out> and the checkout's own path becomes relative to it."""
    # this file is <checkout>/integrations/postgresql/scripts/pg_measure.py
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return text.replace(out, "<out>").replace(top + "/", "").replace(top, ".")


# --- a resumable cache of runs ---------------------------------------------------------
def save_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def load_run(path, opts, timeout_s):
    """A cached run, if it was made with these options and its status stands under this
    timeout (a run that timed out under a shorter one is run again)."""
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        return None
    if r.get("opts", "").split(" -c statement_timeout=")[0] != opts:
        return None
    if r.get("status") == "timeout" and r.get("timeout_s", 0) < timeout_s:
        return None
    return r


# --- CPU accounting checked against a CPU burner ------------------------------------------
CGROUP = "/sys/fs/cgroup/cpuacct"


def check_cpu(runner, server, outdir, device):
    """The CPU figure of a run against two independent measures, on a query that only
    burns CPU (md5 over a generated table), serial and with 2 workers:
    - a cgroup v1 cpuacct group holding the postmaster (so every backend and worker it
      forks from then on): cpuacct.usage in ns, over the same window as our
      cutime + cstime delta of the postmaster (whole backend lives both);
    - serial only: the backend's own utime + stime read from /proc at the end of the
      session by psql's \\!, less the same reading before the query (our `before`).
    Returns a list of dicts; raises nothing (a missing cgroup is reported)."""
    cg = os.path.join(CGROUP, f"pgbench-{server.port}")
    have_cg = os.path.isdir(CGROUP)
    pm = server.postmaster()
    if have_cg:
        os.makedirs(cg, exist_ok=True)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(pm))
    runner.psql(server, "-c", "create table if not exists cpuburn_2m as select g, md5(g::text) v "
                "from generate_series(1, 2000000) g", "-c", "alter table cpuburn_2m set (parallel_workers = 2)",
                "-c", "vacuum analyze cpuburn_2m")
    body = os.path.join(runner.tmp, "cpuburn.sql")
    with open(body, "w") as f:
        f.write("select count(*) from cpuburn_2m where md5(md5(md5(md5(md5(md5(md5(md5(v)))))))) < '8';\n")
    out = []
    try:
        for workers in (0, 2, 0, 2):
            base = os.path.join(runner.tmp, f"cpuburn-w{workers}")
            scr, pidf, statf, ansf = runner.script(base, body)
            # the backend's own CPU at the end of the session, for the serial check
            with open(scr, "a") as f:
                f.write(f"\\o\n\\! cat /proc/$(cat {pidf})/stat > {base}.end\n")
            opts = (f"-c max_parallel_workers_per_gather={workers} -c parallel_setup_cost=0 "
                    "-c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0")
            usage = (lambda: int(open(os.path.join(cg, "cpuacct.usage")).read()) / 1e9) if have_cg else None
            r = runner.measure(server, [(scr, pidf, statf, ansf)], opts, device, 600, probe=usage)
            e = {"workers": workers, "wall_s": r["ms"] / 1000, "cpu_s": r["cpu_s"],
                 "cpu_whole_s": r["cpu_whole_s"], "status": r["status"]}
            if have_cg:
                e["cgroup_whole_s"] = r["probe"]
            if workers == 0:
                e["backend_own_s"] = parse_stat_text(open(base + ".end").read()) - \
                    parse_stat_text(open(statf).read())
            out.append(e)
    finally:
        if have_cg:
            with open(os.path.join(CGROUP, "cgroup.procs"), "w") as f:
                f.write(str(pm))
            for _ in range(50):
                try:
                    os.rmdir(cg)
                    break
                except OSError:  # a child still in it exits first
                    time.sleep(0.1)
    save_json(os.path.join(outdir, "cpu-check.json"), out)
    return out


def cpu_check_lines(out):
    """Markdown of check_cpu's result."""
    if not out:
        return []
    L = ["| workers | wall s | our CPU s (query) | our CPU s (whole backend lives) | cgroup cpuacct s "
         "(same window) | backend's own /proc s (serial) |", "|---:|---:|---:|---:|---:|---:|"]
    for e in out:
        cg = f"{e['cgroup_whole_s']:.3f}" if "cgroup_whole_s" in e else "-"
        own = f"{e['backend_own_s']:.3f}" if "backend_own_s" in e else "-"
        L.append(f"| {e['workers']} | {e['wall_s']:.2f} | {e['cpu_s']:.3f} | {e['cpu_whole_s']:.3f} | "
                 f"{cg} | {own} |")
    return L

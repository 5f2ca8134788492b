"""The device the runners' temp files go to (pg-device.sh's --device), as the runs'
Python sees it: pg_hook_tpch.py and pg_hook_wall.py --matrix read the device before and
after each run and keep the difference in the run's line of the results file.

The device is described by the runner's device.json (pg-device.sh's dev_setup): its spec
("page", "slowfs:200MB", "cgroup:640MB"), and for slowfs the mount, the daemon's pid, the
rate and its validation, for cgroup the limit and each server's cgroup by port.

What a run's figures are (counters read before and after; every value a difference):
- every device: the postmaster's /proc/PID/io once the run's backend and workers are
  reaped (the kernel adds a reaped child's I/O to its parent's): read_bytes (what the
  server's processes read from the block device: page-cache misses), write_bytes (what they
  dirtied), cancelled_write_bytes (dirty pages dropped before write-back: temp files
  deleted while still in the page cache), rchar and wchar (bytes through read/write calls);
  disk_write_bytes = write_bytes - cancelled_write_bytes, what reached (or will reach) the
  disk;
- slowfs: the mount's .slowfs-stats (bytes and requests it served, the time its model held
  them) and the daemon's CPU seconds (not in the backends' CPU time);
- cgroup: the server's memory.failcnt (times its usage hit the limit) and, machine-wide
  (other processes' I/O too), /proc/diskstats of the data directory's device: diskstats_*.

auto's own view of the device (pg_buffile's DETAIL line "Last decision: ...; device not
limiting, transfers 0.15 ns/B, ...") is parsed from the run's stretch of the server log.
"""

import json
import os
import re
from statistics import median

CLK_TCK = os.sysconf("SC_CLK_TCK")
IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes")
SLOWFS_KEYS = ("read_bytes", "write_bytes", "read_requests", "write_requests",
               "read_wait_ns", "write_wait_ns")
# pg_buffile's DETAIL under log_temp_files for a space that used auto (src/auto.c's reason,
# bf_auto_explain): "; device not known, no transfer waited yet", "; device 4.00 ns/B
# (prior)", "; device not limiting, transfers 0.15 ns/B, caller 0.00", and where the device
# limits, each direction apart: "; device 4.27 ns/B (timed)" (or "(pace)") or "; device not
# limiting writes", then ", reads 4.84 (timed)" once the reads' runs timed them, then ",
# transfers 3.14 (reads 0.80), caller 0.00" (logs before the directions were split: ",
# transfers 3.14, caller 0.00").
AUTO_DECISION = re.compile(r"Last decision: [^\n]*")
AUTO_DEVICE = re.compile(r"; device (?:(not known)|(not limiting), transfers ([0-9.]+) ns/B"
                         r"|(not limiting writes)|([0-9.]+) ns/B \((prior|timed|pace)\))"
                         r"(?:, reads ([0-9.]+) \(timed\))?(?:, transfers ([0-9.]+))?")


def parse_io(text):
    """/proc/PID/io's text: {key: int}."""
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in IO_KEYS:
            out[k.strip()] = int(v)
    return out


def parse_slowfs(text):
    """.slowfs-stats' "name value" lines: {name: int}."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[1].lstrip("-").isdigit():
            out[f[0]] = int(f[1])
    return out


def parse_diskstats(text, major, minor):
    """(sectors read, sectors written) * 512 of the device major:minor in /proc/diskstats'
    text, or None when it is not listed (a partition's or a virtual file system's)."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 10 and int(f[0]) == major and int(f[1]) == minor:
            return int(f[5]) * 512, int(f[9]) * 512
    return None


def _stat_fields(s):
    """/proc/PID/stat's fields after the command (which may hold spaces and parentheses:
    they start after the last ')'), the state first."""
    return s[s.rindex(")") + 2:].split()


def parse_stat(s):
    """(state, ppid, utime + stime, cutime + cstime) in seconds from /proc/PID/stat's text."""
    f = _stat_fields(s)
    return (f[0], int(f[1]), (int(f[11]) + int(f[12])) / CLK_TCK,
            (int(f[13]) + int(f[14])) / CLK_TCK)


def children_cpu(s):
    """(user, system) seconds of the reaped children of the process whose /proc/PID/stat
    text s is (cutime, cstime): for a postmaster, its backends' CPU once they exited."""
    f = _stat_fields(s)
    return int(f[13]) / CLK_TCK, int(f[14]) / CLK_TCK


def auto_device(text):
    """auto's device figures in a stretch of the log, one decision per space that used
    auto: {"states": {state: n}, "device_ns_per_b": [...] (what auto took the device to
    cost for writes: 0 when not limiting them), "read_device_ns_per_b": [...] (the reads'
    figure, where their runs timed one), "transfer_ns_per_b": [...] (what it timed
    transfers at), "unread": decisions whose device part none of the forms above matched,
    "reasons": the decisions' text, so that a report can read them again}."""
    states, dev, rdev, ns, unread, reasons = {}, [], [], [], 0, []
    for line in AUTO_DECISION.findall(text):
        reasons.append(line)
        m = AUTO_DEVICE.search(line)
        if m is None:
            unread += 1
            continue
        if m.group(1):
            state = m.group(1)
        elif m.group(2):
            state = m.group(2)
            dev.append(0.0)
            ns.append(float(m.group(3)))
        else:
            state = m.group(4) or m.group(6)
            dev.append(0.0 if m.group(4) else float(m.group(5)))
        if m.group(7) is not None:
            rdev.append(float(m.group(7)))
        if m.group(8) is not None:
            ns.append(float(m.group(8)))
        states[state] = states.get(state, 0) + 1
    return {"states": states, "device_ns_per_b": dev, "read_device_ns_per_b": rdev,
            "transfer_ns_per_b": ns, "unread": unread, "reasons": reasons}


def delta(before, after):
    """after - before for every key of both (figures absent from one are left out)."""
    return {k: after[k] - before[k] for k in after if k in before}


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Device:
    """The device of a run, from device.json (page when there is none)."""

    def __init__(self, info=None):
        self.info = info or {"device": "page", "kind": "page"}
        self.name = self.info["device"]
        self.kind = self.info["kind"]

    @classmethod
    def load(cls, spec="page", path=""):
        """The device spec names, with device.json's details when path holds them for it
        (a report made from the results file alone has the name only)."""
        try:
            with open(path, encoding="utf-8") as f:
                info = json.load(f)
            if info.get("device") == spec:
                return cls(info)
        except (OSError, ValueError):
            pass
        return cls({"device": spec, "kind": spec.split(":", 1)[0]})

    def title(self):
        """The device in a report's words."""
        i = self.info
        arg = self.name.split(":")[1] if ":" in self.name else ""
        if self.kind == "slowfs":
            val = (f"; validated before use: dd's 1 MiB direct writes {i['validated_mib_s']} "
                   f"MiB/s, {i['validated_share']}% of the rate" if "validated_share" in i
                   else "")
            # what slowfs passes on lands in a tmpfs, or in the disk's page cache and is
            # written back like any file's (pg-device.sh)
            back = (", over a tmpfs" if self.name.endswith(":tmpfs")
                    else ", over the data directory's disk")
            return (f"slowfs at {arg}/s (tools/slowfs: a FUSE file system throttled to that "
                    f"rate, no page cache above it{back}{val})")
        if self.kind == "cgroup":
            return (f"the machine's disk: each server in a cgroup v1 memory cgroup limited to "
                    f"{arg} (memory.limit_in_bytes, which charges the temp files' page cache)")
        return "the data directory's file system (the page cache)"

    def snapshot(self, pm, port, data_dir):
        """The counters now, for the server whose postmaster is pm (on port, with its data
        directory data_dir)."""
        s = {}
        try:
            s.update(parse_io(_read(f"/proc/{pm}/io")))
        except OSError:
            pass
        # the backends' CPU, user and system apart: a FUSE device's requests cost the
        # caller system time that no device figure shows
        try:
            s["server_user_s"], s["server_sys_s"] = children_cpu(_read(f"/proc/{pm}/stat"))
        except (OSError, ValueError, IndexError):
            pass
        if self.kind == "slowfs":
            st = parse_slowfs(_read(os.path.join(self.info["mount"], ".slowfs-stats")))
            s.update({f"slowfs_{k}": st[k] for k in SLOWFS_KEYS if k in st})
            try:
                s["slowfs_cpu_s"] = parse_stat(_read(f"/proc/{self.info['pid']}/stat"))[2]
            except (OSError, ValueError, IndexError):
                pass
        elif self.kind == "cgroup":
            cg = self.info.get("cgroups", {}).get(str(port))
            if cg:
                try:
                    s["failcnt"] = int(_read(os.path.join(cg, "memory.failcnt")))
                    # a level, not a count: the cgroup's high-water mark so far
                    s["peak_usage_bytes"] = int(_read(os.path.join(
                        cg, "memory.max_usage_in_bytes")))
                except (OSError, ValueError):
                    pass
                try:
                    oc = parse_slowfs(_read(os.path.join(cg, "memory.oom_control")))
                    if "oom_kill" in oc:
                        s["oom_kill"] = oc["oom_kill"]
                except OSError:
                    pass
            st = os.stat(os.path.join(data_dir, "base"))
            d = parse_diskstats(_read("/proc/diskstats"), os.major(st.st_dev),
                                os.minor(st.st_dev))
            if d:
                s["diskstats_read_bytes"], s["diskstats_write_bytes"] = d
        return s

    @staticmethod
    def figures(before, after):
        """A run's figures: the differences, with disk_write_bytes derived."""
        d = delta(before, after)
        d.update({k: v for k, v in after.items() if k.startswith("peak_")})
        if "write_bytes" in d and "cancelled_write_bytes" in d:
            d["disk_write_bytes"] = d["write_bytes"] - d["cancelled_write_bytes"]
        return d


def total(figs):
    """Several runs' figures as one (a round of a suite's queries): counts summed, levels
    (peak_*) their highest."""
    out = {}
    for f in figs:
        for k, v in f.items():
            out[k] = max(out.get(k, v), v) if k.startswith("peak_") else out.get(k, 0) + v
    return out


def postmaster_of(data_dir):
    with open(os.path.join(data_dir, "postmaster.pid"), encoding="utf-8") as f:
        return int(f.readline())


def mib(b):
    return f"{b / 1048576:.0f}"


def summary_rows(device, runs_by_label):
    """The report's lines on what the device saw: per label (a method, or a server of the
    matrix) the median over its runs (or rounds) of each figure, a high-water mark's
    highest. runs_by_label: {label: [figures]}."""
    def med(xs):  # a label with no runs shows 0
        return median(xs) if xs else 0

    cols = [("storage reads MiB", "read_bytes", mib),
            ("storage writes MiB", "disk_write_bytes", mib),
            ("backends' CPU s (user / sys)", None, None)]
    if device.kind == "slowfs":
        cols += [("slowfs written MiB", "slowfs_write_bytes", mib),
                 ("slowfs read MiB", "slowfs_read_bytes", mib),
                 ("slowfs requests", None, None),
                 ("slowfs held s", None, None),
                 ("slowfs daemon CPU s", "slowfs_cpu_s", lambda x: f"{x:.2f}")]
    elif device.kind == "cgroup":
        cols += [("limit hits (failcnt)", "failcnt", lambda x: f"{x:.0f}"),
                 ("cgroup's peak MiB", "peak_usage_bytes", mib),
                 ("OOM kills", "oom_kill", lambda x: f"{x:.0f}"),
                 ("machine's disk written MiB", "diskstats_write_bytes", mib),
                 ("machine's disk read MiB", "diskstats_read_bytes", mib)]
    lines = ["| runs of | n | " + " | ".join(c[0] for c in cols) + " |",
             "|---|---:|" + "---:|" * len(cols)]
    for label, runs in runs_by_label.items():
        cells = []
        for name, key, fmt in cols:
            if name == "slowfs requests":
                v = med([r.get("slowfs_read_requests", 0) + r.get("slowfs_write_requests", 0)
                         for r in runs])
                cells.append(f"{v:.0f}")
            elif name == "backends' CPU s (user / sys)":
                us = [r["server_user_s"] for r in runs if "server_user_s" in r]
                sy = [r["server_sys_s"] for r in runs if "server_sys_s" in r]
                cells.append(f"{med(us):.2f} / {med(sy):.2f}" if us and sy else "-")
            elif name == "slowfs held s":
                v = med([(r.get("slowfs_read_wait_ns", 0) + r.get("slowfs_write_wait_ns", 0))
                         / 1e9 for r in runs])
                cells.append(f"{v:.2f}")
            else:
                vals = [r[key] for r in runs if key in r]
                # a high-water mark: its highest
                agg = max if key.startswith("peak_") else med
                cells.append(fmt(agg(vals)) if vals else "-")
        lines.append(f"| {label} | {len(runs)} | " + " | ".join(cells) + " |")
    return lines


def auto_rows(autos):
    """auto's view of the device over its runs: the decisions by the device's state, the
    median device figure (writes') and the rate it stands for, the reads' where timed, the
    median transfer figure; decisions the parser could not read are counted, never taken
    for no decision. autos: [auto_device() of a run]."""
    states, dev, rdev, ns, unread = {}, [], [], [], 0
    for x in autos:
        for k, v in x.get("states", {}).items():
            states[k] = states.get(k, 0) + v
        dev += x.get("device_ns_per_b", [])
        rdev += x.get("read_device_ns_per_b", [])
        ns += x.get("transfer_ns_per_b", [])
        unread += x.get("unread", 0)
    tail = (f" {unread} decision(s) logged in a form this report does not read."
            if unread else "")
    if not states:
        if unread:
            return "auto's device figures: none read." + tail
        return "auto logged no decision (no space used auto)."
    text = ("auto's device figures (its last decision per space, pg_buffile's log): "
            + ", ".join(f"device {k} in {v}" for k, v in sorted(states.items())))

    def rate(m):
        return f" (about {1e9 / m / 1048576:.0f} MiB/s)" if m > 0 else " (not limiting)"
    if dev:
        m = median(dev)
        text += (f"; the device's cost it used for writes: median {m:.2f} ns/B{rate(m)}, "
                 f"range {min(dev):.2f}-{max(dev):.2f}")
    if rdev:
        m = median(rdev)
        text += (f"; for reads, where timed: median {m:.2f} ns/B{rate(m)}, range "
                 f"{min(rdev):.2f}-{max(rdev):.2f} ({len(rdev)} spaces)")
    if ns:
        text += f"; the transfers it timed: median {median(ns):.2f} ns/B"
    return text + f" ({len(dev) or sum(states.values())} spaces)." + tail

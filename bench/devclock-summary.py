#!/usr/bin/env python3
"""devclock-summary.py LINES - the table of devclock-validate.sh from bench_devclock's lines.

Per scenario and clock, over the spaces (rounds): the device ns/B codec=auto timed (median
and range, of the spaces that timed one), how many of those are within 25% of the device's
true time per byte (a space whose caller never got ahead of the device, which a CPU burner
per core can make, rightly times none) (slowfs: its rate's, its MB being MiB; io_limit: 10^6 bytes/s), the pace
of windows that waited, the share of windows taken as limited, the share of blocks stored
raw, the transfers' own ns/B, and the schedstat readings per MiB moved (logical, written
and read). Writes and reads are timed apart (bf_auto_device's read_* figures): each has its
column, and a space counts as within 25% if its writes' figure is, or, where its writes timed
none, its reads' is.
"""
import re
import statistics
import sys


def truth(label):
    m = re.match(r"(slowfs|io_limit):(\d+)MB", label)
    if not m:
        return None
    rate = int(m.group(2)) * (1048576 if m.group(1) == "slowfs" else 1000000)
    return 1e9 / rate


def rng(v, fmt="%.2f"):
    if not v:
        return "-"
    s = fmt % statistics.median(v)
    return s + (" [" + fmt % min(v) + ", " + fmt % max(v) + "]" if len(v) > 1 else "")


def main(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) < 2 or "=" not in f[1]:
            continue
        kv = dict(x.split("=", 1) for x in f[1:])
        rows.setdefault((f[0], kv["clock"]), []).append(kv)
    print("| scenario | clock | spaces | writes' device ns/B timed: median [range] "
          "| reads' | within 25% of true "
          "| pace ns/B | limited share | blocks stored raw | transfer ns/B | readings per MiB |")
    print("|---|---|---:|---|---|---|---|---|---|---|---|")
    for (label, clock), rs in rows.items():
        reads = [float(r.get("read_device_ns", 0)) for r in rs if int(r.get("read_runs", 0)) > 0]
        # a space's figure: its writes', else its reads'
        dev = [float(r["device_ns"]) if int(r["device_runs"]) > 0 else float(r["read_device_ns"])
               for r in rs
               if int(r["device_runs"]) > 0 or int(r.get("read_runs", 0)) > 0]
        writes = [float(r["device_ns"]) for r in rs if int(r["device_runs"]) > 0]
        t = truth(label)
        if t is None:
            within = "none wanted: %d of %d timed one" % (len(dev), len(rs))
        else:
            ok = sum(1 for d in dev if abs(d - t) <= 0.25 * t)
            within = "%d of %d timed (%d spaces; true %.2f)" % (ok, len(dev), len(rs), t)
        pace = [float(r["pace_ns"]) for r in rs if int(r["pace_windows"]) > 0]
        print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, clock, len(rs), rng(writes), rng(reads), within, rng(pace),
            rng([float(r["limited_share"]) for r in rs]),
            rng([float(r["raw_frac"]) for r in rs], "%.4f"),
            rng([float(r["transfer_ns"]) for r in rs], "%.3f"),
            rng([float(r["readings_per_mib"]) for r in rs])))


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""stackshare.py PERF.DATA...: how many CPU samples of `perf record -g` profiles have each
of a set of kernel functions anywhere on their stack (callers included), summed over the
files. Behind the ext4 section of docs/results/none-path-profile.md: it tells inode
allocation (__ext4_new_inode, recently_deleted) from writes, reads and unlinks, which a
flat profile of self samples does not. Reads `perf script` output; needs perf on PATH."""
import collections, subprocess, sys

KEYS = ["__ext4_new_inode", "find_inode_bit", "recently_deleted", "ext4_create",
        "ext4_lookup", "ext4_add_entry", "ext4_da_write_begin", "ext4_da_write_end",
        "block_write_end", "ext4_buffered_write_iter", "filemap_read", "ext4_evict_inode",
        "truncate_inode_pages_range", "ext4_unlink", "path_openat", "__x64_sys_openat",
        "__x64_sys_pread64", "__x64_sys_unlink", "__x64_sys_close", "__x64_sys_mkdir",
        "__x64_sys_unlinkat", "asm_exc_page_fault"]

count = collections.Counter()
for path in sys.argv[1:]:
    out = subprocess.run(["perf", "script", "-i", path, "-F", "ip,sym"],
                         capture_output=True, text=True, check=True).stdout
    for sample in out.split("\n\n"):
        lines = [l.split() for l in sample.strip().split("\n") if l.strip()]
        if not lines:
            continue
        syms = {l[1] for l in lines if len(l) > 1}
        count["ALL"] += 1
        for k in KEYS:
            if k in syms:
                count[k] += 1
for k in ["ALL"] + KEYS:
    print("%-28s %7d" % (k, count[k]))

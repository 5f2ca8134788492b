#!/usr/bin/env python3
"""Attribute a callgrind profile of bench_spill (--only=..., toggle-collect of
run_plain or run_library) to the parts of the library's path.

usage: breakdown.py ROOT MIB_COLLECTED TUPLE cg.out [cg.out ...]
Prints instructions per MiB of logical data (each byte is written once and
read once) and per call (a call = one write or one read of a tuple)."""
import os, re, subprocess, sys, collections
sys.path.insert(0, os.path.dirname(__file__))
from cgparse import parse

# The tree whose sources callgrind names (this checkout), ending in a slash.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')) + '/'

def fn_ranges(path):
    """(start, end, name) of every function in a C file (ctags, end = next '^}')."""
    out = subprocess.run(['ctags', '-x', '--c-kinds=f', path], capture_output=True, text=True).stdout
    lines = open(path).read().split('\n')
    r = []
    for row in out.splitlines():
        name, _, start = row.split()[:3]
        start = int(start)
        end = start
        while end <= len(lines) and not lines[end - 1].startswith('}'):
            end += 1
        r.append((start, end, name))
    return r

RANGES = {}
def src_fn(path, line):
    if path not in RANGES:
        RANGES[path] = fn_ranges(path) if path.startswith(ROOT) and os.path.exists(path) else []
    for s, e, n in RANGES[path]:
        if s <= line <= e:
            return n
    return None

def line_text(path, line):
    try:
        return open(path).read().split('\n')[line - 1]
    except Exception:
        return ''

CAT_ORDER = [
    'caller copy (memcpy of the tuple)',
    'per-call path: entry/exit (register saves, returns)',
    'per-call path: argument checks',
    'per-call path: position math, loop, buffer hit test',
    'per-call path: buf_switch call on a hit',
    'logical size and peaks (per call)',
    'statistics counters',
    'hooks (NULL checks)',
    'block buffer: switch/flush glue',
    'block buffer: zero-fill of a new block',
    'read: copy from scratch/read-ahead into the buffer',
    'CRC-32C',
    'extent header: pack/check (+le.h)',
    'codec=none compress call + its 2 clock reads + codec lookup',
    'block map',
    'placement (free list, extent_place), physical accounting',
    'block store/load glue (block_store, block_load, extent_fetch)',
    'segment/descriptor (bf_seg_*, seg_open, LRU, io_begin/end)',
    'syscall wrappers pwritev/pread (user side)',
    'memory allocation',
    'create/open/close/unlink of files',
    'harness (bench loop, batch_of)',
    'stock: block-full test, flush glue',
    'one-time init (CRC tables)',
    'other',
]

def categorize(fn, path, line, callee):
    base = os.path.basename(path or '')
    sfn = src_fn(path, line) if path else None
    text = line_text(path, line) if path else ''
    if callee and callee.startswith('pthread_once'):
        return 'CRC-32C'
    if base == 'bench_spill.c':
        if sfn == 'run_plain' or sfn == 'plain_flush':
            if 'memcpy' in text:
                return 'caller copy (memcpy of the tuple)'
            if 'pwritev' in text or 'pread' in text:
                return 'syscall wrappers pwritev/pread (user side)'
            if re.search(r'\bopen\(|unlink|close\(|batch_path|snprintf', text) or callee in ('open', 'unlink', 'close', 'open64', '__open64'):
                return 'create/open/close/unlink of files'
            if sfn == 'plain_flush' or 'plain_flush' in text:
                return 'stock: block-full test, flush glue'
            if re.search(r'size_t n =|used|done|avail|at \+=|at = |off \+=|sum \+=', text):
                return 'per-call path: position math, loop, buffer hit test'
            return 'harness (bench loop, batch_of)'
        if sfn == 'batch_of':
            return 'harness (bench loop, batch_of)'
        if sfn == 'run_library':
            if 'bf_file_create' in text or 'bf_file_close' in text:
                return 'create/open/close/unlink of files'
            return 'harness (bench loop, batch_of)'
        return 'harness (bench loop, batch_of)'
    if base in ('crc32c.c', 'smmintrin.h') or fn in ('three_chains', 'crc_hw', 'bf_crc32c'):
        if sfn in ('crc_init', 'build_shift', 'gf2_apply', 'gf2_square', 'have_hw') or fn in ('crc_init', 'build_shift', 'gf2_apply', 'gf2_square', 'have_hw'):
            return 'one-time init (CRC tables)'
        return 'CRC-32C'
    if 'COUNT(' in text or 'blocks_by_codec' in text or 'blocks_sealed' in text or 'blocks_user' in text:
        return 'statistics counters'
    if 'bf_space_note_blocks' in text or sfn == 'bf_space_note_blocks':
        return 'hooks (NULL checks)'
    if base == 'clock.h' or 'bf_now_ns' in text:
        return 'codec=none compress call + its 2 clock reads + codec lookup'
    if base in ('blockmap.c', 'blockmap.h'):
        return 'block map'
    if base == 'le.h':
        return 'extent header: pack/check (+le.h)'
    if base == 'extent.c':
        if 'ops->compress' in text or 'ops->bound' in text:
            return 'codec=none compress call + its 2 clock reads + codec lookup'
        return 'extent header: pack/check (+le.h)'
    if base in ('codec.c', 'codec_none.c'):
        return 'codec=none compress call + its 2 clock reads + codec lookup'
    if base == 'space.c':
        if sfn in ('bf_space_codec_ops', 'bf_space_codec_ctx', 'bf_space_codec_name'):
            return 'codec=none compress call + its 2 clock reads + codec lookup'
        return 'other'
    if base == 'freespace.c':
        return 'placement (free list, extent_place), physical accounting'
    if base == 'alloc.c':
        return 'memory allocation'
    if base in ('segment.c', 'io_posix.c', 'io_hooks.c'):
        if sfn in ('bf_seg_remove', 'seg_unlink', 'bf_seg_close', 'bf_seg_path', 'bf_seg_init') or \
           (base == 'io_posix.c' and re.search(r'open|close|unlink', sfn or '')):
            return 'create/open/close/unlink of files'
        if base == 'io_posix.c' or (callee and ('pwritev' in callee or 'pread' in callee)):
            return 'syscall wrappers pwritev/pread (user side)'
        if sfn == 'seg_open' and callee is not None:
            return 'create/open/close/unlink of files'
        return 'segment/descriptor (bf_seg_*, seg_open, LRU, io_begin/end)'
    if base == 'file.c':
        if sfn in ('bf_file_create', 'bf_file_new', 'bf_file_close', 'bf_file_release', 'live_bytes',
                   'bf_file_options_init_sized', 'bf_file_flush', 'bf_file_seek', 'bf_file_abort'):
            return 'create/open/close/unlink of files'
        if sfn in ('bf_file_write', 'bf_file_read'):
            if 'memcpy' in text:
                return 'caller copy (memcpy of the tuple)'
            if 'logical_set' in text:
                return 'logical size and peaks (per call)'
            if text.strip() in ('{', '}') or text.strip().startswith('return'):
                return 'per-call path: entry/exit (register saves, returns)'
            if re.search(r'check_writable|check_extent|len == 0|pos \+ len < f->pos|INT64_MAX|size - f->pos|pos >= f->size|^\{|^\}|return rc != BF_OK|int rc = check', text) or line_text(path, line).strip() in ('{', '}'):
                return 'per-call path: argument checks'
            if 'buf_switch' in text:
                return 'per-call path: buf_switch call on a hit'
            return 'per-call path: position math, loop, buffer hit test'
        if sfn == 'check_writable' and text.strip().startswith('return'):
            return 'per-call path: entry/exit (register saves, returns)'
        if sfn in ('check_writable', 'check_extent', 'shift_of'):
            return 'per-call path: argument checks' if sfn != 'shift_of' else 'per-call path: position math, loop, buffer hit test'
        if sfn in ('logical_set',) or (sfn == 'track' and fn in ('bf_file_write', 'bf_file_read')):
            return 'logical size and peaks (per call)'
        if sfn == 'buf_switch':
            if 'memset' in text:
                return 'block buffer: zero-fill of a new block'
            if 'bf_malloc' in text:
                return 'memory allocation'
            if 'f->buf_blk == blkno' in text or text.strip() in ('{', '}', 'return BF_OK;'):
                return 'per-call path: buf_switch call on a hit'
            return 'block buffer: switch/flush glue'
        if sfn in ('buf_flush', 'buf_drop', 'block_bytes'):
            return 'block buffer: switch/flush glue'
        if sfn == 'block_load' and 'memcpy' in text:
            return 'read: copy from scratch/read-ahead into the buffer'
        if sfn in ('map_room', 'map_unroom', 'release_extent'):
            return 'block map'
        if sfn == 'block_commit':
            if 'bf_map' in text or 'release_extent' in text or 'bf_map_entry' in text:
                return 'block map'
            return 'placement (free list, extent_place), physical accounting'
        if sfn in ('extent_place', 'physical_set', 'bf_file_set_physical', 'live_add', 'track'):
            return 'placement (free list, extent_place), physical accounting'
        if sfn in ('block_pack', 'space_codec_name'):
            if 'bf_extent_pack' in text or 'bf_space_codec' in text or sfn == 'space_codec_name':
                return 'codec=none compress call + its 2 clock reads + codec lookup'
            return 'codec=none compress call + its 2 clock reads + codec lookup'
        if sfn in ('block_store', 'block_load', 'extent_fetch', 'part_seg', 'blocks_store_batch'):
            if 'bf_map_get' in text or 'bf_map_used' in text:
                return 'block map'
            return 'block store/load glue (block_store, block_load, extent_fetch)'
    return 'other'

def attribute(path):
    """Instructions per part of a callgrind profile (the one-time init taken out)."""
    cost, _ = parse(path, ROOT)
    cats = collections.Counter()
    for (fn, fpath, line, callee), v in cost.items():
        cats[categorize(fn, fpath, line, callee[5:] if callee else None)] += v
    dup = cats.pop('one-time init (CRC tables)', 0)
    cats['CRC-32C'] -= dup  # counted inside pthread_once's inclusive cost as well
    return cats

def main():
    global ROOT
    ROOT = sys.argv[1].rstrip('/') + '/'
    mib = float(sys.argv[2]); tuple_ = int(sys.argv[3])
    calls_per_mib = 2 * (1 << 20) / tuple_  # a write and a read per tuple
    for path in sys.argv[4:]:
        cost, calls = parse(path, ROOT)
        cats = collections.Counter()
        other = collections.Counter()
        for (fn, fpath, line, callee), v in cost.items():
            callee = callee[5:] if callee else None
            c = categorize(fn, fpath, line, callee)
            cats[c] += v
            if c == 'other':
                other[(fn, os.path.basename(fpath or ''), line, callee)] += v
        tot = sum(cats.values())
        # The one-time init runs inside pthread_once's inclusive cost: counted twice.
        dup = cats.pop('one-time init (CRC tables)', 0)
        cats['CRC-32C'] -= dup
        tot -= dup
        print('## %s: %.0f instructions per MiB, %.1f per call (%d-byte tuples, a write and a read each)' %
              (os.path.basename(path), tot / mib, tot / mib / calls_per_mib, tuple_))
        print('| part | instr/MiB | instr/call | share |')
        print('|---|---:|---:|---:|')
        for c in CAT_ORDER:
            if cats.get(c):
                print('| %s | %.0f | %.2f | %.1f%% |' % (c, cats[c] / mib, cats[c] / mib / calls_per_mib, 100.0 * cats[c] / tot))
        if other:
            print('other:', other.most_common(8), file=sys.stderr)

if __name__ == '__main__':
    main()

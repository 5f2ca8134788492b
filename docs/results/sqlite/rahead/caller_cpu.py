# caller_cpu.py TREE: the temporary measurement build of docs/results/sqlite.md (issue 49,
# "Blocks unpacked ahead for interleaved passes"): edits TREE/src/file.c so that the process
# prints at exit the CPU time of the thread that exits (SQLite's, spillbench's main thread),
# the loads, the blocks decompressed by block_load_here on that thread and the blocks taken
# from or thrown away by the workers. Not for the branch.
import sys
p=sys.argv[1]+'/src/file.c'
s=open(p).read()
hdr='''
/* TEMPORARY (issue 49 measurement): caller-thread CPU and codec calls. */
#include <stdio.h>
#include <time.h>
static uint64_t g_unpack, g_unpack_ns, g_hits, g_miss, g_loads;
__attribute__((destructor)) static void g_dump(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    fprintf(stderr, "CPU caller_cpu_ms=%.1f loads=%llu unpack_here=%llu unpack_here_ms=%.1f ra_hits=%llu ra_misses=%llu\\n",
            ts.tv_sec * 1e3 + ts.tv_nsec / 1e6, (unsigned long long)g_loads, (unsigned long long)g_unpack,
            g_unpack_ns / 1e6, (unsigned long long)g_hits, (unsigned long long)g_miss);
}
'''
a='/* A slot holding a block unpacked ahead for a read'
s=s.replace(a,hdr+a,1)
old='''        rc = bf_extent_unpack(ext, &info, ops, ctx, &seal, sp->unsealed, dst, &dt, &why);'''
assert old in s
s=s.replace(old,old+'''
        if (!info.raw) { g_unpack++; g_unpack_ns += dt; }''')
s=s.replace('sp->ra_hits++;','sp->ra_hits++, g_hits++;')
s=s.replace('sp->ra_misses++;','sp->ra_misses++, g_miss++;')
old='static int block_load(bf_file *f, uint64_t blkno, int stream, unsigned char *dst)\n{\n'
s=s.replace(old,old+'    g_loads++;\n')
open(p,'w').write(s)

/*
 * packplace.c - what the placement of compressed extents costs the kernel in
 * the page cache: extents of lz4-like sizes (a block of 8 KiB compressed to
 * 35-55%: 2.9-4.5 KiB), written one per call into 32 files in hash order
 * (a hash join's spill), then read back extent by extent and deleted, as
 *   packed   back to back at the file's end (format 3 and the proposal's
 *            default: the page an extent ends in is written again, in part,
 *            by the next one);
 *   padded   each extent at a 4 KiB boundary (every page written once and
 *            whole-page aligned, the padding wasted);
 *   paged    back to back, but through a 4 KiB tail page per file: only full
 *            pages are written, once (what "no page written twice" costs
 *            without holding the block: 4 KiB of memory per file);
 * and the same with raw 8 KiB blocks at 8 KiB multiples for scale (stock).
 * CPU time of the thread (user + system) per logical byte, median of
 * --runs interleaved runs; pwrite calls and pages written per extent.
 * Build: cc -O2 bench/profile/packplace.c -o packplace
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILES 32
#define BLOCK 8192u
#define PAGE 4096u

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { PACKED, PADDED, PAGED, RAW, NMODE };
static const char *const names[NMODE] = {"packed", "padded", "paged", "raw 8K (stock)"};

typedef struct pf {
    int fd;
    uint64_t end;             /* bytes written or buffered */
    unsigned char tail[PAGE]; /* paged: the partial last page */
    uint32_t next, n;         /* extents for read-back */
    uint64_t *off;
    uint32_t *len;
} pf;

static uint64_t writes, pages;

static void put(int fd, const void *b, size_t n, uint64_t off)
{
    if (pwrite(fd, b, n, (off_t)off) != (ssize_t)n) {
        perror("pwrite");
        exit(1);
    }
    writes++;
    pages += (off + n + PAGE - 1) / PAGE - off / PAGE;
}

static double one(int mode, const char *dir, uint32_t nblocks, const uint32_t *sizes,
                  const unsigned char *data, uint64_t *phys)
{
    static pf f[FILES];
    char path[4200];
    uint64_t c0 = cpu_ns();
    for (int k = 0; k < FILES; k++) {
        snprintf(path, sizeof(path), "%s/packplace.%d", dir, k);
        f[k].fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        f[k].end = 0;
        f[k].n = 0;
        if (f[k].off == NULL) {
            f[k].off = malloc(nblocks * sizeof(uint64_t));
            f[k].len = malloc(nblocks * sizeof(uint32_t));
        }
    }
    *phys = 0;
    for (uint32_t i = 0; i < nblocks; i++) {
        uint64_t h = (i + 1) * UINT64_C(0x9e3779b97f4a7c15);
        pf *p = &f[(h ^ (h >> 29)) % FILES];
        uint32_t len = mode == RAW ? BLOCK : sizes[i];
        const unsigned char *src = data + (i % 64) * BLOCK;
        uint64_t at = p->end;
        if (mode == PADDED)
            at = (at + PAGE - 1) / PAGE * PAGE;
        if (mode == PAGED) {
            uint32_t used = (uint32_t)(at % PAGE), done = 0;
            while (done < len) {
                uint32_t n = len - done < PAGE - used ? len - done : PAGE - used;
                memcpy(p->tail + used, src + done, n);
                used += n;
                done += n;
                if (used == PAGE) {
                    put(p->fd, p->tail, PAGE, (at + done) - PAGE);
                    used = 0;
                }
            }
        } else {
            put(p->fd, src, len, at);
        }
        p->off[p->n] = at;
        p->len[p->n++] = len;
        p->end = at + len;
    }
    for (int k = 0; k < FILES; k++)
        *phys += f[k].end; /* padding included */
    if (mode == PAGED)
        for (int k = 0; k < FILES; k++)
            if (f[k].end % PAGE)
                put(f[k].fd, f[k].tail, f[k].end % PAGE, f[k].end / PAGE * PAGE);
    unsigned char buf[BLOCK];
    uint64_t sum = 0;
    for (int k = 0; k < FILES; k++)
        for (uint32_t j = 0; j < f[k].n; j++) {
            if (pread(f[k].fd, buf, f[k].len[j], (off_t)f[k].off[j]) != (ssize_t)f[k].len[j])
                exit(1);
            sum += buf[0];
        }
    for (int k = 0; k < FILES; k++) {
        close(f[k].fd);
        snprintf(path, sizeof(path), "%s/packplace.%d", dir, k);
        unlink(path);
    }
    uint64_t c1 = cpu_ns();
    if (sum == 12345)
        puts("");
    return (double)(c1 - c0);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    uint32_t mib = argc > 2 ? (uint32_t)atoi(argv[2]) : 64;
    int runs = argc > 3 ? atoi(argv[3]) : 9;
    uint32_t nblocks = mib * (1048576 / BLOCK);
    uint32_t *sizes = malloc(nblocks * sizeof(*sizes));
    unsigned char *data = malloc(64 * BLOCK);
    srand(46);
    for (uint32_t i = 0; i < 64 * BLOCK; i++)
        data[i] = (unsigned char)rand();
    for (uint32_t i = 0; i < nblocks; i++)
        sizes[i] = BLOCK * 35 / 100 + (uint32_t)(rand() % (BLOCK * 20 / 100)) + 32;
    static double t[NMODE][64];
    uint64_t w[NMODE] = {0}, pg[NMODE] = {0}, phys[NMODE] = {0};
    if (runs < 1 || runs > 64)
        return 2;
    for (int r = 0; r < runs + 1; r++)
        for (int m = 0; m < NMODE; m++) {
            writes = pages = 0;
            uint64_t ph;
            double ns = one(m, dir, nblocks, sizes, data, &ph);
            if (r > 0) { /* the first round warms up */
                t[m][r - 1] = ns / ((double)nblocks * BLOCK);
                w[m] = writes;
                pg[m] = pages;
                phys[m] = ph;
            }
        }
    printf("packplace: %u MiB logical (%u blocks, extents 2.8-4.4 KiB), %d files, %d runs; CPU "
           "(user+sys) of write + read back + delete\n",
           mib, nblocks, FILES, runs);
    printf("%-16s %12s %12s %14s %14s %12s\n", "placement", "cpu ns/B", "[min, max]",
           "pwrites/extent", "pages/extent", "phys/logical");
    for (int m = 0; m < NMODE; m++) {
        qsort(t[m], (size_t)runs, sizeof(double), cmpd);
        printf("%-16s %12.3f  [%.3f, %.3f] %10.3f %14.3f %12.3f\n", names[m], t[m][runs / 2],
               t[m][0], t[m][runs - 1], (double)w[m] / nblocks, (double)pg[m] / nblocks,
               (double)phys[m] / ((double)nblocks * BLOCK));
    }
    return 0;
}

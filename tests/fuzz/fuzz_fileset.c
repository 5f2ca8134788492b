/*
 * fuzz_fileset.c - the file-set model of tests/fsmodel.c driven by the
 * fuzzer's bytes: named files created, written, exported, opened read-only
 * and read-write from three spaces, appended, truncated, deleted and closed,
 * with faults from the I/O seam, the allocator hooks and the temp limit at
 * points the input chooses; every failure contract of include/buffile.h the
 * model knows is checked after every call, as in test_fsmodel (a failed
 * check aborts).
 *
 * The input is a 4-byte seed of the data written (its top bit set: every
 * space seals its files, and knows a caller's codec), then the sequence of
 * choices itself: each choice takes one byte (two or four for larger ranges;
 * missing bytes read as 0, big-endian) and the run stops when the input is
 * used up. test_fsmodel writes a sequence of its own in this form with
 * BF_SEED=<n> BF_FSMODEL_RECORD=<file>: the bug-* inputs of
 * tests/fuzz/corpus/fileset are such recordings of the sequences that first
 * found a defect (named after it, with its number in docs/reliability.md's
 * tables where it has one); each failed on the code before its fix. BF_FSMODEL_TOLERATE and
 * BF_FSMODEL_AVOID work as in test_fsmodel, so a run can hunt for one
 * defect's checks (BF_FSMODEL_TOLERATE=all-but:self-append).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsmodel.h"
#include "fuzz.h"
#include "support.h"

#define MAX_STEPS 400

typedef struct choices {
    const uint8_t *p;
    size_t n;
} choices;

static uint64_t pick_bytes(void *ctx, uint64_t n)
{
    choices *c = ctx;
    int bytes = n <= 256 ? 1 : n <= 65536 ? 2 : 4;
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = v << 8;
        if (c->n > 0) {
            v |= *c->p++;
            c->n--;
        }
    }
    return v;
}

static void fail_cb(void *ctx, const char *msg)
{
    (void)ctx;
    fuzz_fail("%s", msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    choices c = {data, size};
    fsm_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.parent = fuzz_parent();
    cfg.seed = pick_bytes(&c, UINT64_C(1) << 32); /* the data's seed: the first 4 bytes */
    cfg.sealed = (cfg.seed >> 31) & 1; /* the seed's top bit: sealed spaces, a caller's codec */
    cfg.pick = pick_bytes;
    cfg.pick_ctx = &c;
    cfg.fail = fail_cb;
    cfg.tolerate = getenv("BF_FSMODEL_TOLERATE");
    cfg.avoid = getenv("BF_FSMODEL_AVOID");
    fsm *m = fsm_open(&cfg);
    for (int i = 0; i < MAX_STEPS && c.n > 0 && !fsm_abandoned(m); i++)
        fsm_step(m);
    fsm_finish(m);
    return 0;
}

/* Seeds: random choice sequences of a few lengths. */
int fuzz_write_seeds(const char *dir)
{
    static unsigned char body[3000];
    for (int s = 0; s < 10; s++) {
        t_rng rng = {777u + (uint64_t)s};
        size_t n = 400 + (size_t)s * 250;
        for (size_t i = 0; i < n; i++)
            body[i] = (unsigned char)t_next(&rng);
        char name[32];
        snprintf(name, sizeof(name), "prog-%02d", s);
        fuzz_seed(dir, name, body[0], body + 1, n - 1);
    }
    return 0;
}

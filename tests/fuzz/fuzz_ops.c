/*
 * fuzz_ops.c - random operation sequences against an in-memory model,
 * with faults injected between them.
 *
 * The input is a program: a config byte (bits 0-1 codec, 2-3 block size
 * 4/8/64 KiB, bit 4 smallest segment size, bit 5 codec=auto started from
 * device figures read from the input - some no space could measure, which
 * bf_space_create must refuse - bit 6 the far file below is a named one),
 * then operations, each an op byte and its argument bytes (missing bytes
 * read as 0). Operations: the stream and block calls of the file API, and
 * faults - the N-th pwritev fails (ENOSPC, EIO, or short then ENOSPC), the
 * N-th pread fails (EIO), reads come back short, the N-th allocation
 * fails, a temp limit just above the current use. The model is a t_image:
 * bytes known to be in the file; a failed write makes its range unknown,
 * as buffile.h allows. Properties after every call: with no fault armed it
 * succeeds; a failure has a status the armed fault can cause (never
 * BF_ECORRUPT) and a message; position, size and peaks follow the
 * documented rules (a failed read or truncate changes neither); every
 * known byte read is right; the block map meets buffile.h's memory bound.
 * At the end, faults off: the whole file matches, close leaves no file
 * behind and every allocated byte is freed. A cursor on the file reads
 * after every step while no fault is armed, checked like the reads.
 *
 * A second file, the far file, takes block calls at the limits of block
 * numbers: the largest ones, blocks scattered far apart, the last byte of
 * the largest file, truncates out there; its model is a short list of the
 * blocks it holds. Named (config bit 6), it is also persisted and reopened,
 * and a killed session's leftovers are planted for a read-write open that
 * fails half way removing them and is tried again. At the end it must read
 * back as its model, reopened by name too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "fuzz.h"
#include "space.h"
#include "support.h"

#define MAX_OPS 300

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint32_t rd8(reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static uint32_t rd16(reader *r)
{
    return rd8(r) | rd8(r) << 8;
}

/* A block the far file holds (data a copy of what was written; unknown after a failed write). */
typedef struct far_blk {
    uint64_t b;
    unsigned char *data;
    int known;
} far_blk;

#define NFAR 32

/* The fault table of support.c plus reads that come back short but make progress. */
typedef struct rig {
    t_faults flt;
    bf_io inner;
    int chop_reads;
    t_counting cnt;
    bf_space *sp;
    bf_file *f;
    t_image img;
    uint64_t pos;
    uint32_t bs;
    uint64_t max_size;
    int limit_set;
    unsigned char *buf, *got;
    bf_file *far;     /* the far file */
    char set[4096];   /* its file set when named ("" when anonymous) */
    far_blk fb[NFAR]; /* its blocks holding data */
    int unbounded;    /* an allocation failed: the block maps need not meet the bound any more */
    int alloc_armed;  /* an allocation failure was armed (cnt.fail_at counts down to it) */
    int nfb;
    uint64_t far_size; /* its logical size */
    bf_cursor *cur;    /* follows the file while no fault is armed (cursor_follow) */
} rig;

static ssize_t chop_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
    rig *r = ctx;
    if (r->chop_reads && len > 1)
        len = 1 + len / 3;
    return r->inner.pread(r->inner.ctx, fd, buf, len, off);
}

static int pass_open(void *ctx, const char *path, int flags, mode_t mode)
{
    rig *r = ctx;
    return r->inner.open(r->inner.ctx, path, flags, mode);
}

static int pass_close(void *ctx, int fd)
{
    rig *r = ctx;
    return r->inner.close(r->inner.ctx, fd);
}

static ssize_t pass_pwritev(void *ctx, int fd, const struct iovec *iov, int n, off_t off)
{
    rig *r = ctx;
    return r->inner.pwritev(r->inner.ctx, fd, iov, n, off);
}

static int pass_ftruncate(void *ctx, int fd, off_t len)
{
    rig *r = ctx;
    return r->inner.ftruncate(r->inner.ctx, fd, len);
}

static int pass_unlink(void *ctx, const char *path)
{
    rig *r = ctx;
    return r->inner.unlink(r->inner.ctx, path);
}

/* Which failures the armed faults allow right now (a bit per cause). */
enum { CAN_WRITE = 1, CAN_READ = 2, CAN_ALLOC = 4, CAN_LIMIT = 8 };

static int armed(const rig *r)
{
    const t_faults *f = &r->flt;
    int a = 0;
    if ((f->fail_write_at && f->writes < f->fail_write_at) || f->short_armed)
        a |= CAN_WRITE;
    if (f->fail_read_at && f->reads < f->fail_read_at)
        a |= CAN_READ;
    if (r->cnt.fail_at)
        a |= CAN_ALLOC;
    if (r->limit_set)
        a |= CAN_LIMIT;
    return a;
}

static void disarm(rig *r)
{
    r->unbounded |= r->cnt.fail_at == 0 && r->alloc_armed;
    r->alloc_armed = 0;
    r->flt.fail_write_at = r->flt.fail_read_at = r->flt.fail_meta_at = 0;
    r->flt.meta_mask = 0;
    r->flt.short_armed = 0;
    r->chop_reads = 0;
    r->cnt.fail_at = 0;
    r->limit_set = 0;
    bf_space_set_temp_limit(r->sp, 0);
}

/* What the runs of this process did, printed at exit: the figures of docs/reliability.md. */
static struct {
    uint64_t runs, ops, armed, enospc, eio, enomem, elimit;
} tally;

static void print_tally(void)
{
    fprintf(stderr,
            "fuzz_ops: %llu runs, %llu operations, %llu faults armed; calls failed by them: "
            "%llu ENOSPC, %llu EIO, %llu ENOMEM, %llu ELIMIT\n",
            (unsigned long long)tally.runs, (unsigned long long)tally.ops,
            (unsigned long long)tally.armed, (unsigned long long)tally.enospc,
            (unsigned long long)tally.eio, (unsigned long long)tally.enomem,
            (unsigned long long)tally.elimit);
}

/* A failure must be one the armed faults can cause, and say what happened. */
static void check_failure(const rig *r, int64_t rc, int can, const char *op)
{
    tally.enospc += rc == BF_ENOSPC;
    tally.eio += rc == BF_EIO;
    tally.enomem += rc == BF_ENOMEM;
    tally.elimit += rc == BF_ELIMIT;
    const char *msg = bf_space_errmsg(r->sp);
    int ok = (rc == BF_ENOSPC && (can & CAN_WRITE)) || (rc == BF_EIO && (can & CAN_WRITE)) ||
             (rc == BF_EIO && (can & CAN_READ)) || (rc == BF_ENOMEM && (can & CAN_ALLOC)) ||
             (rc == BF_ELIMIT && (can & CAN_LIMIT));
    FUZZ_CHECK(ok, "%s failed with %lld (%s) but armed faults were 0x%x: %s", op, (long long)rc,
               bf_strerror((int)rc), can, msg);
    FUZZ_CHECK(msg[0] != '\0', "%s failed with %lld and no message", op, (long long)rc);
}

static void check_bytes(const rig *r, uint64_t at, const unsigned char *got, size_t n,
                        const char *op);

/* Every byte the model knows in [at, at + n) equals got[]. */
static void check_known(const rig *r, uint64_t at, const unsigned char *got, size_t n,
                        const char *op)
{
    /* Byte loops are slow under coverage instrumentation: compare in chunks first. */
    for (size_t c = 0; c < n; c += 512) {
        size_t len = n - c < 512 ? n - c : 512;
        if (at + c + len <= r->img.size && memcmp(got + c, r->img.d + at + c, len) == 0)
            continue;
        check_bytes(r, at + c, got + c, len, op);
    }
}

static void check_bytes(const rig *r, uint64_t at, const unsigned char *got, size_t n,
                        const char *op)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t k = at + i;
        unsigned char want = k < r->img.size ? r->img.d[k] : 0;
        int known = k >= r->img.size || r->img.known[k];
        FUZZ_CHECK(!known || got[i] == want, "%s: byte %llu is %u, expected %u", op,
                   (unsigned long long)k, got[i], want);
    }
}

static void check_whole(rig *r)
{
    uint64_t size = bf_file_size(r->f);
    FUZZ_CHECK(size == r->img.size, "size %llu, model %llu", (unsigned long long)size,
               (unsigned long long)r->img.size);
    unsigned char *all = malloc(size + 1);
    FUZZ_CHECK(all != NULL, "out of memory");
    FUZZ_CHECK(bf_file_seek(r->f, 0, BF_SEEK_SET) == BF_OK, "seek");
    int64_t n = bf_file_read(r->f, all, size + 1);
    FUZZ_CHECK(n == (int64_t)size, "whole read returned %lld of %llu: %s", (long long)n,
               (unsigned long long)size, bf_space_errmsg(r->sp));
    check_known(r, 0, all, size, "whole read");
    free(all);
    FUZZ_CHECK(bf_file_seek(r->f, (int64_t)r->pos, BF_SEEK_SET) == BF_OK, "seek back");
}

static void op_write(rig *r, reader *in, int can)
{
    size_t len = rd16(in) % (3 * r->bs + 1);
    uint32_t seed = rd8(in);
    if (r->pos + len > r->max_size) {
        r->pos = r->max_size / 2;
        FUZZ_CHECK(bf_file_seek(r->f, (int64_t)r->pos, BF_SEEK_SET) == BF_OK, "seek");
    }
    fuzz_data(seed, r->buf, len);
    uint64_t old = bf_file_size(r->f);
    bf_stats before, after;
    bf_file_stats(r->f, &before);
    int rc = bf_file_write(r->f, r->buf, len);
    if (rc == BF_OK) {
        t_image_write(&r->img, r->pos, r->buf, len);
        r->pos += len;
        return;
    }
    check_failure(r, rc, can, "write");
    FUZZ_CHECK(bf_file_tell(r->f) == r->pos, "failed write moved the position");
    uint64_t size = bf_file_size(r->f), hi = r->pos + len > old ? r->pos + len : old;
    FUZZ_CHECK(size >= old && size <= hi, "size %llu after a failed write, expected %llu..%llu",
               (unsigned long long)size, (unsigned long long)old, (unsigned long long)hi);
    bf_file_stats(r->f, &after);
    FUZZ_CHECK(after.logical_peak <= (before.logical_peak > size ? before.logical_peak : size),
               "a failed write left a peak of %llu, a size the file never had",
               (unsigned long long)after.logical_peak);
    FUZZ_CHECK(after.logical_written == before.logical_written,
               "a failed write counted as written");
    t_image_resize(&r->img, size);
    t_image_forget(&r->img, r->pos, len);
}

static void op_read(rig *r, reader *in, int can)
{
    size_t len = rd16(in) % (3 * r->bs + 1);
    int64_t n = bf_file_read(r->f, r->got, len);
    if (n < 0) {
        check_failure(r, n, can, "read");
        FUZZ_CHECK(bf_file_tell(r->f) == r->pos, "failed read moved the position to %llu",
                   (unsigned long long)bf_file_tell(r->f));
        return;
    }
    uint64_t size = r->img.size;
    uint64_t want = r->pos >= size ? 0 : (size - r->pos < len ? size - r->pos : len);
    FUZZ_CHECK((uint64_t)n == want, "read %zu at %llu returned %lld, expected %llu", len,
               (unsigned long long)r->pos, (long long)n, (unsigned long long)want);
    check_known(r, r->pos, r->got, (size_t)n, "read");
    r->pos += want;
}

static void op_truncate(rig *r, reader *in, int can)
{
    uint64_t old = r->img.size;
    uint64_t size = (rd16(in) | (uint64_t)rd8(in) << 16) % (old + r->bs + 1);
    if (size > r->max_size)
        size = r->max_size;
    int rc = bf_file_truncate(r->f, size);
    if (rc != BF_OK) {
        check_failure(r, rc, can, "truncate");
        FUZZ_CHECK(bf_file_size(r->f) == old, "size %llu after a failed truncate from %llu",
                   (unsigned long long)bf_file_size(r->f), (unsigned long long)old);
        size = old;
    }
    t_image_resize(&r->img, size);
}

static void op_block(rig *r, int op, reader *in, int can)
{
    uint64_t nblk = r->max_size / r->bs;
    uint64_t b = rd8(in) % (op == 6 ? nblk + 2 : nblk);
    uint64_t at = b * r->bs, old = r->img.size;
    int rc;
    if (op == 5) {
        fuzz_data(rd8(in) + 77u, r->buf, r->bs);
        rc = bf_file_write_block(r->f, b, r->buf);
        if (rc == BF_OK)
            t_image_write(&r->img, at, r->buf, r->bs);
        else
            FUZZ_CHECK(bf_file_size(r->f) == old, "failed write_block changed the size");
    } else if (op == 6) {
        rc = bf_file_read_block(r->f, b, r->got);
        if (rc == BF_OK)
            check_known(r, at, r->got, r->bs, "read_block");
    } else {
        rc = bf_file_discard_block(r->f, b);
        if (at < old) {
            size_t n = at + r->bs < old ? r->bs : (size_t)(old - at);
            if (rc == BF_OK)
                t_image_write(&r->img, at, memset(r->buf, 0, n), n);
            else
                t_image_forget(&r->img, at, n);
        }
    }
    if (rc != BF_OK)
        check_failure(r, rc, can, op == 5 ? "write_block" : op == 6 ? "read_block" : "discard");
}

static void op_fault(rig *r, int op, reader *in)
{
    uint32_t n = 1 + rd8(in) % 8;
    tally.armed++;
    if (op == 8) {
        static const int errs[3] = {ENOSPC, EIO, ENOSPC};
        uint32_t kind = rd8(in) % 3;
        r->flt.writes = 0;
        r->flt.fail_write_at = n;
        r->flt.fail_errno = errs[kind];
        r->flt.short_write = kind == 2;
        r->flt.short_armed = 0;
    } else if (op == 9) {
        r->flt.reads = 0;
        r->flt.fail_read_at = n;
        r->flt.fail_errno = EIO;
    } else if (op == 10) {
        r->chop_reads = !r->chop_reads;
    } else if (op == 11) {
        r->unbounded |= r->cnt.fail_at == 0 && r->alloc_armed; /* the last one struck */
        r->cnt.fail_at = 1 + rd8(in) % 16;
        r->alloc_armed = 1;
    } else {
        uint32_t room = rd8(in);
        bf_stats st;
        bf_space_stats(r->sp, &st);
        r->limit_set = room != 0;
        bf_space_set_temp_limit(r->sp, room ? st.physical_bytes + room * 64u : 0);
    }
}

/* The block map of `f` meets buffile.h's bound, unless an allocation failed. */
static void check_map(rig *r, const bf_file *f, const char *which)
{
    r->unbounded |= r->cnt.fail_at == 0 && r->alloc_armed;
    uint64_t used = t_map_used(&f->map), mem = bf_map_memory(&f->map);
    FUZZ_CHECK(r->unbounded || mem <= t_map_bound(used, f->map.n),
               "%s: %llu bytes of block map for %llu blocks holding data of %u covered; buffile.h "
               "allows %llu",
               which, (unsigned long long)mem, (unsigned long long)used, f->map.n,
               (unsigned long long)t_map_bound(used, f->map.n));
}

/* ---- the far file ------------------------------------------------------ */

#define MAXB ((uint64_t)BF_MAP_MAX_BLOCK)

/* A far block number: one of the last, one of 4096 or 65537 apart, or one near 0. */
static uint64_t far_blkno(reader *in)
{
    uint32_t kind = rd8(in) % 4, v = rd16(in);
    if (kind == 0)
        return MAXB - v % 4;
    if (kind == 1)
        return (uint64_t)v * 4096;
    if (kind == 2)
        return (uint64_t)v * 65537 % (MAXB + 1);
    return v % 64;
}

static far_blk *far_find(rig *r, uint64_t b)
{
    for (int i = 0; i < r->nfb; i++)
        if (r->fb[i].b == b)
            return &r->fb[i];
    return NULL;
}

/* The model's entry of block b, made (zeros, known) if new; NULL when the model is full. */
static far_blk *far_slot(rig *r, uint64_t b)
{
    far_blk *f = far_find(r, b);
    if (f != NULL || r->nfb == NFAR)
        return f;
    f = &r->fb[r->nfb++];
    f->b = b;
    f->data = calloc(1, r->bs);
    FUZZ_CHECK(f->data != NULL, "out of memory");
    f->known = 1;
    return f;
}

/* Block b of the far file, as read into `got`, is what the model says (unknown: anything). */
static void far_check_block(rig *r, uint64_t b, const unsigned char *got, const char *op)
{
    const far_blk *f = far_find(r, b);
    if (f != NULL && !f->known)
        return;
    for (uint32_t i = 0; i < r->bs; i++) {
        unsigned char want = f != NULL ? f->data[i] : 0;
        FUZZ_CHECK(got[i] == want, "%s: far block %llu byte %u is %u, expected %u", op,
                   (unsigned long long)b, i, got[i], want);
    }
}

/* Every block the model holds, and a few holes, read back; the size is the model's. */
static void far_check_all(rig *r, bf_file *f, const char *op)
{
    FUZZ_CHECK(bf_file_size(f) == r->far_size, "%s: far file size %llu, model %llu", op,
               (unsigned long long)bf_file_size(f), (unsigned long long)r->far_size);
    static const uint64_t holes[3] = {1, 4095, MAXB};
    for (int i = 0; i < r->nfb + 3; i++) {
        uint64_t b = i < r->nfb ? r->fb[i].b : holes[i - r->nfb];
        int rc = bf_file_read_block(f, b, r->got);
        FUZZ_CHECK(rc == BF_OK, "%s: far block %llu: %d (%s)", op, (unsigned long long)b, rc,
                   bf_space_errmsg(r->sp));
        far_check_block(r, b, r->got, op);
    }
}

/* Shrink or grow the model to `size`: blocks past it go, the last one's tail reads as zeros. */
static void far_resize(rig *r, uint64_t size)
{
    for (int i = 0; i < r->nfb;) {
        far_blk *f = &r->fb[i];
        uint64_t start = f->b * r->bs;
        if (start >= size) {
            free(f->data);
            *f = r->fb[--r->nfb];
            continue;
        }
        if (size - start < r->bs)
            memset(f->data + (size - start), 0, r->bs - (size - start));
        i++;
    }
    r->far_size = size;
}

/* Bytes of the far file's segments on disk (its head and index lie inside them). */
static uint64_t far_on_disk(const rig *r)
{
    uint64_t sum = 0;
    char path[4200];
    struct stat st;
    for (uint32_t k = 0;; k++) {
        snprintf(path, sizeof(path), "%s/far.%u", r->set, k);
        if (stat(path, &st) != 0)
            break;
        sum += (uint64_t)st.st_size;
    }
    return sum;
}

/* Append `len` bytes of garbage to `path`. */
static void garbage(rig *r, const char *path, size_t len)
{
    FILE *fp = fopen(path, "ab");
    FUZZ_CHECK(fp != NULL, "cannot plant %s", path);
    memset(r->buf, 0x5a, len);
    FUZZ_CHECK(fwrite(r->buf, 1, len, fp) == len, "cannot write %s", path);
    fclose(fp);
}

/*
 * A named far file: persisted by close, a killed session's leftovers
 * planted (segments past the index's, bytes past its end: `plant`), and
 * opened read-write again with the N-th unlink failing; a failed open says
 * BF_EIO and is tried again. The writer's physical bytes are then what its
 * files hold on disk: nothing planted stayed.
 */
static void far_reopen(rig *r, reader *in, int plant)
{
    uint32_t extra = rd8(in) % 4, tail = rd16(in), fail = 1 + rd8(in) % 3;
    disarm(r);
    FUZZ_CHECK(bf_file_close(r->far) == BF_OK, "close of the far file: %s", bf_space_errmsg(r->sp));
    r->far = NULL;
    if (plant) {
        char path[4200];
        uint32_t k = 0;
        for (;; k++) {
            snprintf(path, sizeof(path), "%s/far.%u", r->set, k);
            if (access(path, F_OK) != 0)
                break;
        }
        struct stat st;
        snprintf(path, sizeof(path), "%s/far.%u", r->set, k - 1);
        uint64_t seg = r->sp->segment_size;
        if (stat(path, &st) == 0 && (uint64_t)st.st_size < seg)
            garbage(r, path, (size_t)(tail % (seg - (uint64_t)st.st_size + 1)) % (3 * r->bs));
        for (uint32_t j = 0; j < extra; j++) {
            snprintf(path, sizeof(path), "%s/far.%u", r->set, k + j);
            garbage(r, path, (size_t)(tail % (3 * r->bs)));
        }
        r->flt.meta_mask = T_META_UNLINK;
        r->flt.metas = 0;
        r->flt.fail_meta_at = fail;
        r->flt.fail_errno = EIO;
    }
    int rc = bf_file_open_named(r->sp, r->set, "far", BF_OPEN_READWRITE, &r->far);
    disarm(r);
    if (rc != BF_OK) {
        FUZZ_CHECK(plant && rc == BF_EIO, "read-write open of the far file: %d (%s)", rc,
                   bf_space_errmsg(r->sp));
        rc = bf_file_open_named(r->sp, r->set, "far", BF_OPEN_READWRITE, &r->far);
        FUZZ_CHECK(rc == BF_OK, "read-write open of the far file, tried again: %d (%s)", rc,
                   bf_space_errmsg(r->sp));
    }
    bf_stats st;
    bf_file_stats(r->far, &st);
    FUZZ_CHECK(st.physical_bytes == far_on_disk(r),
               "reopened far file: physical_bytes %llu, its files hold %llu on disk",
               (unsigned long long)st.physical_bytes, (unsigned long long)far_on_disk(r));
    far_check_all(r, r->far, "reopened far file");
}

static void far_op(rig *r, int op, reader *in, int can)
{
    uint64_t max_size = (MAXB + 1) * r->bs;
    if (op == 14 || op == 15) {
        uint64_t b = far_blkno(in);
        if (op == 15) {
            int rc = bf_file_read_block(r->far, b, r->got);
            if (rc != BF_OK)
                check_failure(r, rc, can, "far read_block");
            else
                far_check_block(r, b, r->got, "far read_block");
            return;
        }
        if (far_find(r, b) == NULL && r->nfb == NFAR)
            return;
        fuzz_data(rd8(in) + 991u, r->buf, r->bs);
        uint64_t old = bf_file_size(r->far);
        int rc = bf_file_write_block(r->far, b, r->buf);
        if (rc != BF_OK) {
            check_failure(r, rc, can, "far write_block");
            FUZZ_CHECK(bf_file_size(r->far) == old, "failed far write_block changed the size");
            return;
        }
        memcpy(far_slot(r, b)->data, r->buf, r->bs);
        if ((b + 1) * r->bs > r->far_size)
            r->far_size = (b + 1) * r->bs;
        return;
    }
    uint32_t sub = rd8(in) % 5;
    if (sub == 0) { /* the last byte of the largest file */
        far_blk *f = far_slot(r, MAXB);
        if (f == NULL)
            return;
        unsigned char v = (unsigned char)(rd8(in) | 1);
        uint64_t old = r->far_size;
        FUZZ_CHECK(bf_file_seek(r->far, (int64_t)(max_size - 1), BF_SEEK_SET) == BF_OK, "seek");
        int rc = bf_file_write(r->far, &v, 1);
        if (rc == BF_OK) {
            f->data[r->bs - 1] = v;
            r->far_size = max_size;
        } else {
            check_failure(r, rc, can, "far write of the last byte");
            r->far_size = bf_file_size(r->far);
            FUZZ_CHECK(r->far_size == old || r->far_size == max_size,
                       "failed write of the last byte: size %llu -> %llu", (unsigned long long)old,
                       (unsigned long long)r->far_size);
            f->known = 0;
        }
        /* The largest file holds no byte more. */
        FUZZ_CHECK(bf_file_seek(r->far, (int64_t)max_size, BF_SEEK_SET) == BF_OK, "seek");
        FUZZ_CHECK(bf_file_write(r->far, &v, 1) == BF_EINVAL, "a write past the largest file");
        FUZZ_CHECK(bf_file_write_block(r->far, MAXB + 1, r->buf) == BF_EINVAL,
                   "write_block past the largest block");
    } else if (sub == 1) { /* a far size, or the largest, or one byte more */
        uint64_t size = far_blkno(in) * r->bs + rd16(in) % r->bs;
        uint32_t edge = rd8(in) % 8;
        if (edge < 2)
            size = max_size + edge;
        int rc = bf_file_truncate(r->far, size);
        if (size > max_size) {
            FUZZ_CHECK(rc == BF_EINVAL, "truncate past the largest file size: %d", rc);
        } else if (rc != BF_OK) {
            check_failure(r, rc, can, "far truncate");
            FUZZ_CHECK(bf_file_size(r->far) == r->far_size, "failed far truncate changed the size");
        } else {
            far_resize(r, size);
        }
    } else if (sub == 2) {
        uint64_t b = far_blkno(in);
        int rc = bf_file_discard_block(r->far, b);
        FUZZ_CHECK(rc == BF_OK, "discard of far block %llu: %d (%s)", (unsigned long long)b, rc,
                   bf_space_errmsg(r->sp));
        far_blk *f = far_find(r, b);
        if (f != NULL) {
            memset(f->data, 0, r->bs);
            f->known = 1;
        }
    } else if (r->set[0] != '\0') {
        far_reopen(r, in, sub == 4);
    }
}

/*
 * A cursor on the file follows every step while no fault is armed: it
 * reads the 300 bytes before the file's position and must agree with every
 * byte the model knows, whatever the steps wrote, truncated, discarded or
 * flushed since it loaded its block (src/cursor.c: the write generation).
 * Arming a fault resets its counter, so these reads move no fault's
 * schedule, and they read no input: the corpus means what it meant.
 */
static void cursor_follow(rig *r)
{
    if (armed(r) != 0)
        return;
    if (r->cur == NULL)
        FUZZ_CHECK(bf_cursor_open(r->f, &r->cur) == BF_OK, "cursor: %s", bf_space_errmsg(r->sp));
    uint64_t at = r->pos > 300 ? r->pos - 300 : 0, size = r->img.size;
    FUZZ_CHECK(bf_cursor_seek(r->cur, (int64_t)at, BF_SEEK_SET) == BF_OK, "cursor seek");
    int64_t n = bf_cursor_read(r->cur, r->got, 300);
    uint64_t want = at >= size ? 0 : (size - at < 300 ? size - at : 300);
    FUZZ_CHECK(n == (int64_t)want, "cursor read of 300 at %llu returned %lld, expected %llu: %s",
               (unsigned long long)at, (long long)n, (unsigned long long)want,
               bf_space_errmsg(r->sp));
    check_known(r, at, r->got, (size_t)n, "cursor read");
    FUZZ_CHECK(bf_cursor_tell(r->cur) == at + want, "cursor position after its read");
}

static void step(rig *r, reader *in)
{
    int op = (int)(rd8(in) % 17);
    int can = armed(r);
    tally.ops++;
    switch (op) {
    case 0: op_write(r, in, can); break;
    case 1: op_read(r, in, can); break;
    case 2: {
        int whence = (int)(rd8(in) % 3);
        uint64_t target = rd16(in) % (r->img.size + 2ull * r->bs + 1);
        if (target > r->max_size)
            target = r->max_size;
        int64_t base = whence == BF_SEEK_SET ? 0
                       : whence == BF_SEEK_CUR ? (int64_t)r->pos
                                               : (int64_t)r->img.size;
        FUZZ_CHECK(bf_file_seek(r->f, (int64_t)target - base, whence) == BF_OK, "seek");
        r->pos = target;
        break;
    }
    case 3: op_truncate(r, in, can); break;
    case 4: {
        int rc = bf_file_flush(r->f);
        if (rc != BF_OK)
            check_failure(r, rc, can, "flush");
        break;
    }
    case 5: case 6: case 7: op_block(r, op, in, can); break;
    case 8: case 9: case 10: case 11: case 12: op_fault(r, op, in); break;
    case 13:
        disarm(r);
        check_whole(r);
        break;
    default:
        far_op(r, op, in, can);
        check_map(r, r->far, "far file");
        break;
    }
    check_map(r, r->f, "file");
    FUZZ_CHECK(bf_file_tell(r->f) == r->pos, "tell %llu, model %llu",
               (unsigned long long)bf_file_tell(r->f), (unsigned long long)r->pos);
    FUZZ_CHECK(bf_file_size(r->f) == r->img.size, "size %llu, model %llu",
               (unsigned long long)bf_file_size(r->f), (unsigned long long)r->img.size);
    cursor_follow(r);
}

/* A device figure of an earlier space, some no space could measure. */
static double figure(reader *in)
{
    static const double v[] = {0,   0.25,    1,        4.5,       20,     250,  1e4,
                               1e6, 1e6 + 1, 2e6,      1e9,       1.8e19, 1e20, 1e300,
                               -1,  NAN,     INFINITY, -INFINITY, 0.35,   1.5};
    return v[rd8(in) % (sizeof(v) / sizeof(v[0]))];
}

/*
 * The space, with codec=auto started from figures read from the input when
 * `seeded`: bf_space_create takes them exactly when buffile.h says a space
 * could have measured them (else the space starts from nothing).
 */
static bf_space *ops_space(reader *in, bf_codec codec, int seeded, uint32_t bs, uint64_t seg,
                           const bf_allocator *alloc)
{
    if (!seeded)
        return fuzz_space(codec, bs, seg, alloc);
    bf_auto_device d = BF_AUTO_DEVICE_INIT;
    d.device_ns = figure(in);
    d.pace_ns = figure(in);
    d.limited_share = figure(in);
    d.transfer_ns = figure(in);
    d.since_wait = (uint64_t)rd16(in) << 10;
    d.device_runs = rd8(in);
    d.pace_windows = rd8(in);
    d.share_windows = rd8(in);
    d.transfer_windows = rd8(in);
    d.read_device_ns = figure(in);
    d.read_transfer_ns = figure(in);
    d.read_runs = rd8(in);
    d.read_transfer_windows = rd8(in);
    d.read_share_windows = rd8(in);
    d.read_limited_windows = rd8(in); /* above the share half the time: refused */
    d.request_ns = figure(in);
    d.request_fits = rd8(in);
    double sign = rd8(in) & 1 ? -1 : 1; /* a slope may be below 0 */
    d.slope_ns = sign * figure(in);     /* NaN and 1e300 either way: refused */
    d.read_slope_ns = figure(in);
    d.slope_windows = rd8(in);
    d.read_slope_windows = rd8(in);
    d.read_overlap = figure(in);
    d.read_overlap_windows = rd8(in);
    d.moved_ns = figure(in);
    d.moved_fits = rd8(in);
    bf_space *sp = NULL;
    char err[256] = "";
    int rc = fuzz_space_create(BF_CODEC_AUTO, bs, seg, alloc, &d, &sp, err, sizeof(err));
    FUZZ_CHECK((rc == BF_OK) == t_device_measurable(&d),
               "device figures %g, %g, share %g, transfer %g, reads %g: bf_space_create %d (%s)",
               d.device_ns, d.pace_ns, d.limited_share, d.transfer_ns, d.read_device_ns, rc, err);
    return rc == BF_OK ? sp : fuzz_space(BF_CODEC_AUTO, bs, seg, alloc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t sizes[4] = {4096, 8192, 65536, 4096};
    reader in = {data, size};
    uint32_t cfg = rd8(&in);
    if (tally.runs++ == 0)
        atexit(print_tally);
    bf_codec codecs[4];
    int nc = fuzz_codecs(codecs);
    rig *r = calloc(1, sizeof(*r));
    FUZZ_CHECK(r != NULL, "out of memory");
    r->bs = sizes[(cfg >> 2) & 3];
    r->max_size = r->bs < 65536 ? 40ull * r->bs : 16ull * r->bs;
    r->buf = malloc(3 * (size_t)r->bs + 1);
    r->got = malloc(3 * (size_t)r->bs + 1);
    FUZZ_CHECK(r->buf && r->got, "out of memory");
    t_counting_init(&r->cnt);
    uint64_t seg = cfg & 16 ? ((2 * ((uint64_t)r->bs + 4096) + 4095) / 4096) * 4096 : 0;
    r->sp = ops_space(&in, codecs[(cfg & 3) % nc], (cfg & 32) != 0, r->bs, seg, &r->cnt.hooks);
    r->inner = t_fault_io(&r->flt);
    bf_io io = {pass_open, pass_close, pass_pwritev, chop_pread, pass_ftruncate, pass_unlink, r};
    bf_space_set_io(r->sp, &io);
    FUZZ_CHECK(bf_file_create(r->sp, NULL, &r->f) == BF_OK, "create: %s",
               bf_space_errmsg(r->sp));
    if (cfg & 64) {
        snprintf(r->set, sizeof(r->set), "%s/set", fuzz_parent());
        FUZZ_CHECK(bf_fileset_create(r->sp, r->set) == BF_OK, "fileset: %s",
                   bf_space_errmsg(r->sp));
        FUZZ_CHECK(bf_file_create_named(r->sp, r->set, "far", NULL, &r->far) == BF_OK,
                   "create the far file: %s", bf_space_errmsg(r->sp));
    } else {
        FUZZ_CHECK(bf_file_create(r->sp, NULL, &r->far) == BF_OK, "create the far file: %s",
                   bf_space_errmsg(r->sp));
    }
    for (int i = 0; i < MAX_OPS && in.n > 0; i++)
        step(r, &in);

    disarm(r);
    far_check_all(r, r->far, "far file at the end");
    FUZZ_CHECK(bf_file_close(r->far) == BF_OK, "close of the far file: %s", bf_space_errmsg(r->sp));
    if (r->set[0] != '\0') {
        bf_file *g = NULL;
        int rc = bf_file_open_named(r->sp, r->set, "far", BF_OPEN_READONLY, &g);
        FUZZ_CHECK(rc == BF_OK, "the far file does not reopen: %d (%s)", rc,
                   bf_space_errmsg(r->sp));
        far_check_all(r, g, "far file reopened");
        FUZZ_CHECK(bf_file_close(g) == BF_OK, "close");
        FUZZ_CHECK(bf_fileset_destroy(r->sp, r->set) == BF_OK, "fileset destroy: %s",
                   bf_space_errmsg(r->sp));
    }
    for (int i = 0; i < r->nfb; i++)
        free(r->fb[i].data);
    check_whole(r);
    FUZZ_CHECK(bf_file_flush(r->f) == BF_OK, "flush with no fault: %s", bf_space_errmsg(r->sp));
    check_whole(r);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(r->sp));
    cursor_follow(r);
    bf_cursor_close(r->cur);
    FUZZ_CHECK(bf_file_close(r->f) == BF_OK, "close: %s", bf_space_errmsg(r->sp));
    FUZZ_CHECK(t_dir_entries(dir) == 0, "segment files left after close");
    bf_space_destroy(r->sp);
    FUZZ_CHECK(r->cnt.live_bytes == 0, "%lld bytes not freed", (long long)r->cnt.live_bytes);
    t_image_free(&r->img);
    free(r->buf);
    free(r->got);
    free(r);
    return 0;
}

/*
 * Seeds: random programs, with and without fault operations, for each
 * config; from the 13th on also with far-file operations, codec=auto
 * started from figures (every third) and a named far file (every other).
 */
int fuzz_write_seeds(const char *dir)
{
    static unsigned char prog[400];
    for (int s = 0; s < 18; s++) {
        t_rng rng = {4242u + (uint64_t)s};
        int faults = s % 3 != 0, far = s >= 12;
        size_t n = 0;
        prog[n++] = (unsigned char)(s % 4 | ((s / 4) % 3) << 2 | (s % 2) << 4 |
                                    (far && s % 3 == 0) << 5 | (far && s % 2 == 0) << 6);
        while (n + 6 <= sizeof(prog)) {
            uint32_t op = (uint32_t)t_below(&rng, far ? 17 : faults ? 14 : 8);
            prog[n++] = (unsigned char)op;
            for (int k = 0; k < 5; k++)
                prog[n++] = (unsigned char)t_next(&rng);
        }
        char name[64];
        snprintf(name, sizeof(name), "prog-%02d-%s", s, far ? "far" : faults ? "faults" : "plain");
        /* fuzz_seed prepends a flag byte: here it is the config byte itself. */
        fuzz_seed(dir, name, prog[0], prog + 1, n - 1);
    }
    return 0;
}

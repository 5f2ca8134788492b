/*
 * fuzz_ops.c - random operation sequences against an in-memory model,
 * with faults injected between them.
 *
 * The input is a program: a config byte (bits 0-1 codec, 2-3 block size
 * 4/8/64 KiB, bit 4 smallest segment size), then operations, each an op
 * byte and its argument bytes (missing bytes read as 0). Operations: the
 * stream and block calls of the file API, and faults - the N-th pwritev
 * fails (ENOSPC, EIO, or short then ENOSPC), the N-th pread fails (EIO),
 * reads come back short, the N-th allocation fails, a temp limit just
 * above the current use. The model is a t_image: bytes known to be in the
 * file; a failed write makes its range unknown, as buffile.h allows.
 * Properties after every call: with no fault armed it succeeds; a failure
 * has a status the armed fault can cause (never BF_ECORRUPT) and a
 * message; position, size and peaks follow the documented rules (a
 * failed read or truncate changes neither); every known byte read is right. At the end, faults off: the whole file matches,
 * close leaves no file behind and every allocated byte is freed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int pass_rename(void *ctx, const char *from, const char *to)
{
    rig *r = ctx;
    return r->inner.rename(r->inner.ctx, from, to);
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
    r->flt.fail_write_at = r->flt.fail_read_at = 0;
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
        r->cnt.fail_at = 1 + rd8(in) % 16;
    } else {
        uint32_t room = rd8(in);
        bf_stats st;
        bf_space_stats(r->sp, &st);
        r->limit_set = room != 0;
        bf_space_set_temp_limit(r->sp, room ? st.physical_bytes + room * 64u : 0);
    }
}

static void step(rig *r, reader *in)
{
    int op = (int)(rd8(in) % 14);
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
    default:
        disarm(r);
        check_whole(r);
        break;
    }
    FUZZ_CHECK(bf_file_tell(r->f) == r->pos, "tell %llu, model %llu",
               (unsigned long long)bf_file_tell(r->f), (unsigned long long)r->pos);
    FUZZ_CHECK(bf_file_size(r->f) == r->img.size, "size %llu, model %llu",
               (unsigned long long)bf_file_size(r->f), (unsigned long long)r->img.size);
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
    r->sp = fuzz_space(codecs[(cfg & 3) % nc], r->bs, seg, &r->cnt.hooks);
    r->inner = t_fault_io(&r->flt);
    bf_io io = {pass_open, pass_close, pass_pwritev, chop_pread, pass_ftruncate, pass_unlink,
                pass_rename, r};
    bf_space_set_io(r->sp, &io);
    FUZZ_CHECK(bf_file_create(r->sp, NULL, &r->f) == BF_OK, "create: %s",
               bf_space_errmsg(r->sp));
    for (int i = 0; i < MAX_OPS && in.n > 0; i++)
        step(r, &in);

    disarm(r);
    check_whole(r);
    FUZZ_CHECK(bf_file_flush(r->f) == BF_OK, "flush with no fault: %s", bf_space_errmsg(r->sp));
    check_whole(r);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(r->sp));
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

/* Seeds: random programs, with and without fault operations, for each config. */
int fuzz_write_seeds(const char *dir)
{
    static unsigned char prog[400];
    for (int s = 0; s < 12; s++) {
        t_rng rng = {4242u + (uint64_t)s};
        int faults = s % 3 != 0;
        size_t n = 0;
        prog[n++] = (unsigned char)(s % 4 | ((s / 4) % 3) << 2 | (s % 2) << 4);
        while (n + 6 <= sizeof(prog)) {
            uint32_t op = (uint32_t)t_below(&rng, faults ? 14 : 8);
            prog[n++] = (unsigned char)op;
            for (int k = 0; k < 5; k++)
                prog[n++] = (unsigned char)t_next(&rng);
        }
        char name[64];
        snprintf(name, sizeof(name), "prog-%02d-%s", s, faults ? "faults" : "plain");
        /* fuzz_seed prepends a flag byte: here it is the config byte itself. */
        fuzz_seed(dir, name, prog[0], prog + 1, n - 1);
    }
    return 0;
}

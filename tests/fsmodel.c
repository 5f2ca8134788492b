/*
 * fsmodel.c - the file-set model engine (see fsmodel.h).
 *
 * The model: per name slot ("f0".."f11") whether the name is free, taken
 * by a writer that never persisted, or persisted (then the t_image of its
 * last persisted contents, a version number bumped at each persist, whether
 * it was consumed by an append, and which names its persisted parts come
 * from); per open handle its kind (anonymous, created, opened read-write,
 * exported, opened read-only), its own t_image, position, statistics the
 * contract fixes, the names spliced into it, and for read-only handles the
 * version they read. A read-only handle whose name was persisted again
 * since it opened is *stale*: it may read its own version or fail with
 * BF_ECORRUPT, never other bytes.
 *
 * Coordination is the caller's (buffile.h), so the model never does what a
 * caller must not: two writable handles on one name, deleting a name with
 * open handles or one that an open handle splices, a read-write session on
 * a name that an open view splices, appending a stale or writable-named
 * source, or a view as a source.
 *
 * Avoid patterns (fsm_config.avoid): "multi-append" (no append onto a
 * handle that already holds parts: defect 1 of the eleven file-set defects
 * in docs/reliability.md hangs a release build there), "anon-unlink" (no
 * failing unlink while an anonymous file closes: defect 2 is a
 * use-after-free), "view" (no appends onto read-only targets),
 * "open-alloc" (no failing allocation in an open: opening a file with parts
 * then dereferences an uninitialised part, a crash beyond the eleven);
 * and of the edge operations: "stale-append", "plant", "far", "seed" (auto
 * spaces start from nothing).
 *
 * The edge operations (not with fsm_config.classic): an append of a stale
 * read-only source, which buffile.h refuses (BF_EINVAL); leftovers of a
 * killed read-write session planted on disk (segments past the index's,
 * bytes past its end), often followed by a read-write open that removes
 * them under a fault; a file written at the largest block numbers, or
 * sparsely far out, persisted and reopened, with an append at the limit;
 * codec=auto spaces started from device figures, sometimes absurd ones, whose
 * choices are forced at random each step so that a sequence replays exactly.
 * After every call the block map of every handle must meet buffile.h's
 * memory bound, and a failed close must leave the sources it consumed since
 * its last persist free again.
 */
#include "fsmodel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buffile.h"
#include "file.h"
#include "space.h"
#include "support.h"

#define NSP 3     /* spaces under test: W (writer), R (reader, small limit), X (writer) */
#define VSP NSP   /* the verifier space: no faults, no limit, only reopens to compare */
#define NNAMES 12 /* name slots */
#define NH 14     /* open handles at most */
#define MAXBLK 24 /* stream and block writes stay below this many blocks */
#define MAXALL 96 /* appends keep a target below this many blocks */

enum { H_ANON, H_CREATED, H_RW, H_EXPORTED, H_RO };
enum { N_ABSENT, N_CREATED, N_PERSISTED };
enum { C_NO, C_YES, C_MAYBE };
enum { F_NONE, F_WRITE, F_READ, F_META, F_ALLOC, F_LIMIT };
/* What an operation may do, hence which armed faults may fail it. */
enum {
    A_WRITE = 1,
    A_READ = 2,
    A_OPEN = 4,
    A_TRUNC = 8, /* ftruncate, unlink */
    A_ALLOC = 32,
    A_LIMIT = 64,
    A_ALL = 127
};

static const char *const kind_names[] = {"anonymous", "created", "read-write", "exported",
                                         "read-only"};

typedef struct fhandle {
    int used;
    bf_file *f;
    int sp, name, kind;
    uint32_t version; /* read-only kinds: the name's version it reads */
    t_image img;
    uint64_t pos, peak, read, written;
    uint64_t parts;    /* names whose data this handle splices (bit per name slot) */
    int nparts;        /* parts it holds (from its index or appends) */
    int view;          /* appended onto while read-only */
    uint64_t consumed; /* names this writable handle consumed since it last persisted */
    int unbounded;     /* an allocation failed in its space since it opened: see disarm */
    int64_t dirty_lo;  /* lowest block written partially since the buffer was last clean; -1 */
} fhandle;

typedef struct fname {
    int state;
    t_image persisted;
    uint32_t version;
    int consumed;
    uint64_t parts;
    int nparts;
    int writer; /* handle of the writable handle, -1 */
} fname;

typedef struct fspace {
    bf_space *sp;
    t_counting cnt;
    t_faults flt;
    bf_io io;
    uint64_t limit;  /* the temp limit now (0: none) */
    uint64_t base;   /* the permanent one */
    int limit_steps; /* steps left of a temporary limit */
    uint64_t created_ok, created_failed;
    uint64_t closed_read, closed_written, closed_blocks;
    char dir[600];
} fspace;

struct fsm {
    fsm_config cfg;
    t_rng rng, drng;
    char set[600];
    uint32_t bs;
    uint64_t segsize;
    fspace s[NSP + 1];
    fhandle h[NH];
    fname n[NNAMES];
    int step;
    const char *op;
    int fk, fsp;        /* the fault armed for this step and its space */
    uint64_t unlink_at; /* op_plant: the open that follows fails its unlink_at-th unlink (0: arm) */
    unsigned last_what; /* what the last causes() call allowed for, and its bound */
    uint64_t last_need;
    unsigned fmeta; /* T_META_* kinds of an armed metadata fault */
    int abandoned;
    int finishing; /* fsm_finish: no faults any more */
    FILE *rec;     /* the recording (fsm_config.record) */
    unsigned char *buf, *got;
    int fds_at_start;
};

/* ---- process-wide tallies, first occurrences, watchdog ------------------ */

static uint64_t g_steps, g_seqs, g_tolerated;
static struct timespec g_t0;
static char g_seen[64][40];
static int g_nseen;
static char g_where[512]; /* what the current step is, for the watchdog */

uint64_t fsm_total_steps(void)
{
    return g_steps;
}

uint64_t fsm_total_tolerated(void)
{
    return g_tolerated;
}

static double elapsed(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - g_t0.tv_sec) + (double)(t.tv_nsec - g_t0.tv_nsec) / 1e9;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char pre[] = "fsmodel: a step did not return in time (hang): ";
    ssize_t w = write(2, pre, sizeof(pre) - 1);
    w += write(2, g_where, strlen(g_where));
    w += write(2, "\n", 1);
    (void)w;
    abort();
}

/* Is `tag` in the comma-separated `list`? "all" lists every tag, "all-but:a,b" all others. */
static int listed(const char *list, const char *tag)
{
    if (list == NULL || *list == '\0')
        return 0;
    if (strcmp(list, "all") == 0)
        return 1;
    if (strncmp(list, "all-but:", 8) == 0)
        return !listed(list + 8, tag);
    size_t tl = strlen(tag);
    for (const char *p = list; (p = strstr(p, tag)) != NULL; p += tl)
        if ((p == list || p[-1] == ',') && (p[tl] == '\0' || p[tl] == ','))
            return 1;
    return 0;
}

static void context(const fsm *m, char *buf, size_t len)
{
    if (m->cfg.pick == NULL)
        snprintf(buf, len, "seed=%llu bs=%u seg=%llu step=%d op=%s (replay: BF_SEED=%llu)",
                 (unsigned long long)m->cfg.seed, m->bs, (unsigned long long)m->segsize, m->step,
                 m->op ? m->op : "-", (unsigned long long)m->cfg.seed);
    else
        snprintf(buf, len, "bs=%u seg=%llu step=%d op=%s", m->bs, (unsigned long long)m->segsize,
                 m->step, m->op ? m->op : "-");
}

/* A check failed: fail the run, or count a tolerated tag (0 is returned then). */
static int check_failed(fsm *m, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int check_failed(fsm *m, const char *tag, const char *fmt, ...)
{
    char what[1024], ctx[256], msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    context(m, ctx, sizeof(ctx));
    snprintf(msg, sizeof(msg), "fsmodel [%s]: %s | %s", tag, what, ctx);
    if (!listed(m->cfg.tolerate, tag)) {
        m->cfg.fail(m->cfg.fail_ctx, msg);
        abort(); /* fail must not return */
    }
    g_tolerated++;
    for (int i = 0; i < g_nseen; i++)
        if (strcmp(g_seen[i], tag) == 0)
            return 0;
    if (g_nseen < 64)
        snprintf(g_seen[g_nseen++], sizeof(g_seen[0]), "%s", tag);
    fprintf(stderr, "fsmodel: first [%s] in sequence %llu after %llu steps in all (%.1f s): %s\n",
            tag, (unsigned long long)g_seqs, (unsigned long long)g_steps, elapsed(), msg);
    return 0;
}

#define CHECK(m, tag, cond, ...) ((cond) ? 1 : check_failed((m), (tag), __VA_ARGS__))

/* A tolerated failure the model cannot follow: stop this sequence. */
#define CHECK_OR_ABANDON(m, tag, cond, ...)                                                        \
    do {                                                                                           \
        if (!CHECK(m, tag, cond, __VA_ARGS__)) {                                                   \
            (m)->abandoned = 1;                                                                    \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Append `v` as `bytes` big-endian bytes to the recording, if any. */
static void record(fsm *m, uint64_t v, int bytes)
{
    if (m->rec == NULL)
        return;
    for (int i = bytes - 1; i >= 0; i--)
        fputc((int)((v >> (8 * i)) & 0xff), m->rec);
}

static uint64_t pick(fsm *m, uint64_t n)
{
    if (n <= 1)
        return 0;
    if (m->cfg.pick)
        return m->cfg.pick(m->cfg.pick_ctx, n) % n;
    uint64_t v = t_below(&m->rng, n);
    record(m, v, n <= 256 ? 1 : n <= 65536 ? 2 : 4);
    return v;
}

static int avoid(const fsm *m, const char *what)
{
    return listed(m->cfg.avoid, what);
}

/* ---- small helpers ---------------------------------------------------- */

static void name_str(int i, char *buf, size_t len)
{
    snprintf(buf, len, "f%d", i);
}

static const char *sname(int i)
{
    static char b[4][16];
    static int k;
    k = (k + 1) & 3;
    name_str(i, b[k], sizeof(b[k]));
    return b[k];
}

static const char *errmsg(const fsm *m, int spi)
{
    return bf_space_errmsg(m->s[spi].sp);
}

static void img_copy(t_image *dst, const t_image *src)
{
    t_image_free(dst);
    t_image_resize(dst, src->size);
    if (src->size > 0) {
        memcpy(dst->d, src->d, src->size);
        memcpy(dst->known, src->known, src->size);
    }
}

static void img_splice(t_image *dst, uint64_t at, const t_image *src)
{
    t_image_resize(dst, at + src->size);
    if (src->size > 0) {
        memcpy(dst->d + at, src->d, src->size);
        memcpy(dst->known + at, src->known, src->size);
    }
}

/* Byte `i` of the model: 1 and *v when known (zeros past the end are known). */
static int img_byte(const t_image *im, uint64_t i, unsigned char *v)
{
    if (i >= im->size) {
        *v = 0;
        return 1;
    }
    *v = im->d[i];
    return im->known[i];
}

static int is_ro(const fhandle *h)
{
    return h->kind == H_EXPORTED || h->kind == H_RO;
}

static int stale(const fsm *m, const fhandle *h)
{
    return is_ro(h) && h->name >= 0 && m->n[h->name].version != h->version;
}

/* Handles counted against their space: what it writes (exported ones are undecided). */
static int counted(const fhandle *h, int with_exported)
{
    return h->kind == H_ANON || h->kind == H_CREATED || h->kind == H_RW ||
           (with_exported && h->kind == H_EXPORTED);
}

static int open_fds(void)
{
    return t_dir_entries("/proc/self/fd");
}

/*
 * Bytes of the segments "<name>.<digits>" in the set (the index lies inside
 * them); returns how many there are, and with `seg0` whether "<name>.0" is
 * one of them. Other "<name>.*" entries are listed in g_other.
 */
static char g_other[256];

static int name_files(const fsm *m, int ni, uint64_t *bytes, int *seg0)
{
    g_other[0] = '\0';
    char pre[32];
    snprintf(pre, sizeof(pre), "f%d.", ni);
    size_t pl = strlen(pre);
    DIR *d = opendir(m->set);
    int n = 0;
    *bytes = 0;
    if (seg0)
        *seg0 = 0;
    if (d == NULL)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, pre, pl) != 0)
            continue;
        const char *rest = de->d_name + pl;
        int digits = *rest != '\0' && strspn(rest, "0123456789") == strlen(rest);
        if (!digits) {
            size_t ol = strlen(g_other), dl = strlen(de->d_name);
            if (ol + dl + 2 < sizeof(g_other)) {
                g_other[ol] = ' ';
                memcpy(g_other + ol + 1, de->d_name, dl + 1);
            }
            continue;
        }
        n++;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", m->set, de->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            *bytes += (uint64_t)st.st_size;
        if (seg0 && strcmp(rest, "0") == 0)
            *seg0 = 1;
    }
    closedir(d);
    return n;
}

/* ---- faults ----------------------------------------------------------- */

static void disarm(fsm *m)
{
    /* An allocation that failed may have left a block map holding more than the bound: the
       handles of that space are not held to it any more (buffile.h: failures aside). */
    if (m->fk == F_ALLOC && m->s[m->fsp].cnt.fail_at == 0)
        for (int i = 0; i < NH; i++)
            if (m->h[i].used && m->h[i].sp == m->fsp)
                m->h[i].unbounded = 1;
    for (int i = 0; i <= NSP; i++) {
        t_faults *f = &m->s[i].flt;
        f->fail_write_at = f->fail_read_at = f->fail_meta_at = 0;
        f->short_armed = f->short_write = 0;
        f->meta_mask = 0;
        m->s[i].cnt.fail_at = 0;
    }
    m->fk = F_NONE;
}

/* Temp limits: a temporary one counts down and gives way to the space's own. */
static void limit_tick(fsm *m)
{
    for (int i = 0; i < NSP; i++) {
        fspace *s = &m->s[i];
        if (s->limit_steps > 0 && --s->limit_steps == 0) {
            s->limit = s->base;
            bf_space_set_temp_limit(s->sp, s->limit);
        }
    }
}

static void arm(fsm *m, int spi)
{
    disarm(m);
    if (m->finishing)
        return;
    fspace *s = &m->s[spi];
    t_faults *f = &s->flt;
    uint64_t k = pick(m, 100);
    if (k >= 35)
        return;
    m->fsp = spi;
    f->writes = f->reads = f->metas = 0;
    f->fail_errno = pick(m, 2) ? ENOSPC : EIO;
    if (k < 10) {
        m->fk = F_WRITE;
        f->fail_write_at = 1 + pick(m, 4);
        f->short_write = pick(m, 3) == 0;
    } else if (k < 15) {
        m->fk = F_READ;
        f->fail_read_at = 1 + pick(m, 4);
        f->fail_errno = EIO;
    } else if (k < 23) {
        static const unsigned kinds[4] = {0, T_META_OPEN, T_META_FTRUNCATE, T_META_UNLINK};
        m->fk = F_META;
        f->meta_mask = kinds[pick(m, 4)];
        m->fmeta = f->meta_mask ? f->meta_mask : 7u;
        f->fail_meta_at = 1 + pick(m, 3);
    } else if (k < 29) {
        m->fk = F_ALLOC;
        s->cnt.fail_at = 1 + pick(m, 12);
    } else {
        bf_stats st;
        bf_space_stats(s->sp, &st);
        s->limit = st.physical_bytes + pick(m, 3 * (uint64_t)(m->bs + 64));
        s->limit_steps = 1 + (int)pick(m, 6);
        bf_space_set_temp_limit(s->sp, s->limit);
    }
}

/* Physical bytes of the files the contract counts against space `spi`. */
static uint64_t usage(const fsm *m, int spi)
{
    uint64_t u = 0;
    for (int i = 0; i < NH; i++) {
        const fhandle *h = &m->h[i];
        if (h->used && h->sp == spi && counted(h, 1)) {
            bf_stats st;
            bf_file_stats(h->f, &st);
            u += st.physical_bytes;
        }
    }
    return u;
}

/* Statuses (bit -status) the armed fault may cause for an operation that may do `what`. */
#define ST(s) (1u << (unsigned)(-(s)))

static unsigned causes(fsm *m, int spi, unsigned what, uint64_t need)
{
    unsigned st = 0;
    m->last_what = what;
    m->last_need = need;
    if (spi == m->fsp) {
        if (m->fk == F_WRITE && (what & A_WRITE))
            st |= ST(BF_ENOSPC) | ST(BF_EIO);
        if (m->fk == F_READ && (what & A_READ))
            st |= ST(BF_EIO);
        if (m->fk == F_META) {
            if ((m->fmeta & T_META_OPEN) && (what & A_OPEN))
                st |= ST(BF_EIO) | ST(BF_ENOSPC);
            /* A write may ftruncate too: it extends a segment over the gap an extent
               skips, and cuts (or unlinks) what a failed write at the end left. */
            if ((m->fmeta & (T_META_FTRUNCATE | T_META_UNLINK)) && (what & (A_TRUNC | A_WRITE)))
                st |= ST(BF_EIO) | ST(BF_ENOSPC);
        }
        if (m->fk == F_ALLOC && (what & A_ALLOC))
            st |= ST(BF_ENOMEM);
    }
    if ((what & A_LIMIT) && spi < NSP && m->s[spi].limit != 0 &&
        usage(m, spi) + need > m->s[spi].limit)
        st |= ST(BF_ELIMIT);
    return st;
}

/*
 * ELIMIT from a call whose accounting the contract leaves open (a read-write
 * open adopting a file larger than the room left, a splice, a creation): any,
 * when the space has a limit.
 */
static unsigned limit_any(const fsm *m, int spi)
{
    return spi < NSP && m->s[spi].limit != 0 ? ST(BF_ELIMIT) : 0;
}

/* Upper bound of the physical bytes an operation writing `blocks` blocks may add. */
static uint64_t need_of(const fsm *m, uint64_t blocks)
{
    return (blocks + 2) * 2 * ((uint64_t)m->bs + 64) + 64 + 16 * MAXALL + 4096;
}

static const char *fault_name(const fsm *m)
{
    static char b[96];
    static const char *const k[] = {"none", "pwritev", "pread", "metadata", "allocation", "limit"};
    if (m->fk == F_META)
        snprintf(b, sizeof(b), "%s (kinds 0x%x)", k[m->fk], m->fmeta);
    else
        snprintf(b, sizeof(b), "%s", k[m->fk]);
    return b;
}

/* A read-only, current handle of a name a read-write session is writing now. */
static int in_session(const fsm *m, const fhandle *h)
{
    return is_ro(h) && !stale(m, h) && h->name >= 0 && m->n[h->name].writer >= 0;
}

/* A failed call: its status must be in `allowed` and it must leave a message. */
static int check_status(fsm *m, int spi, int64_t rc, unsigned allowed, const char *tag)
{
    int ok = rc < 0 && rc > -32 && (allowed & ST((int)rc));
    if (!ok && rc == BF_ELIMIT && (m->last_what & A_LIMIT) && spi < NSP) {
        /* The temp limit bit where the files the space writes leave room: the space counted
           something else against it, e.g. read-only handles (their bytes are another's). */
        bf_stats ss;
        bf_space_stats(m->s[spi].sp, &ss);
        if (m->s[spi].limit != 0 && ss.physical_bytes + m->last_need > m->s[spi].limit)
            tag = "limit-counts-readonly";
    }
    return CHECK(m, tag, ok, "%s failed with %lld (%s); armed fault: %s in space %d: %s", m->op,
                 (long long)rc, bf_strerror((int)rc), fault_name(m), m->fsp, errmsg(m, spi)) &&
           CHECK(m, "message", errmsg(m, spi)[0] != '\0', "%s failed with %lld and no message",
                 m->op, (long long)rc);
}

/* ---- reading back --------------------------------------------------------- */

/*
 * Compare block `b` of handle `h` (read with read_block, which moves nothing)
 * with the model. Returns the status of the read. A stale handle may get
 * BF_ECORRUPT; a read may fail with write errors under a temp limit.
 */
static int verify_block(fsm *m, fhandle *h, uint64_t b, const char *tag)
{
    int rc = bf_file_read_block(h->f, b, m->got);
    if (rc != BF_OK) {
        unsigned allowed = causes(m, h->sp, A_WRITE | A_LIMIT, need_of(m, 1));
        if (stale(m, h))
            allowed |= ST(BF_ECORRUPT);
        if (is_ro(h) && !stale(m, h) && h->name >= 0 && m->n[h->name].writer >= 0)
            tag = "shadow-paging"; /* a session overwrote what the persisted index maps */
        if (!(rc < 0 && (allowed & ST(rc))))
            m->abandoned = 1;
        CHECK(m, tag, rc < 0 && (allowed & ST(rc)),
              "%s handle %d (%s of %s, v%u of v%u): read_block %llu failed with %d (%s): %s", m->op,
              (int)(h - m->h), kind_names[h->kind], h->name >= 0 ? sname(h->name) : "-", h->version,
              h->name >= 0 ? m->n[h->name].version : 0, (unsigned long long)b, rc, bf_strerror(rc),
              errmsg(m, h->sp));
        return rc;
    }
    h->read += m->bs;
    for (uint32_t i = 0; i < m->bs; i++) {
        unsigned char v;
        uint64_t at = b * m->bs + i;
        if (img_byte(&h->img, at, &v) && m->got[i] != v) {
            int session = is_ro(h) && !stale(m, h) && h->name >= 0 && m->n[h->name].writer >= 0;
            CHECK(m,
                  stale(m, h) ? "stale-read"
                  : session   ? "shadow-paging"
                              : tag,
                  0, "%s handle %d (%s of %s, v%u of v%u, size %llu): byte %llu reads %u, model %u",
                  m->op, (int)(h - m->h), kind_names[h->kind], h->name >= 0 ? sname(h->name) : "-",
                  h->version, h->name >= 0 ? m->n[h->name].version : 0,
                  (unsigned long long)h->img.size, (unsigned long long)at, m->got[i], v);
            m->abandoned = 1; /* tolerated: the model no longer knows the file */
            return BF_ECORRUPT;
        }
    }
    return BF_OK;
}

static void verify_handle(fsm *m, fhandle *h, const char *tag)
{
    uint64_t nblk = (h->img.size + m->bs - 1) / m->bs;
    for (uint64_t b = 0; b < nblk && !m->abandoned; b++)
        verify_block(m, h, b, tag);
}

/*
 * Open name `ni` read-only in the verifier space and compare it with its
 * persisted model exactly (no corruption allowed), or expect BF_ENOENT
 * when it was never persisted. `tag` names the contract that says so.
 */
static void verify_persisted(fsm *m, int ni, const char *tag)
{
    fname *n = &m->n[ni];
    bf_space *v = m->s[VSP].sp;
    bf_file *f = NULL;
    int rc = bf_file_open_named(v, m->set, sname(ni), BF_OPEN_READONLY, &f);
    if (n->state != N_PERSISTED) {
        if (!CHECK(m, tag, rc == BF_ENOENT,
                   "%s: %s was never persisted, yet a reader's open returned %d (%s), not "
                   "BF_ENOENT: %s",
                   m->op, sname(ni), rc, bf_strerror(rc), bf_space_errmsg(v)) &&
            rc == BF_OK)
            bf_file_close(f);
        return;
    }
    if (!CHECK(m, tag, rc == BF_OK,
               "%s: reopening %s (persisted v%u, %llu bytes) failed: %d (%s): %s", m->op, sname(ni),
               n->version, (unsigned long long)n->persisted.size, rc, bf_strerror(rc),
               bf_space_errmsg(v))) {
        m->abandoned = 1;
        return;
    }
    CHECK(m, tag, bf_file_size(f) == n->persisted.size,
          "%s: %s reopens with size %llu, persisted v%u has %llu", m->op, sname(ni),
          (unsigned long long)bf_file_size(f), n->version, (unsigned long long)n->persisted.size);
    uint64_t nblk = (n->persisted.size + m->bs - 1) / m->bs;
    for (uint64_t b = 0; b < nblk; b++) {
        rc = bf_file_read_block(f, b, m->got);
        if (!CHECK(m, tag, rc == BF_OK, "%s: %s block %llu of the persisted v%u: %d (%s): %s",
                   m->op, sname(ni), (unsigned long long)b, n->version, rc, bf_strerror(rc),
                   bf_space_errmsg(v))) {
            m->abandoned = 1;
            break;
        }
        for (uint32_t i = 0; i < m->bs; i++) {
            unsigned char want;
            uint64_t at = b * m->bs + i;
            if (img_byte(&n->persisted, at, &want) && m->got[i] != want) {
                CHECK(m, tag, 0,
                      "%s: %s reopened: byte %llu (block %llu) reads %u, persisted v%u has %u",
                      m->op, sname(ni), (unsigned long long)at, (unsigned long long)b, m->got[i],
                      n->version, want);
                m->abandoned = 1;
                break;
            }
        }
    }
    bf_file_close(f);
}

/* ---- the checks after every call -------------------------------------------------- */

static void check_handle(fsm *m, fhandle *h)
{
    int hi = (int)(h - m->h);
    const char *nm = h->name >= 0 ? sname(h->name) : "anonymous";
    if (!CHECK(m, "position", bf_file_tell(h->f) == h->pos,
               "%s: handle %d (%s) tell %llu, model %llu", m->op, hi, nm,
               (unsigned long long)bf_file_tell(h->f), (unsigned long long)h->pos))
        h->pos = bf_file_tell(h->f);
    uint64_t size = bf_file_size(h->f);
    if (!CHECK(m, "size", size == h->img.size, "%s: handle %d (%s) size %llu, model %llu", m->op,
               hi, nm, (unsigned long long)size, (unsigned long long)h->img.size)) {
        uint64_t old = h->img.size;
        t_image_resize(&h->img, size);
        if (size > old)
            t_image_forget(&h->img, old, (size_t)(size - old));
    }
    if (h->img.size > h->peak)
        h->peak = h->img.size;
    bf_stats st;
    bf_file_stats(h->f, &st);
    fspace *s = &m->s[h->sp];
    CHECK(m, "stats-peak", st.logical_peak <= h->peak && st.logical_peak >= h->img.size,
          "%s: handle %d (%s) logical_peak %llu, but its sizes were at most %llu (now %llu)", m->op,
          hi, nm, (unsigned long long)st.logical_peak, (unsigned long long)h->peak,
          (unsigned long long)h->img.size);
    if (!CHECK(m, "stats-written", st.logical_written == h->written,
               "%s: handle %d (%s) logical_written %llu, successful writes %llu", m->op, hi, nm,
               (unsigned long long)st.logical_written, (unsigned long long)h->written)) {
        s->closed_written += st.logical_written - h->written;
        h->written = st.logical_written;
    }
    if (!CHECK(m, "stats-read", st.logical_read == h->read,
               "%s: handle %d (%s) logical_read %llu, bytes returned by successful reads %llu",
               m->op, hi, nm, (unsigned long long)st.logical_read, (unsigned long long)h->read)) {
        s->closed_read += st.logical_read - h->read;
        h->read = st.logical_read;
    }
    uint64_t used = t_map_used(&h->f->map), mem = bf_map_memory(&h->f->map);
    CHECK(m, "map-memory", h->unbounded || mem <= t_map_bound(used, h->f->map.n),
          "%s: handle %d (%s) holds %llu bytes of block map for %llu blocks holding data of %u "
          "covered; buffile.h allows %llu",
          m->op, hi, nm, (unsigned long long)mem, (unsigned long long)used, h->f->map.n,
          (unsigned long long)t_map_bound(used, h->f->map.n));
    CHECK(m, "stats-dead", st.dead_bytes <= st.physical_bytes,
          "%s: handle %d (%s) dead %llu > physical %llu", m->op, hi, nm,
          (unsigned long long)st.dead_bytes, (unsigned long long)st.physical_bytes);
    if (h->name >= 0 && (h->kind == H_CREATED || h->kind == H_RW)) {
        uint64_t disk;
        name_files(m, h->name, &disk, NULL);
        CHECK(m, "stats-physical", st.physical_bytes == disk,
              "%s: handle %d (%s, %s) physical_bytes %llu, its segment and index files hold %llu",
              m->op, hi, nm, kind_names[h->kind], (unsigned long long)st.physical_bytes,
              (unsigned long long)disk);
    }
}

static void check_space(fsm *m, int spi)
{
    fspace *s = &m->s[spi];
    bf_stats ss;
    bf_space_stats(s->sp, &ss);
    uint64_t nopen = 0, rd = s->closed_read, wr = s->closed_written, blk = s->closed_blocks;
    uint64_t phys = 0, phys_exp = 0;
    for (int i = 0; i < NH; i++) {
        fhandle *h = &m->h[i];
        if (!h->used || h->sp != spi)
            continue;
        bf_stats st;
        bf_file_stats(h->f, &st);
        nopen++;
        rd += h->read;
        wr += h->written;
        blk += st.blocks_read;
        if (counted(h, 0))
            phys += st.physical_bytes;
        if (counted(h, 1))
            phys_exp += st.physical_bytes;
    }
    CHECK(m, "stats-open", ss.files_open == nopen, "%s: space %d files_open %llu, %llu open", m->op,
          spi, (unsigned long long)ss.files_open, (unsigned long long)nopen);
    CHECK(m, "stats-created",
          ss.files_created >= s->created_ok &&
              ss.files_created <= s->created_ok + s->created_failed,
          "%s: space %d files_created %llu, but it created %llu files (%llu creations failed)",
          m->op, spi, (unsigned long long)ss.files_created, (unsigned long long)s->created_ok,
          (unsigned long long)s->created_failed);
    if (!CHECK(m, "stats-read", ss.logical_read == rd,
               "%s: space %d logical_read %llu, its files returned %llu", m->op, spi,
               (unsigned long long)ss.logical_read, (unsigned long long)rd))
        s->closed_read += ss.logical_read - rd;
    if (!CHECK(m, "stats-written", ss.logical_written == wr,
               "%s: space %d logical_written %llu, its files' successful writes %llu", m->op, spi,
               (unsigned long long)ss.logical_written, (unsigned long long)wr))
        s->closed_written += ss.logical_written - wr;
    if (!CHECK(m, "stats-blocks-read", ss.blocks_read == blk,
               "%s: space %d blocks_read %llu, the sum of its files' blocks_read is %llu", m->op,
               spi, (unsigned long long)ss.blocks_read, (unsigned long long)blk))
        s->closed_blocks += ss.blocks_read - blk;
    CHECK(m, "stats-space-physical", ss.physical_bytes == phys || ss.physical_bytes == phys_exp,
          "%s: space %d physical_bytes %llu, the files it writes hold %llu (%llu with the "
          "exported ones): read-only handles count nothing",
          m->op, spi, (unsigned long long)ss.physical_bytes, (unsigned long long)phys,
          (unsigned long long)phys_exp);
}

static void check_all(fsm *m)
{
    for (int i = 0; i < NH && !m->abandoned; i++)
        if (m->h[i].used)
            check_handle(m, &m->h[i]);
    for (int i = 0; i < NSP && !m->abandoned; i++)
        check_space(m, i);
}

/* ---- handle bookkeeping ---------------------------------------------------- */

static int new_handle(fsm *m)
{
    for (int i = 0; i < NH; i++)
        if (!m->h[i].used)
            return i;
    return -1;
}

static fhandle *add_handle(fsm *m, int hi, bf_file *f, int spi, int ni, int kind)
{
    fhandle *h = &m->h[hi];
    t_image_free(&h->img);
    memset(h, 0, sizeof(*h));
    h->used = 1;
    h->f = f;
    h->sp = spi;
    h->name = ni;
    h->kind = kind;
    h->dirty_lo = -1;
    if (ni >= 0 && (kind == H_RW || kind == H_RO)) {
        fname *n = &m->n[ni];
        img_copy(&h->img, &n->persisted);
        h->version = n->version;
        h->parts = n->parts;
        h->nparts = n->nparts;
    } else {
        t_image_resize(&h->img, 0);
    }
    h->peak = h->img.size;
    if (kind == H_CREATED || kind == H_RW)
        m->n[ni].writer = hi;
    return h;
}

/* The handle is gone: keep its counters in its space's totals. */
static void drop_handle(fsm *m, fhandle *h, const bf_stats *last)
{
    fspace *s = &m->s[h->sp];
    s->closed_read += h->read;
    s->closed_written += h->written;
    s->closed_blocks += last->blocks_read;
    if (h->name >= 0 && m->n[h->name].writer == (int)(h - m->h))
        m->n[h->name].writer = -1;
    h->used = 0;
    h->f = NULL;
}

/* A handle index matching `want` (a bit per kind), chosen at random; -1 if none. */
static int pick_handle(fsm *m, unsigned want)
{
    int c[NH], n = 0;
    for (int i = 0; i < NH; i++)
        if (m->h[i].used && (want & (1u << m->h[i].kind)))
            c[n++] = i;
    return n ? c[pick(m, (uint64_t)n)] : -1;
}

#define K(k) (1u << (k))
#define K_WRITABLE (K(H_ANON) | K(H_CREATED) | K(H_RW))
#define K_ANY (K_WRITABLE | K(H_EXPORTED) | K(H_RO))

static int writable(const fhandle *h)
{
    return h->kind == H_ANON || h->kind == H_CREATED || h->kind == H_RW;
}

/* A read-only handle's write call: BF_EREADONLY, nothing changes. */
static int refused_readonly(fsm *m, fhandle *h, int rc)
{
    if (writable(h))
        return 0;
    CHECK(m, "readonly", rc == BF_EREADONLY, "%s on a %s handle returned %d, not BF_EREADONLY",
          m->op, kind_names[h->kind], rc);
    return 1;
}

/* ---- stream and block operations --------------------------------------------- */

static size_t pick_len(fsm *m)
{
    uint64_t k = pick(m, 12);
    if (k >= 10) /* whole blocks: with an aligned position, the batched path */
        return (size_t)(1 + pick(m, 3)) * m->bs; /* the buffers hold 3 blocks */
    if (k < 5)
        return (size_t)pick(m, 300);
    if (k < 8)
        return (size_t)pick(m, (uint64_t)m->bs + 1);
    return (size_t)pick(m, 3ull * m->bs + 1);
}

/*
 * After a failed write of `len` bytes at `at` (data in m->buf, the model's
 * bytes before the call in `oldimg`): each byte reads as before or as
 * written, and a size that grew covers a stored byte of this call.
 */
static void check_failed_write_bytes(fsm *m, fhandle *h, uint64_t at, size_t len,
                                     const t_image *oldimg)
{
    uint64_t size = h->img.size;
    uint64_t end = at + len < size ? at + len : size;
    for (uint64_t b = at / m->bs; b * m->bs < end; b++) {
        if (bf_file_read_block(h->f, b, m->got) != BF_OK)
            continue; /* verify_handle reports it */
        h->read += m->bs;
        for (uint64_t k = b * m->bs; k < (b + 1) * m->bs && k < end; k++) {
            if (k < at)
                continue;
            unsigned char was, now = m->got[k - b * m->bs];
            int known = img_byte(oldimg, k, &was);
            if (!CHECK(m, "write-bytes", now == m->buf[k - at] || !known || now == was,
                       "failed %s: byte %llu reads %u, neither its old %u nor the written %u",
                       m->op, (unsigned long long)k, now, was, m->buf[k - at]))
                return;
        }
    }
    if (size > oldimg->size && size > at) {
        uint64_t last = size - 1, b = last / m->bs;
        if (bf_file_read_block(h->f, b, m->got) == BF_OK) {
            h->read += m->bs;
            CHECK(m, "write-size", m->got[last - b * m->bs] == m->buf[last - at],
                  "failed %s at %llu: the size grew to %llu, but byte %llu is not the written %u "
                  "(reads %u): the size covers bytes that were not stored",
                  m->op, (unsigned long long)at, (unsigned long long)size, (unsigned long long)last,
                  m->buf[last - at], m->got[last - b * m->bs]);
        }
    }
}

static void op_write(fsm *m, fhandle *h)
{
    m->op = "write";
    size_t len = pick_len(m);
    uint64_t at = h->pos;
    if (at + len > (uint64_t)MAXBLK * m->bs) {
        at = pick(m, (uint64_t)MAXBLK * m->bs / 2);
        CHECK(m, "seek", bf_file_seek(h->f, (int64_t)at, BF_SEEK_SET) == BF_OK, "seek: %s",
              errmsg(m, h->sp));
        h->pos = at;
        if (at + len > (uint64_t)MAXBLK * m->bs)
            len = (size_t)((uint64_t)MAXBLK * m->bs - at);
    }
    t_fill(&m->drng, T_DATA_MIXED, m->buf, len);
    uint64_t old = h->img.size;
    bf_stats before;
    bf_file_stats(h->f, &before);
    int rc = bf_file_write(h->f, m->buf, len);
    if (refused_readonly(m, h, rc))
        return;
    if (rc == BF_OK) {
        t_image_write(&h->img, at, m->buf, len);
        h->pos = at + len;
        h->written += len;
        uint64_t b0 = at / m->bs, b1 = (at + len) / m->bs;
        if (len > 0 && (at % m->bs != 0 || len < m->bs) &&
            (h->dirty_lo < 0 || (int64_t)b0 < h->dirty_lo))
            h->dirty_lo = (int64_t)b0;
        if (len > 0 && (at + len) % m->bs != 0 && (h->dirty_lo < 0 || (int64_t)b1 < h->dirty_lo))
            h->dirty_lo = (int64_t)b1;
        return;
    }
    uint64_t blocks = len / m->bs + 3;
    check_status(
        m, h->sp, rc,
        causes(m, h->sp, A_WRITE | A_READ | A_OPEN | A_ALLOC | A_LIMIT, need_of(m, blocks)),
        "write-status");
    disarm(m);
    CHECK(m, "write-position", bf_file_tell(h->f) == at,
          "failed write of %zu bytes at %llu moved the position to %llu", len,
          (unsigned long long)at, (unsigned long long)bf_file_tell(h->f));
    uint64_t size = bf_file_size(h->f);
    int size_ok = size == old || (size > old && size > at && size <= at + len);
    CHECK(m, "write-size", size_ok,
          "failed write of %zu bytes at %llu: size %llu -> %llu (allowed: unchanged, or "
          "grown only over bytes of this call, %llu < size <= %llu)",
          len, (unsigned long long)at, (unsigned long long)old, (unsigned long long)size,
          (unsigned long long)at, (unsigned long long)(at + len));
    bf_stats after;
    bf_file_stats(h->f, &after);
    uint64_t top = before.logical_peak > size ? before.logical_peak : size;
    CHECK(m, "stats-peak", after.logical_peak <= top,
          "failed write at %llu: logical_peak %llu, but the file was never larger than %llu",
          (unsigned long long)at, (unsigned long long)after.logical_peak, (unsigned long long)top);
    t_image oldimg = {0};
    img_copy(&oldimg, &h->img);
    if (size != old) {
        t_image_resize(&h->img, size);
        if (size > old)
            t_image_forget(&h->img, old, (size_t)(size - old));
    }
    if (size_ok)
        check_failed_write_bytes(m, h, at, len, &oldimg);
    t_image_forget(&h->img, at, len);
    t_image_free(&oldimg);
    if (h->dirty_lo < 0 || (int64_t)(at / m->bs) < h->dirty_lo)
        h->dirty_lo = (int64_t)(at / m->bs); /* a failed write may leave bytes in the buffer */
}

/* One read at the handle's position: whether it read bytes (a run may go on). */
static int op_read_one(fsm *m, fhandle *h)
{
    m->op = "read";
    size_t len = pick_len(m);
    uint64_t at = h->pos;
    int64_t n = bf_file_read(h->f, m->got, len);
    if (n >= 0) {
        uint64_t size = h->img.size;
        uint64_t want = at >= size ? 0 : (size - at < len ? size - at : len);
        if (!CHECK(m, "read-length", (uint64_t)n == want,
                   "read of %zu at %llu returned %lld, model %llu", len, (unsigned long long)at,
                   (long long)n, (unsigned long long)want)) {
            m->abandoned = 1;
            return 0;
        }
        for (uint64_t i = 0; i < (uint64_t)n; i++) {
            unsigned char v;
            if (img_byte(&h->img, at + i, &v) && m->got[i] != v) {
                CHECK(m, stale(m, h) ? "stale-read" : "read-bytes", 0,
                      "read of %zu at %llu (%s handle, v%u of v%u): byte %llu reads %u, model %u",
                      len, (unsigned long long)at, kind_names[h->kind], h->version,
                      h->name >= 0 ? m->n[h->name].version : 0, (unsigned long long)(at + i),
                      m->got[i], v);
                m->abandoned = 1;
                return 0;
            }
        }
        h->pos = at + (uint64_t)n;
        h->read += (uint64_t)n;
        return n > 0;
    }
    unsigned allowed =
        causes(m, h->sp, A_WRITE | A_READ | A_OPEN | A_ALLOC | A_LIMIT, need_of(m, 1));
    if (stale(m, h))
        allowed |= ST(BF_ECORRUPT);
    check_status(m, h->sp, n, allowed,
                 n == BF_ECORRUPT && in_session(m, h) ? "shadow-paging" : "read-status");
    CHECK(m, "read-position", bf_file_tell(h->f) == at,
          "failed read (%lld, %s) of %zu bytes at %llu moved the position to %llu", (long long)n,
          bf_strerror((int)n), len, (unsigned long long)at, (unsigned long long)bf_file_tell(h->f));
    return 0;
}

/*
 * A read; with workers (BF_TEST_WORKERS) a run of up to 32 reads on from
 * there, so that sequential passes unpack blocks ahead on the workers while
 * the other calls change the files (without workers the sequences stay as
 * they were: no extra picks).
 */
static void op_read(fsm *m, fhandle *h)
{
    uint64_t more = t_workers_env() > 0 ? pick(m, 32) : 0;
    while (op_read_one(m, h) && more-- > 0 && !m->abandoned)
        ;
}

static void op_seek(fsm *m, fhandle *h)
{
    m->op = "seek";
    int whence = (int)pick(m, 3);
    uint64_t target = pick(m, h->img.size + 2ull * m->bs + 1);
    if (pick(m, 3) == 0)
        target -= target % m->bs; /* a block boundary: whole-block writes follow */
    int64_t base = whence == BF_SEEK_SET   ? 0
                   : whence == BF_SEEK_CUR ? (int64_t)h->pos
                                           : (int64_t)h->img.size;
    int rc = bf_file_seek(h->f, (int64_t)target - base, whence);
    CHECK(m, "seek", rc == BF_OK, "seek to %llu returned %d (armed: %s): seek never writes",
          (unsigned long long)target, rc, fault_name(m));
    h->pos = rc == BF_OK ? target : h->pos;
}

static void op_truncate(fsm *m, fhandle *h)
{
    m->op = "truncate";
    uint64_t old = h->img.size;
    uint64_t size = pick(m, 4) == 0 ? 0 : pick(m, old + 2ull * m->bs + 1);
    if (size > (uint64_t)MAXALL * m->bs)
        size = (uint64_t)MAXALL * m->bs;
    int rc = bf_file_truncate(h->f, size);
    if (refused_readonly(m, h, rc))
        return;
    uint64_t keep = (size + m->bs - 1) / m->bs;
    int tail = size % m->bs != 0;
    if (rc == BF_OK) {
        t_image_resize(&h->img, size);
        if (size < old) {
            if (tail)
                h->dirty_lo = (int64_t)keep - 1;
            else if (h->dirty_lo >= (int64_t)keep)
                h->dirty_lo = -1;
        }
        if (size == 0 && h->name >= 0) {
            uint64_t bytes;
            int seg0;
            name_files(m, h->name, &bytes, &seg0);
            CHECK(m, "truncate-keeps-name", seg0,
                  "truncating named file %s to 0 removed its segment 0: the name is free for "
                  "another space to take",
                  sname(h->name));
        }
        return;
    }
    unsigned what = A_ALLOC;
    if (size < old && tail) {
        what |= A_READ | A_OPEN;
        if (h->dirty_lo >= 0 && h->dirty_lo < (int64_t)keep - 1)
            what |= A_WRITE | A_LIMIT;
    }
    const char *tag = size < old ? "truncate-shrink-status" : "truncate-status";
    check_status(m, h->sp, rc, causes(m, h->sp, what, need_of(m, 1)), tag);
    CHECK(m, "truncate-unchanged", bf_file_size(h->f) == old,
          "failed truncate %llu -> %llu left size %llu", (unsigned long long)old,
          (unsigned long long)size, (unsigned long long)bf_file_size(h->f));
}

static void op_flush(fsm *m, fhandle *h, int release)
{
    m->op = release ? "release_buffer" : "flush";
    int rc = release ? bf_file_release_buffer(h->f) : bf_file_flush(h->f);
    if (rc == BF_OK) {
        h->dirty_lo = -1;
        return;
    }
    check_status(m, h->sp, rc,
                 causes(m, h->sp, A_WRITE | A_OPEN | A_ALLOC | A_LIMIT, need_of(m, 1)),
                 "flush-status");
}

static void op_write_block(fsm *m, fhandle *h)
{
    m->op = "write_block";
    uint64_t b = pick(m, MAXBLK);
    t_fill(&m->drng, T_DATA_MIXED, m->buf, m->bs);
    uint64_t old = h->img.size;
    int rc = bf_file_write_block(h->f, b, m->buf);
    if (refused_readonly(m, h, rc))
        return;
    if (rc == BF_OK) {
        t_image_write(&h->img, b * m->bs, m->buf, m->bs);
        h->written += m->bs;
        return;
    }
    check_status(m, h->sp, rc,
                 causes(m, h->sp, A_WRITE | A_OPEN | A_ALLOC | A_LIMIT, need_of(m, 1)),
                 "write_block-status");
    disarm(m);
    CHECK(m, "write_block-unchanged", bf_file_size(h->f) == old,
          "failed write_block %llu changed the size %llu -> %llu", (unsigned long long)b,
          (unsigned long long)old, (unsigned long long)bf_file_size(h->f));
    if (b * m->bs < old)
        verify_block(m, h, b, "write_block-unchanged");
}

static void op_read_block(fsm *m, fhandle *h)
{
    m->op = "read_block";
    uint64_t b = pick(m, (h->img.size + m->bs - 1) / m->bs + 2);
    int rc = bf_file_read_block(h->f, b, m->got);
    if (rc == BF_OK) {
        h->read += m->bs;
        for (uint32_t i = 0; i < m->bs; i++) {
            unsigned char v;
            if (img_byte(&h->img, b * m->bs + i, &v) && m->got[i] != v) {
                CHECK(m, stale(m, h) ? "stale-read" : "read-bytes", 0,
                      "read_block %llu (%s handle, v%u): byte %u reads %u, model %u",
                      (unsigned long long)b, kind_names[h->kind], h->version, i, m->got[i], v);
                m->abandoned = 1;
                return;
            }
        }
        return;
    }
    unsigned allowed =
        causes(m, h->sp, A_WRITE | A_READ | A_OPEN | A_ALLOC | A_LIMIT, need_of(m, 1));
    if (stale(m, h))
        allowed |= ST(BF_ECORRUPT);
    check_status(m, h->sp, rc, allowed,
                 rc == BF_ECORRUPT && in_session(m, h) ? "shadow-paging" : "read-status");
}

static void op_discard(fsm *m, fhandle *h)
{
    m->op = "discard_block";
    uint64_t b = pick(m, (h->img.size + m->bs - 1) / m->bs + 1);
    int rc = bf_file_discard_block(h->f, b);
    if (refused_readonly(m, h, rc))
        return;
    uint64_t at = b * m->bs, size = h->img.size;
    size_t n = at >= size ? 0 : (size_t)(size - at < m->bs ? size - at : m->bs);
    if (rc == BF_OK) {
        if (n > 0)
            t_image_write(&h->img, at, memset(m->buf, 0, n), n);
        /* dirty_lo only bounds the dirty buffered block from below: discarding b drops
           b if buffered, not a dirty block above it. */
        if (h->dirty_lo == (int64_t)b)
            h->dirty_lo = (int64_t)b + 1;
        return;
    }
    check_status(m, h->sp, rc, causes(m, h->sp, A_ALLOC, 0), "discard-status");
    t_image_forget(&h->img, at, n);
}

/* ---- file-set operations ------------------------------------------------------ */

static void op_create(fsm *m, int anon)
{
    int hi = new_handle(m);
    if (hi < 0)
        return;
    int spi = (int)pick(m, NSP);
    fspace *s = &m->s[spi];
    arm(m, spi);
    if (anon) {
        m->op = "create (anonymous)";
        for (int i = 0; i < NH; i++)
            if (m->h[i].used && m->h[i].kind == H_ANON && m->h[i].sp == spi)
                return; /* one per space is plenty */
        bf_file *f;
        int rc = bf_file_create(s->sp, NULL, &f);
        if (rc == BF_OK) {
            s->created_ok++;
            add_handle(m, hi, f, spi, -1, H_ANON);
        } else {
            s->created_failed++;
            check_status(m, spi, rc, causes(m, spi, A_ALLOC, 0), "create-status");
        }
        return;
    }
    m->op = "create_named";
    int ni = (int)pick(m, NNAMES);
    fname *n = &m->n[ni];
    bf_file *f = NULL;
    int rc = bf_file_create_named(s->sp, m->set, sname(ni), NULL, &f);
    if (n->state != N_ABSENT) {
        if (rc == BF_OK) {
            CHECK(m, "name-taken", 0,
                  "create_named %s in space %d succeeded, but the name is taken (%s)", sname(ni),
                  spi, n->state == N_CREATED ? "by a writer" : "persisted");
            m->abandoned = 1;
            bf_file_close(f);
            return;
        }
        s->created_failed++;
        check_status(m, spi, rc,
                     ST(BF_EEXIST) | causes(m, spi, A_OPEN | A_ALLOC | A_WRITE, 0) |
                         limit_any(m, spi),
                     "name-taken");
        return;
    }
    if (rc == BF_OK) {
        s->created_ok++;
        add_handle(m, hi, f, spi, ni, H_CREATED);
        n->state = N_CREATED;
        n->consumed = C_NO;
        n->parts = 0;
        n->nparts = 0;
        return;
    }
    s->created_failed++;
    check_status(m, spi, rc,
                 causes(m, spi, A_OPEN | A_ALLOC | A_WRITE, need_of(m, 0)) | limit_any(m, spi),
                 "create-status");
    uint64_t bytes;
    int left = name_files(m, ni, &bytes, NULL);
    CHECK(m, "create-leftover", left == 0,
          "failed create_named %s (%d) left %d file(s) of that name in the set", sname(ni), rc,
          left);
}

/* The name was persisted from handle `h` (export or close): the model follows. */
static void persisted_from(fsm *m, fhandle *h)
{
    fname *n = &m->n[h->name];
    img_copy(&n->persisted, &h->img);
    n->state = N_PERSISTED;
    n->version++;
    n->parts = h->parts;
    n->nparts = h->nparts;
    h->consumed = 0;
    h->dirty_lo = -1;
}

/* Do segments 0..n-1 of name `ni`, and no other file of it, exist? */
static int segments_from_0(const fsm *m, int ni, int n)
{
    uint64_t bytes;
    if (name_files(m, ni, &bytes, NULL) != n)
        return 0;
    for (int k = 0; k < n; k++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s.%d", m->set, sname(ni), k);
        if (access(path, F_OK) != 0)
            return 0;
    }
    return 1;
}

/*
 * A failed close of writable named handle `h` (already freed) of space
 * `spi`: the rollback contract. `unlink_failed`: an armed unlink fault
 * fired during the close.
 */
static void close_failed_named(fsm *m, int ni, int spi, uint64_t consumed, int unlink_failed)
{
    fname *n = &m->n[ni];
    /* The splices went with the rollback, and so does their consumption: the sources the
       session consumed are free again, unless a failed unlink kept a marker. */
    for (int i = 0; i < NNAMES; i++) {
        if (!((consumed >> i) & 1))
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s.consumed", m->set, sname(i));
        int marked = access(path, F_OK) == 0;
        m->n[i].consumed = marked ? (unlink_failed ? C_MAYBE : C_YES) : C_NO;
        CHECK(m, "append-undone", !marked || unlink_failed,
              "failed close of %s rolled its append of %s back, but %s stays consumed (read-only, "
              "not deletable) with no file holding its bytes",
              sname(ni), sname(i), sname(i));
    }
    if (n->state == N_PERSISTED) {
        verify_persisted(m, ni, "close-rollback");
        return;
    }
    /* Never persisted: the file is deleted entirely and the name is free, unless the
       deletion itself failed: then segments 0..k stay, no open finds a file, the name
       stays taken until bf_file_delete_named, and the message says so. */
    uint64_t bytes;
    int left = name_files(m, ni, &bytes, NULL);
    CHECK(m, "close-never-persisted", left == 0 || unlink_failed,
          "failed close of never-persisted %s left %d file(s) (%llu bytes) in the set, and no "
          "unlink failed: it must be deleted entirely",
          sname(ni), left, (unsigned long long)bytes);
    n->state = N_ABSENT;
    verify_persisted(m, ni, "close-never-persisted");
    if (left == 0)
        return;
    bf_space *v = m->s[VSP].sp;
    CHECK(m, "close-never-persisted", segments_from_0(m, ni, left),
          "failed close of never-persisted %s left %d file(s), not segments 0..%d", sname(ni), left,
          left - 1);
    CHECK(m, "close-never-persisted", strstr(errmsg(m, spi), "could not be deleted") != NULL,
          "failed close of never-persisted %s left %d segment(s) and did not say so: %s", sname(ni),
          left, errmsg(m, spi));
    bf_file *f = NULL;
    int rc = bf_file_create_named(v, m->set, sname(ni), NULL, &f);
    if (!CHECK(m, "close-never-persisted", rc == BF_EEXIST,
               "the name %s held by the segments a failed close left was created anew: %d (%s)",
               sname(ni), rc, bf_strerror(rc)) &&
        rc == BF_OK)
        bf_file_close(f);
    /* What the caller does to reuse the name: delete it, which takes every segment. */
    rc = bf_file_delete_named(v, m->set, sname(ni));
    CHECK(m, "close-never-persisted", rc == BF_OK && name_files(m, ni, &bytes, NULL) == 0,
          "deleting the segments a failed close of %s left returned %d (%s) and left %d file(s)",
          sname(ni), rc, bf_strerror(rc), name_files(m, ni, &bytes, NULL));
}

static void op_close(fsm *m, int hi)
{
    fhandle *h = &m->h[hi];
    m->op = "close";
    arm(m, h->sp);
    bf_stats last;
    bf_file_stats(h->f, &last);
    int ni = h->name, kind = h->kind, spi = h->sp;
    uint64_t consumed = h->consumed;
    /* What may fail it, while the file still counts in its space. */
    unsigned allowed = causes(m, spi,
                              kind == H_CREATED || kind == H_RW ? A_ALL
                              : kind == H_ANON                  ? A_TRUNC
                                                                : 0,
                              need_of(m, 2));
    m->s[spi].flt.fired = NULL;
    int rc = bf_file_close(h->f);
    const char *fired = m->s[spi].flt.fired;
    int unlink_failed = fired != NULL && strcmp(fired, "unlink") == 0;
    if (kind == H_CREATED || kind == H_RW) {
        if (rc == BF_OK)
            persisted_from(m, h);
        drop_handle(m, h, &last);
        if (rc == BF_OK) {
            disarm(m);
            verify_persisted(m, ni, "close-persist");
            return;
        }
        check_status(m, spi, rc, allowed, "close-status");
        disarm(m);
        close_failed_named(m, ni, spi, consumed, unlink_failed);
        return;
    }
    drop_handle(m, h, &last);
    if (rc == BF_OK)
        return;
    check_status(m, spi, rc, allowed, "close-status");
}

static void op_export(fsm *m, int hi)
{
    if (hi < 0)
        return;
    fhandle *h = &m->h[hi];
    m->op = "export";
    arm(m, h->sp);
    int rc = bf_file_export(h->f);
    if (h->kind == H_ANON) {
        CHECK(m, "export-anonymous", rc == BF_EINVAL, "export of an anonymous file returned %d",
              rc);
        return;
    }
    if (is_ro(h)) {
        CHECK(m, "export-status", rc == BF_OK, "export of a %s handle returned %d: %s",
              kind_names[h->kind], rc, errmsg(m, h->sp));
        return;
    }
    if (rc == BF_OK) {
        persisted_from(m, h);
        m->n[h->name].writer = -1;
        h->kind = H_EXPORTED;
        h->version = m->n[h->name].version;
        disarm(m);
        verify_persisted(m, h->name, "export-persist");
        return;
    }
    check_status(m, h->sp, rc, causes(m, h->sp, A_ALL, need_of(m, 2)), "export-status");
    disarm(m);
    /* Nothing changes: the handle stays writable (the model keeps it so) and the name as it was. */
    verify_persisted(m, h->name, "export-failed");
}

/* May the model open name `ni` read-write (coordination rules, not the library's)? */
static int rw_allowed(const fsm *m, int ni)
{
    if (m->n[ni].writer >= 0)
        return 0;
    for (int i = 0; i < NH; i++)
        if (m->h[i].used && ((m->h[i].parts >> ni) & 1))
            return 0;
    return 1;
}

/* Open name `ni` (in a space chosen here) with `mode` and check what the open gives. */
static void open_name(fsm *m, int mode, int ni)
{
    int hi = new_handle(m);
    if (hi < 0)
        return;
    fname *n = &m->n[ni];
    if (mode == BF_OPEN_READWRITE && !rw_allowed(m, ni))
        return;
    int spi = (int)pick(m, NSP);
    m->op = mode == BF_OPEN_READWRITE ? "open_named read-write" : "open_named read-only";
    arm(m, spi);
    if (m->fk == F_ALLOC && avoid(m, "open-alloc"))
        disarm(m);
    if (m->unlink_at != 0) { /* a fault while it removes what a killed session left */
        disarm(m);
        m->fk = F_META;
        m->fsp = spi;
        m->fmeta = T_META_UNLINK;
        m->s[spi].flt.meta_mask = T_META_UNLINK;
        m->s[spi].flt.metas = 0;
        m->s[spi].flt.fail_meta_at = m->unlink_at;
        m->s[spi].flt.fail_errno = EIO;
        m->unlink_at = 0;
    }
    bf_file *f = NULL;
    int rc = bf_file_open_named(m->s[spi].sp, m->set, sname(ni), mode, &f);
    unsigned allowed = causes(m, spi, mode == BF_OPEN_READONLY ? A_OPEN | A_READ | A_ALLOC : A_ALL,
                              need_of(m, 0)) |
                       (mode == BF_OPEN_READWRITE ? limit_any(m, spi) : 0);
    if (n->state != N_PERSISTED) {
        CHECK(m, "open-missing", rc != BF_OK, "open of %s, which was never persisted, succeeded",
              sname(ni));
        if (rc == BF_OK) {
            m->abandoned = 1;
            bf_file_close(f);
            return;
        }
        check_status(m, spi, rc, allowed | ST(BF_ENOENT), "open-missing");
        return;
    }
    int busy = mode == BF_OPEN_READWRITE && n->consumed != C_NO;
    if (rc == BF_EBUSY && busy) {
        n->consumed = C_YES;
        return;
    }
    if (rc == BF_OK && mode == BF_OPEN_READWRITE && n->consumed == C_YES) {
        CHECK(m, "consumed-busy", 0,
              "read-write open of %s succeeded, but it was appended into another file "
              "(consumed): BF_EBUSY expected",
              sname(ni));
        /* Tolerated: close it at once, unchanged (the index is written again, same map). */
        bf_file_close(f);
        return;
    }
    if (rc != BF_OK) {
        check_status(m, spi, rc, allowed,
                     rc == BF_ECORRUPT && n->writer >= 0 ? "shadow-paging" : "open-status");
        return;
    }
    if (busy)
        n->consumed = C_NO; /* a maybe-consumed name turned out free */
    fhandle *h = add_handle(m, hi, f, spi, ni, mode == BF_OPEN_READWRITE ? H_RW : H_RO);
    disarm(m);
    if (!CHECK(m, "reopen", bf_file_size(f) == h->img.size,
               "%s opened with size %llu, persisted v%u has %llu", sname(ni),
               (unsigned long long)bf_file_size(f), n->version, (unsigned long long)h->img.size)) {
        m->abandoned = 1;
        return;
    }
    verify_handle(m, h, "reopen");
}

static void op_open(fsm *m, int mode)
{
    if (new_handle(m) >= 0)
        open_name(m, mode, (int)pick(m, NNAMES));
}

static void op_delete(fsm *m)
{
    int ni = (int)pick(m, NNAMES);
    fname *n = &m->n[ni];
    for (int i = 0; i < NH; i++)
        if (m->h[i].used && (m->h[i].name == ni || ((m->h[i].parts >> ni) & 1)))
            return; /* the caller's coordination: nobody uses it */
    int spi = (int)pick(m, NSP);
    m->op = "delete_named";
    arm(m, spi);
    int rc = bf_file_delete_named(m->s[spi].sp, m->set, sname(ni));
    if (n->state == N_ABSENT) {
        CHECK(m, "delete-missing",
              rc == BF_ENOENT || (rc < 0 && (causes(m, spi, A_ALL, 0) & ST(rc))),
              "delete of absent %s returned %d, not BF_ENOENT", sname(ni), rc);
        return;
    }
    int busy = rc == BF_EBUSY && n->consumed != C_NO;
    if (rc != BF_OK && !busy) {
        /* A fault may strike before the consumed check: the retry then says busy. */
        check_status(m, spi, rc, causes(m, spi, A_ALL, 0), "delete-status");
        disarm(m);
        rc = bf_file_delete_named(m->s[VSP].sp, m->set, sname(ni));
        busy = rc == BF_EBUSY && n->consumed != C_NO;
        CHECK_OR_ABANDON(m, "delete-retry", rc == BF_OK || rc == BF_ENOENT || busy,
                         "delete of %s failed, and the retry without faults returned %d: %s",
                         sname(ni), rc, errmsg(m, VSP));
    }
    if (busy) {
        n->consumed = C_YES;
        return;
    }
    if (rc == BF_OK && n->consumed == C_YES) {
        CHECK(m, "consumed-busy", 0,
              "delete of %s succeeded, but it was appended into another file (consumed): "
              "BF_EBUSY expected",
              sname(ni));
        m->abandoned = 1;
        return;
    }
    n->state = N_ABSENT;
    n->consumed = C_NO;
    n->parts = 0;
    n->nparts = 0;
    t_image_free(&n->persisted);
    uint64_t bytes;
    int left = name_files(m, ni, &bytes, NULL);
    CHECK(m, "delete-leftover", left == 0, "delete of %s left %d file(s) of that name", sname(ni),
          left);
    CHECK(m, "other-left", g_other[0] == '\0', "%s: left in the set:%s", m->op, g_other);
}

/* A failed append left target `t` (size `old`, position `oldpos` before it) as it was. */
static void append_unchanged(fsm *m, fhandle *t, uint64_t old, uint64_t oldpos)
{
    CHECK(m, "append-unchanged", bf_file_size(t->f) == old && bf_file_tell(t->f) == oldpos,
          "failed append changed the target: size %llu -> %llu, position %llu -> %llu",
          (unsigned long long)old, (unsigned long long)bf_file_size(t->f),
          (unsigned long long)oldpos, (unsigned long long)bf_file_tell(t->f));
    verify_handle(m, t, "append-unchanged");
}

/* Append one source onto target `ti`. */
static void append_one(fsm *m, int ti)
{
    fhandle *t = &m->h[ti];
    int tw = t->kind == H_CREATED || t->kind == H_RW;
    if (t->kind == H_ANON || stale(m, t) || (!tw && avoid(m, "view")))
        return;
    if (t->nparts > 0 && avoid(m, "multi-append"))
        return;
    /* Sources: read-only, current, not a view, whose name nobody writes, not yet in the target. */
    int good[NH], bad[NH], ng = 0, nb = 0;
    for (int i = 0; i < NH; i++) {
        fhandle *s = &m->h[i];
        if (!s->used || s->kind == H_ANON)
            continue;
        if (i == ti || s->name == t->name || ((s->parts >> t->name) & 1)) {
            if (is_ro(s) && !stale(m, s) && !s->view)
                bad[nb++] = i; /* the same named file, or one that holds it */
            continue;
        }
        if (!is_ro(s) || stale(m, s) || s->view || m->n[s->name].writer >= 0 ||
            m->n[s->name].consumed != C_NO || ((t->parts >> s->name) & 1))
            continue;
        if (t->img.size + m->n[s->name].persisted.size + m->bs > (uint64_t)MAXALL * m->bs)
            continue;
        good[ng++] = i;
    }
    int si;
    int self = nb > 0 && pick(m, 4) == 0;
    if (self)
        si = bad[pick(m, (uint64_t)nb)];
    else if (ng > 0)
        si = good[pick(m, (uint64_t)ng)];
    else
        return;
    fhandle *s = &m->h[si];
    m->op = tw ? "append" : "append onto a read-only handle (view)";
    arm(m, t->sp);
    uint64_t old = t->img.size, oldpos = t->pos, start = UINT64_MAX;
    int rc = bf_file_append(t->f, s->f, &start);
    if (self) {
        const char *why = si == ti             ? "the same handle"
                          : s->name == t->name ? "another handle of the same named file"
                                               : "a source whose parts include the target";
        unsigned refused = ST(BF_EINVAL) | causes(m, t->sp, A_ALLOC | A_OPEN | A_READ, 0);
        CHECK_OR_ABANDON(m, "self-append", rc < 0 && (refused & ST(rc)),
                         "append of %s onto %s (%s): returned %d, not BF_EINVAL: a named file "
                         "cannot be appended to itself",
                         sname(s->name), sname(t->name), why, rc);
        return;
    }
    if (rc != BF_OK) {
        if (!tw && rc == BF_EREADONLY) {
            CHECK(m, "view", 0,
                  "append onto read-only handle of %s refused with BF_EREADONLY: appending onto "
                  "a read-only target makes a view",
                  sname(t->name));
            return;
        }
        unsigned what = tw ? A_ALL & ~A_LIMIT : A_ALLOC | A_OPEN | A_READ;
        check_status(m, t->sp, rc, causes(m, t->sp, what, 0) | (tw ? limit_any(m, t->sp) : 0),
                     "append-status");
        disarm(m);
        append_unchanged(m, t, old, oldpos);
        verify_handle(m, s, "append-unchanged");
        return;
    }
    uint64_t want = (old + m->bs - 1) / m->bs * m->bs;
    CHECK_OR_ABANDON(m, "append-start", start == want,
                     "append of %s onto %s (size %llu) started at %llu, expected %llu",
                     sname(s->name), sname(t->name), (unsigned long long)old,
                     (unsigned long long)start, (unsigned long long)want);
    img_splice(&t->img, start, &s->img);
    t->parts |= s->parts | (1ull << s->name);
    t->nparts += 1 + s->nparts;
    if (tw) {
        if (m->n[s->name].consumed == C_NO)
            t->consumed |= 1ull << s->name;
        m->n[s->name].consumed = C_YES;
    } else {
        t->view = 1;
    }
    disarm(m);
    verify_handle(m, t, "append-read");
}

static void op_append(fsm *m)
{
    int ti = pick_handle(m, K(H_CREATED) | K(H_RW) | K(H_EXPORTED) | K(H_RO));
    if (ti < 0)
        return;
    int k = 1 + (int)pick(m, 3);
    for (int i = 0; i < k && !m->abandoned; i++) {
        if (!m->h[ti].used)
            return;
        append_one(m, ti);
        check_all(m);
    }
}

/* ---- the edge operations: outdated sources, a killed session's leftovers, block-number limits */

/*
 * Append a stale read-only source (a later read-write session of its name
 * persisted since it opened) onto a current target: buffile.h refuses it
 * with BF_EINVAL and changes nothing, for writable targets and views alike.
 */
static void op_append_stale(fsm *m)
{
    int ti = pick_handle(m, K(H_CREATED) | K(H_RW) | K(H_EXPORTED) | K(H_RO));
    if (ti < 0 || avoid(m, "stale-append"))
        return;
    fhandle *t = &m->h[ti];
    int tw = writable(t);
    if (stale(m, t) || (!tw && avoid(m, "view")) || (t->nparts > 0 && avoid(m, "multi-append")))
        return;
    int c[NH], nc = 0;
    for (int i = 0; i < NH; i++) {
        const fhandle *s = &m->h[i];
        if (s->used && i != ti && stale(m, s) && !s->view && s->name != t->name &&
            !((s->parts >> t->name) & 1) && m->n[s->name].writer < 0)
            c[nc++] = i;
    }
    if (nc == 0)
        return;
    fhandle *s = &m->h[c[pick(m, (uint64_t)nc)]];
    m->op = tw ? "append of an outdated source" : "append of an outdated source onto a view";
    arm(m, t->sp);
    uint64_t old = t->img.size, oldpos = t->pos, start = UINT64_MAX;
    int rc = bf_file_append(t->f, s->f, &start);
    unsigned refused = ST(BF_EINVAL) | causes(m, t->sp, A_ALLOC | A_OPEN | A_READ, 0);
    CHECK_OR_ABANDON(m, "append-stale", rc < 0 && (refused & ST(rc)),
                     "append of %s (a read-only handle of v%u; the name is at v%u) onto %s "
                     "returned %d (%s), not BF_EINVAL: %s",
                     sname(s->name), s->version, m->n[s->name].version, sname(t->name), rc,
                     bf_strerror(rc), errmsg(m, t->sp));
    disarm(m);
    append_unchanged(m, t, old, oldpos);
}

static void seg_path(const fsm *m, int ni, uint32_t k, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s.%u", m->set, sname(ni), k);
}

/* Append `len` bytes of garbage to `path` (created if missing). */
static void add_garbage(fsm *m, const char *path, uint64_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        CHECK(m, "plant", 0, "cannot plant %s: %s", path, strerror(errno));
        return;
    }
    while (len > 0) {
        size_t n = len < 3ull * m->bs ? (size_t)len : 3ull * m->bs;
        t_fill(&m->drng, T_DATA_RANDOM, m->buf, n);
        if (write(fd, m->buf, n) != (ssize_t)n) {
            CHECK(m, "plant", 0, "cannot write %s: %s", path, strerror(errno));
            break;
        }
        len -= n;
    }
    close(fd);
}

/*
 * What a read-write session of a persisted name leaves when it is killed
 * before its index is durable: segments past those the index counts (they
 * are created in order) and bytes past the index's end in its last one.
 * Readers ignore them; a read-write open removes them, also when it fails
 * half way and is tried again. Often followed by that open, then often
 * with one of its unlinks failing.
 */
static void op_plant(fsm *m)
{
    int ni = (int)pick(m, NNAMES);
    if (m->n[ni].state != N_PERSISTED || m->n[ni].consumed != C_NO || !rw_allowed(m, ni) ||
        avoid(m, "plant"))
        return;
    m->op = "plant a killed session's leftovers";
    char path[1024];
    uint32_t k = 0;
    for (;; k++) {
        seg_path(m, ni, k, path, sizeof(path));
        if (access(path, F_OK) != 0)
            break;
    }
    struct stat st;
    seg_path(m, ni, k - 1, path, sizeof(path));
    if (k > 0 && pick(m, 2) && stat(path, &st) == 0 && (uint64_t)st.st_size < m->segsize)
        add_garbage(m, path, pick(m, m->segsize - (uint64_t)st.st_size + 1));
    uint64_t extra = pick(m, 4);
    for (uint64_t j = 0; j < extra; j++) {
        seg_path(m, ni, k + (uint32_t)j, path, sizeof(path));
        add_garbage(m, path, pick(m, m->segsize + 1));
    }
    if (pick(m, 2)) {
        /* Half the time one of its unlinks fails: the open says BF_EIO, a later one retries. */
        m->unlink_at = pick(m, 2) ? 1 + pick(m, extra + 1) : 0;
        open_name(m, BF_OPEN_READWRITE, ni);
        m->unlink_at = 0;
    }
}

/* A block of the far file: its number, and what it holds (a block of data, or a last byte). */
typedef struct far_blk {
    uint64_t b, seed;
    int last;
} far_blk;

#define NFAR 12

typedef struct far_file {
    far_blk blk[NFAR];
    int n;
    uint64_t size;
} far_file;

static void far_bytes(const fsm *m, const far_blk *fb, unsigned char *buf)
{
    if (fb->last) {
        memset(buf, 0, m->bs);
        buf[m->bs - 1] = (unsigned char)(fb->seed | 1);
    } else {
        t_rng r = {fb->seed};
        t_fill(&r, T_DATA_MIXED, buf, m->bs);
    }
}

static void far_put(fsm *m, far_file *ff, uint64_t b, uint64_t seed, int last)
{
    int i = 0;
    while (i < ff->n && ff->blk[i].b != b)
        i++;
    if (i == NFAR)
        return;
    ff->n += i == ff->n;
    ff->blk[i] = (far_blk){b, seed, last};
    if ((b + 1) * m->bs > ff->size)
        ff->size = (b + 1) * m->bs;
}

static int far_known(const far_file *ff, uint64_t b)
{
    for (int i = 0; i < ff->n; i++)
        if (ff->blk[i].b == b)
            return 1;
    return 0;
}

/* The persisted far file `ni` reopens read-only, elsewhere, with its size and its blocks. */
static void far_verify(fsm *m, int ni, const far_file *ff, const char *tag)
{
    bf_space *v = m->s[VSP].sp;
    bf_file *f = NULL;
    int rc = bf_file_open_named(v, m->set, sname(ni), BF_OPEN_READONLY, &f);
    if (!CHECK(m, tag, rc == BF_OK,
               "%s: %s (%llu bytes, %d far blocks) does not reopen: %d (%s): %s", m->op, sname(ni),
               (unsigned long long)ff->size, ff->n, rc, bf_strerror(rc), bf_space_errmsg(v))) {
        m->abandoned = 1;
        return;
    }
    CHECK(m, tag, bf_file_size(f) == ff->size, "%s: %s reopens with size %llu, not %llu", m->op,
          sname(ni), (unsigned long long)bf_file_size(f), (unsigned long long)ff->size);
    uint64_t nblk = (ff->size + m->bs - 1) / m->bs;
    for (int i = 0; i < ff->n + 2 && !m->abandoned; i++) {
        uint64_t b = i < ff->n ? ff->blk[i].b : pick(m, nblk);
        if (i >= ff->n && far_known(ff, b))
            continue;
        if (i < ff->n)
            far_bytes(m, &ff->blk[i], m->buf);
        else
            memset(m->buf, 0, m->bs); /* a hole */
        rc = bf_file_read_block(f, b, m->got);
        if (!CHECK(m, tag, rc == BF_OK && memcmp(m->got, m->buf, m->bs) == 0,
                   "%s: %s reopened: block %llu %s (%d: %s)", m->op, sname(ni),
                   (unsigned long long)b, rc == BF_OK ? "differs" : "fails", rc,
                   bf_space_errmsg(v)))
            m->abandoned = 1;
    }
    bf_file_close(f);
}

/* The far file's block map meets buffile.h's bound. */
static void far_map_bound(fsm *m, bf_file *f)
{
    uint64_t used = t_map_used(&f->map), mem = bf_map_memory(&f->map);
    CHECK(m, "map-memory", mem <= t_map_bound(used, f->map.n),
          "%s: %llu bytes of block map for %llu blocks holding data of %u covered; buffile.h "
          "allows %llu",
          m->op, (unsigned long long)mem, (unsigned long long)used, f->map.n,
          (unsigned long long)t_map_bound(used, f->map.n));
}

/* Close a handle the model does not keep (the far file), keeping its counters in its space's. */
static int close_unkept(fsm *m, int spi, bf_file *f)
{
    bf_stats st;
    bf_file_stats(f, &st);
    fspace *s = &m->s[spi];
    s->closed_read += st.logical_read;
    s->closed_written += st.logical_written;
    s->closed_blocks += st.blocks_read;
    return bf_file_close(f);
}

/* A name slot no file, handle or leftover uses; -1 if none. */
static int free_name(fsm *m, int besides)
{
    int c[NNAMES], nc = 0;
    for (int i = 0; i < NNAMES; i++) {
        uint64_t bytes;
        if (i != besides && m->n[i].state == N_ABSENT && name_files(m, i, &bytes, NULL) == 0 &&
            g_other[0] == '\0')
            c[nc++] = i;
    }
    return nc ? c[pick(m, (uint64_t)nc)] : -1;
}

/*
 * An append at the largest file size onto far file `f` (size ff->size): a
 * source of one block, of holes only, or of a block and holes. It succeeds
 * when its data ends within the largest size (the source's name is then
 * consumed, and the model keeps it), else BF_EINVAL.
 */
static void far_append(fsm *m, int spi, bf_file *f, far_file *ff, int besides)
{
    int ci = free_name(m, besides);
    if (ci < 0)
        return;
    bf_space *sp = m->s[spi].sp;
    uint64_t bs = m->bs, maxb = BF_MAP_MAX_BLOCK, kind = pick(m, 3), seed = t_next(&m->drng);
    uint64_t src_size = kind == 0 ? bs : kind == 1 ? 1 + pick(m, 3 * bs) : 3 * bs;
    far_blk b0 = {0, seed, 0};
    bf_file *src = NULL;
    int rc = bf_file_create_named(sp, m->set, sname(ci), NULL, &src);
    m->s[spi].created_ok += rc == BF_OK;
    if (rc == BF_OK && kind != 1) {
        far_bytes(m, &b0, m->buf);
        rc = bf_file_write_block(src, 0, m->buf);
    }
    if (rc == BF_OK)
        rc = bf_file_truncate(src, src_size);
    if (rc == BF_OK)
        rc = bf_file_export(src);
    if (!CHECK(m, "far-append", rc == BF_OK, "%s: making source %s: %d (%s)", m->op, sname(ci), rc,
               errmsg(m, spi))) {
        m->abandoned = 1;
        close_unkept(m, spi, src);
        return;
    }
    uint64_t start_blk = (ff->size + bs - 1) / bs, start = 0;
    int fits = start_blk + (src_size + bs - 1) / bs <= maxb + 1;
    rc = bf_file_append(f, src, &start);
    CHECK(m, "far-append", fits ? rc == BF_OK && start == start_blk * bs : rc == BF_EINVAL,
          "%s: append of %llu bytes (%s) at block %llu: %d (%s), expected %s: %s", m->op,
          (unsigned long long)src_size, kind == 1 ? "holes" : "data", (unsigned long long)start_blk,
          rc, bf_strerror(rc), fits ? "BF_OK" : "BF_EINVAL (past the largest file size)",
          errmsg(m, spi));
    close_unkept(m, spi, src);
    if (rc == BF_OK) {
        if (kind != 1)
            far_put(m, ff, start_blk, seed, 0);
        ff->size = start_blk * bs + src_size;
        fname *n = &m->n[ci];
        n->state = N_PERSISTED;
        t_image_free(&n->persisted);
        t_image_resize(&n->persisted, src_size);
        if (kind != 1) {
            far_bytes(m, &b0, m->buf);
            t_image_write(&n->persisted, 0, m->buf, (size_t)bs);
        }
        n->version = 1;
        n->consumed = C_YES;
        n->parts = 0;
        n->nparts = 0;
    } else {
        bf_file_delete_named(m->s[VSP].sp, m->set, sname(ci));
    }
}

/*
 * A named file written at the largest block numbers, or sparsely far out,
 * with writes just past the largest size refused (BF_EINVAL), its block map
 * within buffile.h's bound, perhaps an append at the limit, persisted,
 * reopened elsewhere (and read-write) with every block it holds, deleted.
 */
static void far_run(fsm *m, int ni, int spi)
{
    bf_space *sp = m->s[spi].sp;
    uint64_t bs = m->bs, maxb = BF_MAP_MAX_BLOCK, max_size = (maxb + 1) * bs;
    bf_file *f = NULL;
    int rc = bf_file_create_named(sp, m->set, sname(ni), NULL, &f);
    CHECK_OR_ABANDON(m, "far-limit", rc == BF_OK, "%s: create %s: %s", m->op, sname(ni),
                     errmsg(m, spi));
    m->s[spi].created_ok++;
    far_file ff = {.n = 0, .size = 0};
    uint64_t pattern = pick(m, 4);
    if (pattern == 0) { /* one byte, the last the largest file holds */
        m->op = "far: the last byte";
        far_blk last = {maxb, t_next(&m->drng), 1};
        far_bytes(m, &last, m->got);
        rc = bf_file_seek(f, (int64_t)(max_size - 1), BF_SEEK_SET);
        if (rc == BF_OK)
            rc = bf_file_write(f, m->got + bs - 1, 1);
        if (rc == BF_OK)
            far_put(m, &ff, maxb, last.seed, 1);
    } else if (pattern == 3) { /* grown to near the largest size, a block written below */
        m->op = "far: truncate and write";
        ff.size = max_size - pick(m, bs);
        rc = bf_file_truncate(f, ff.size);
        uint64_t b = ff.size / bs - 1 - pick(m, 4096), seed = t_next(&m->drng);
        far_blk fb = {b, seed, 0};
        far_bytes(m, &fb, m->buf);
        if (rc == BF_OK && (rc = bf_file_write_block(f, b, m->buf)) == BF_OK)
            far_put(m, &ff, b, seed, 0);
    } else { /* the last blocks, or blocks scattered far apart */
        static const uint64_t strides[4] = {4096, 4097, 65536, 1u << 20};
        uint64_t cnt = pattern == 1 ? 1 : 2 + pick(m, 5), stride = strides[pick(m, 4)];
        uint64_t base = pattern == 1 ? maxb - pick(m, 3) : pick(m, 65536);
        m->op = pattern == 1 ? "far: a last block" : "far: scattered blocks";
        for (uint64_t i = 0; i < cnt && rc == BF_OK; i++) {
            uint64_t b = base + i * stride, seed = t_next(&m->drng);
            far_blk fb = {b, seed, 0};
            far_bytes(m, &fb, m->buf);
            if ((rc = bf_file_write_block(f, b, m->buf)) == BF_OK)
                far_put(m, &ff, b, seed, 0);
        }
    }
    CHECK(m, "far-limit", rc == BF_OK, "%s: within the largest file size: %d (%s): %s", m->op, rc,
          bf_strerror(rc), errmsg(m, spi));
    /* Just past the largest size: refused, nothing changes. */
    uint64_t size = bf_file_size(f);
    int past = bf_file_write_block(f, maxb + 1, m->buf);
    int past2 = bf_file_seek(f, (int64_t)(max_size - 1), BF_SEEK_SET) == BF_OK
                    ? bf_file_write(f, m->buf, 2)
                    : BF_OK;
    int past3 = bf_file_truncate(f, max_size + 1);
    CHECK(m, "far-limit",
          past == BF_EINVAL && past2 == BF_EINVAL && past3 == BF_EINVAL && bf_file_size(f) == size,
          "%s: past the largest file size: write_block %d, write %d, truncate %d (BF_EINVAL "
          "each), size %llu -> %llu",
          m->op, past, past2, past3, (unsigned long long)size, (unsigned long long)bf_file_size(f));
    CHECK(m, "far-limit", size == ff.size, "%s: size %llu, model %llu", m->op,
          (unsigned long long)size, (unsigned long long)ff.size);
    far_map_bound(m, f);
    if (pick(m, 2))
        far_append(m, spi, f, &ff, ni);
    rc = close_unkept(m, spi, f);
    CHECK_OR_ABANDON(m, "far-persist", rc == BF_OK, "%s: close of %s: %d (%s): %s", m->op,
                     sname(ni), rc, bf_strerror(rc), errmsg(m, spi));
    far_verify(m, ni, &ff, "far-reopen");
    if (!m->abandoned && pick(m, 4) == 0) {
        m->op = "far: read-write session";
        rc = bf_file_open_named(sp, m->set, sname(ni), BF_OPEN_READWRITE, &f);
        CHECK_OR_ABANDON(m, "far-reopen", rc == BF_OK, "%s: %s: %d (%s): %s", m->op, sname(ni), rc,
                         bf_strerror(rc), errmsg(m, spi));
        far_map_bound(m, f);
        rc = close_unkept(m, spi, f);
        CHECK_OR_ABANDON(m, "far-persist", rc == BF_OK, "%s: close: %d (%s): %s", m->op, rc,
                         bf_strerror(rc), errmsg(m, spi));
        far_verify(m, ni, &ff, "far-reopen");
    }
    if (m->abandoned)
        return;
    rc = bf_file_delete_named(m->s[VSP].sp, m->set, sname(ni));
    uint64_t bytes;
    CHECK(m, "delete-leftover", rc == BF_OK && name_files(m, ni, &bytes, NULL) == 0,
          "%s: delete of %s: %d, %d file(s) left", m->op, sname(ni), rc,
          name_files(m, ni, &bytes, NULL));
}

/* The far file of far_run, in a space whose temp limit is lifted meanwhile. */
static void op_far(fsm *m)
{
    int ni = free_name(m, -1);
    if (ni < 0 || avoid(m, "far"))
        return;
    m->op = "far";
    int spi = (int)pick(m, NSP);
    bf_space *sp = m->s[spi].sp;
    bf_space_set_temp_limit(sp, 0); /* block numbers are the matter here, not the temp limit */
    far_run(m, ni, spi);
    bf_space_set_temp_limit(sp, m->s[spi].limit);
}

/* A device figure of an earlier space: plausible, or (absurd) one no space could measure. */
static void device_seed(fsm *m, bf_auto_device *d, int absurd)
{
    *d = (bf_auto_device)BF_AUTO_DEVICE_INIT;
    d->device_ns = (double)pick(m, 400) / 10;
    d->pace_ns = (double)pick(m, 400) / 10;
    d->limited_share = (double)pick(m, 101) / 100;
    d->transfer_ns = (double)pick(m, 50) / 10;
    d->read_device_ns = (double)pick(m, 400) / 10;
    d->read_transfer_ns = (double)pick(m, 50) / 10;
    d->since_wait = pick(m, UINT64_C(1) << 26);
    /* A count of 0 leaves its figure unused: often so, a device timed or not. */
    uint32_t *count[7] = {&d->device_runs,       &d->pace_windows, &d->share_windows,
                          &d->transfer_windows,  &d->read_runs,    &d->read_transfer_windows,
                          &d->read_share_windows};
    for (int i = 0; i < 7; i++)
        *count[i] = pick(m, 2) ? (uint32_t)pick(m, 64) : 0;
    d->read_limited_windows = (uint32_t)pick(m, (uint64_t)d->read_share_windows + 1);
    /* The writes' runs' time per request, from the picks above (a pick more would change
       what every recorded sequence replays): what the pace says of 4 KiB. */
    d->request_ns = d->pace_ns * 4096;
    d->request_fits = d->pace_windows;
    d->slope_ns = d->transfer_ns - 1; /* below 0 at times, as a fit's noise makes it */
    d->read_slope_ns = d->read_transfer_ns / 2;
    d->slope_windows = d->transfer_windows;
    d->read_slope_windows = d->read_transfer_windows;
    d->read_overlap = d->read_transfer_ns / 4; /* 0 to 1.25 */
    d->read_overlap_windows = d->read_share_windows;
    d->moved_ns = d->transfer_ns / 2; /* 0 to 2.5 */
    d->moved_fits = d->transfer_windows;
    if (!absurd)
        return;
    static const double bad[] = {-1, NAN, INFINITY, -INFINITY, 1e300, 1e20, 2e6, 1.5};
    double v = bad[pick(m, sizeof(bad) / sizeof(bad[0]))];
    double *field[6] = {&d->device_ns,     &d->pace_ns,        &d->transfer_ns,
                        &d->limited_share, &d->read_device_ns, &d->read_transfer_ns};
    if (pick(m, 7) == 6)
        d->read_limited_windows = d->read_share_windows + 1; /* more than all of them */
    else
        *field[pick(m, 6)] = v;
}

/* ---- the step ----------------------------------------------------------------- */

void fsm_step(fsm *m)
{
    if (m->abandoned)
        return;
    m->step++;
    g_steps++;
    m->op = "choose";
    if (m->cfg.watchdog) {
        context(m, g_where, sizeof(g_where));
        alarm(m->cfg.watchdog);
    }
    /* codec=auto decides from its clock: forced at random, a sequence replays exactly. */
    for (int i = 0; i < NSP && !m->cfg.classic; i++)
        if (m->s[i].sp->autoc != NULL)
            m->s[i].sp->autoc->force = (int)pick(m, (uint64_t)m->s[i].sp->autoc->ncand);
    int any = pick_handle(m, K_ANY) >= 0;
    uint64_t k = any ? pick(m, m->cfg.classic ? 100 : 112) : 60 + pick(m, 10);
    if (k < 48) {
        /* A stream or block call on a handle, mostly a writable one for write calls. */
        static const uint8_t w[] = {14, 10, 5, 4, 3, 1, 6, 6, 2};
        uint64_t r = pick(m, 51), op = 0;
        while (r >= w[op]) {
            r -= w[op];
            op++;
        }
        int writes = op == 0 || op == 3 || op == 6 || op == 8;
        int hi = writes && pick(m, 8) != 0 ? pick_handle(m, K_WRITABLE) : -1;
        if (hi < 0)
            hi = pick_handle(m, K_ANY);
        fhandle *h = &m->h[hi];
        arm(m, h->sp);
        switch (op) {
        case 0: op_write(m, h); break;
        case 1: op_read(m, h); break;
        case 2: op_seek(m, h); break;
        case 3: op_truncate(m, h); break;
        case 4: op_flush(m, h, 0); break;
        case 5: op_flush(m, h, 1); break;
        case 6: op_write_block(m, h); break;
        case 7: op_read_block(m, h); break;
        default: op_discard(m, h); break;
        }
        disarm(m);
        if (!m->abandoned && m->h[hi].used)
            verify_handle(m, h, "read-bytes");
    } else if (k < 54) {
        op_close(m, pick_handle(m, K_ANY));
    } else if (k < 58) {
        op_export(m, pick_handle(m, K(H_CREATED) | K(H_RW) | (pick(m, 8) ? 0 : K_ANY)));
    } else if (k < 66) {
        op_create(m, 0);
    } else if (k < 68) {
        if (!avoid(m, "anon-unlink")) /* anonymous files: their close unlinks */
            op_create(m, 1);
    } else if (k < 76) {
        op_open(m, BF_OPEN_READONLY);
    } else if (k < 82) {
        op_open(m, BF_OPEN_READWRITE);
    } else if (k < 93) {
        op_append(m);
    } else if (k < 100) {
        op_delete(m);
    } else if (k < 105) {
        op_append_stale(m);
    } else if (k < 110) {
        op_plant(m);
    } else {
        op_far(m); /* few: a directory of 2^20 leaves to cross, again and again */
    }
    disarm(m);
    if (getenv("BF_FSMODEL_TRACE")) {
        char ctx[256];
        context(m, ctx, sizeof(ctx));
        fprintf(stderr, "fsmodel trace: %s\n", ctx);
    }
    if (!m->abandoned)
        check_all(m);
    /* Now and then read every handle back whole. */
    if (!m->abandoned && m->step % 16 == 0)
        for (int i = 0; i < NH; i++)
            if (m->h[i].used)
                verify_handle(m, &m->h[i], "read-bytes");
    limit_tick(m);
    if (m->cfg.watchdog)
        alarm(0);
}

int fsm_abandoned(const fsm *m)
{
    return m->abandoned;
}

/* ---- life cycle ------------------------------------------------------------------ */

fsm *fsm_open(const fsm_config *cfg)
{
    if (g_seqs++ == 0)
        clock_gettime(CLOCK_MONOTONIC, &g_t0);
    if (cfg->watchdog)
        signal(SIGALRM, on_alarm);
    fsm *m = calloc(1, sizeof(*m));
    if (m == NULL)
        abort();
    m->cfg = *cfg;
    m->rng.s = cfg->seed;
    if (cfg->record != NULL && cfg->pick == NULL) {
        m->rec = fopen(cfg->record, "wb");
        if (m->rec == NULL)
            abort();
        setvbuf(m->rec, NULL, _IONBF, 0); /* complete even if the library crashes */
        record(m, cfg->seed, 4);
    }
    m->drng.s = cfg->seed * 0x9e3779b97f4a7c15ull + 1;
    m->fds_at_start = open_fds();
    m->bs = cfg->block_size ? cfg->block_size : pick(m, 4) == 0 ? 8192 : 4096;
    m->segsize = pick(m, 2) ? ((2 * ((uint64_t)m->bs + 4096) + 4095) / 4096) * 4096 : 65536;
    m->buf = malloc(3 * (size_t)m->bs + 1);
    m->got = malloc(3 * (size_t)m->bs + 1);
    if (m->buf == NULL || m->got == NULL)
        abort();
    snprintf(m->set, sizeof(m->set), "%s/set", cfg->parent);
    t_rm_rf(m->set);
    uint32_t fds = pick(m, 2) ? 2 + (uint32_t)pick(m, 3) : 0;
    bf_codec codecs[6];
    int nc = 0;
    for (int c = BF_CODEC_NONE; c <= BF_CODEC_ZLIB; c++)
        if (bf_codec_available((bf_codec)c))
            codecs[nc++] = (bf_codec)c;
    if (!cfg->classic)
        codecs[nc++] = BF_CODEC_AUTO;
    if (cfg->sealed)
        codecs[nc++] = (bf_codec)T_RLE_ID;
    static const unsigned char key[BF_KEY_BYTES] = "fsmodel: one key for all spaces";
    bf_user_codec rle = t_rle_codec(NULL, 1);
    for (int i = 0; i <= NSP; i++) {
        fspace *s = &m->s[i];
        t_counting_init(&s->cnt);
        s->cnt.poison = 1; /* library use-after-free shows in release builds too */
        bf_space_options o;
        bf_space_options_init(&o);
        o.temp_dir = cfg->parent;
        o.block_size = m->bs;
        o.codec = codecs[pick(m, (uint64_t)nc)];
        o.segment_size = m->segsize;
        o.allocator = &s->cnt.hooks;
        if (cfg->sealed) {
            o.encrypt = 1;
            o.key = key;
            o.user_codecs = &rle;
            o.n_user_codecs = 1;
        }
        /* Half the time a tiny descriptor cache: the LRU evicts on every other open, where a
           stale entry (a freed file's segment) shows even without ASan. */
        o.max_open_fds = fds;
        /* The reader's limit is small: read-only handles must not count against it. */
        s->base = i == 1 ? 6ull * (m->bs + 64) + pick(m, 4) * (uint64_t)m->bs : 0;
        s->limit = s->base;
        o.temp_limit = s->limit;
        char err[256] = "";
        /* codec=auto spaces often start from what an earlier one passed on: figures a space
           measures, or absurd ones, which buffile.h refuses (then from nothing). */
        bf_auto_device seed;
        uint64_t seeded = o.codec == BF_CODEC_AUTO && i < NSP ? pick(m, 3) : 0;
        if (avoid(m, "seed"))
            seeded = 0;
        int rc = BF_EINVAL;
        if (seeded) {
            device_seed(m, &seed, seeded == 2);
            o.auto_device = &seed;
            rc = bf_space_create(&o, &s->sp, err, sizeof(err));
            CHECK(m, "auto-seed", (rc == BF_OK) == t_device_measurable(&seed),
                  "space %d from device figures %g, %g, %g, share %g: %d (%s): %s", i,
                  seed.device_ns, seed.pace_ns, seed.transfer_ns, seed.limited_share, rc,
                  bf_strerror(rc), err);
            o.auto_device = NULL;
        }
        if (rc != BF_OK && bf_space_create(&o, &s->sp, err, sizeof(err)) != BF_OK) {
            char msg[400];
            snprintf(msg, sizeof(msg), "fsmodel: bf_space_create: %s", err);
            cfg->fail(cfg->fail_ctx, msg);
            abort();
        }
        snprintf(s->dir, sizeof(s->dir), "%s", bf_space_dir(s->sp));
        s->io = t_fault_io(&s->flt);
        bf_space_set_io(s->sp, &s->io);
        t_workers_apply(s->sp); /* BF_TEST_WORKERS: the same model with workers */
    }
    for (int i = 0; i < NNAMES; i++)
        m->n[i].writer = -1;
    m->fsp = -1;
    if (bf_fileset_create(m->s[0].sp, m->set) != BF_OK) {
        char msg[700];
        snprintf(msg, sizeof(msg), "fsmodel: bf_fileset_create %s: %s", m->set,
                 bf_space_errmsg(m->s[0].sp));
        cfg->fail(cfg->fail_ctx, msg);
        abort();
    }
    return m;
}

static void free_model(fsm *m)
{
    if (m->rec != NULL)
        fclose(m->rec);
    for (int i = 0; i < NH; i++)
        t_image_free(&m->h[i].img);
    for (int i = 0; i < NNAMES; i++)
        t_image_free(&m->n[i].persisted);
    free(m->buf);
    free(m->got);
    free(m);
}

void fsm_finish(fsm *m)
{
    disarm(m);
    if (m->abandoned) {
        /* A tolerated failure left the library where the model cannot follow: tear down. */
        for (int i = 0; i < NH; i++)
            if (m->h[i].used)
                bf_file_close(m->h[i].f);
        for (int i = 0; i <= NSP; i++)
            bf_space_destroy(m->s[i].sp);
        t_rm_rf(m->set);
        free_model(m);
        return;
    }
    m->step++;
    m->finishing = 1;
    for (int i = 0; i < NSP; i++) {
        m->s[i].limit = m->s[i].base = 0;
        m->s[i].limit_steps = 0;
        bf_space_set_temp_limit(m->s[i].sp, 0);
    }
    /* Everything closes without faults, and every file reads back as persisted. */
    for (int i = 0; i < NH && !m->abandoned; i++) {
        if (!m->h[i].used)
            continue;
        verify_handle(m, &m->h[i], "read-bytes");
        op_close(m, i);
        m->op = "finish: close";
        CHECK(m, "finish", !m->h[i].used, "handle %d still open", i);
    }
    for (int ni = 0; ni < NNAMES && !m->abandoned; ni++) {
        fname *n = &m->n[ni];
        m->op = "finish: reopen";
        verify_persisted(m, ni, "finish-reopen");
        if (n->state != N_PERSISTED || m->abandoned)
            continue;
        bf_file *f;
        int rc = bf_file_open_named(m->s[0].sp, m->set, sname(ni), BF_OPEN_READWRITE, &f);
        if (n->consumed != C_NO) {
            CHECK(m, "consumed-busy", rc == BF_EBUSY || (n->consumed == C_MAYBE && rc == BF_OK),
                  "read-write open of consumed %s returned %d, not BF_EBUSY", sname(ni), rc);
            if (rc == BF_OK)
                bf_file_close(f);
            continue;
        }
        if (!CHECK(m, "finish-reopen", rc == BF_OK, "read-write open of %s: %d (%s): %s", sname(ni),
                   rc, bf_strerror(rc), errmsg(m, 0)))
            continue;
        int hi = new_handle(m);
        add_handle(m, hi, f, 0, ni, H_RW);
        verify_handle(m, &m->h[hi], "finish-reopen");
        op_close(m, hi);
        m->op = "finish: reopen after read-write close";
        verify_persisted(m, ni, "finish-reopen");
    }
    m->op = "finish: destroy";
    if (!m->abandoned) {
        int rc = bf_fileset_destroy(m->s[VSP].sp, m->set);
        CHECK(m, "finish", rc == BF_OK && t_dir_entries(m->set) == -1,
              "bf_fileset_destroy returned %d, set directory %s", rc,
              t_dir_entries(m->set) == -1 ? "gone" : "still there");
    }
    int abandoned = m->abandoned;
    for (int i = 0; i <= NSP; i++) {
        if (abandoned) {
            for (int k = 0; k < NH; k++)
                if (m->h[k].used && m->h[k].sp == i)
                    bf_file_close(m->h[k].f), m->h[k].used = 0;
        }
        bf_space_destroy(m->s[i].sp);
        m->s[i].sp = NULL;
        if (abandoned)
            continue;
        CHECK(m, "leak", m->s[i].cnt.live_bytes == 0,
              "space %d: %lld bytes still allocated after bf_space_destroy", i,
              (long long)m->s[i].cnt.live_bytes);
        CHECK(m, "leak", t_dir_entries(m->s[i].dir) == -1,
              "space %d: its directory %s is left after bf_space_destroy", i, m->s[i].dir);
    }
    t_rm_rf(m->set);
    if (!abandoned)
        CHECK(m, "leak", open_fds() == m->fds_at_start,
              "%d descriptors open after everything was destroyed, %d before", open_fds(),
              m->fds_at_start);
    free_model(m);
}

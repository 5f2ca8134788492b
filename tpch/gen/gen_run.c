/* tpch_generate: splits the requested tables into fixed-size jobs (row or
 * order ranges), lets worker threads fill in-memory chunks in any order, and
 * has the calling thread write them strictly in job order. Job boundaries
 * never influence values, so the bytes written do not depend on the thread
 * count. A ring of 2*workers+2 slots bounds memory: job j may start only
 * once job j-slots has been written. Orders and lineitem (the bulk) go
 * first so that completing their .bin files (copying string bytes into
 * place) runs on a finisher thread while the small tables are generated.
 * meta.txt is removed first and written last, so a directory without it is
 * incomplete. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "gen_binw.h"
#include "gen_sink.h"
#include "tpch_gen.h"

#define MAX_THREADS 64
#define ORDERS_LINEITEM ((1u << TPCH_ORDERS) | (1u << TPCH_LINEITEM))

/* Units per job: a few MB of output each, enough to amortise hand-offs. */
static const uint64_t job_units[TPCH_NTABLES] = {
    [TPCH_PART] = 16384, [TPCH_SUPPLIER] = 8192, [TPCH_PARTSUPP] = 16384,
    [TPCH_CUSTOMER] = 16384, [TPCH_ORDERS] = 8192, [TPCH_LINEITEM] = 8192,
    [TPCH_NATION] = 25, [TPCH_REGION] = 5};

typedef struct {
    tpch_table_id t; /* TPCH_ORDERS stands for orders and/or lineitem */
    uint64_t first, n;
} job;

typedef struct {
    tpch_sink sink[2]; /* [0] the table (or orders), [1] lineitem */
    int ready;
} slot;

/* Completes one .bin file in the background. */
typedef struct {
    pthread_t tid;
    tpch_binw *w;
    int started, rc;
    char err[256];
} finisher;

typedef struct {
    const tpch_ctx *ctx;
    tpch_format fmt;
    unsigned mask;
    job *jobs;
    size_t njobs, next, written, nslots;
    slot *slots;
    int abort;
    pthread_mutex_t mu;
    pthread_cond_t cond_ready, cond_free;
    int fd[TPCH_NTABLES];           /* .tbl outputs */
    tpch_binw *binw[TPCH_NTABLES];  /* .bin outputs being appended to */
    finisher fin[TPCH_NTABLES];
    size_t last_job[TPCH_NTABLES];  /* the job completing each table */
} run;

static int wants(const run *R, tpch_table_id t)
{
    return (R->mask >> t) & 1u;
}

static void prepare_sink(tpch_sink *s, tpch_format fmt, tpch_table_id t, int wanted)
{
    if (!wanted) {
        tpch_sink_free(s);
        s->schema = NULL;
        return;
    }
    if (s->schema != tpch_schema_get(t) || s->fmt != fmt) {
        tpch_sink_free(s);
        tpch_sink_init(s, fmt, t);
    }
    tpch_sink_reset(s);
}

static void fill_slot(run *R, const job *J, slot *S)
{
    if (J->t == TPCH_ORDERS) {
        prepare_sink(&S->sink[0], R->fmt, TPCH_ORDERS, wants(R, TPCH_ORDERS));
        prepare_sink(&S->sink[1], R->fmt, TPCH_LINEITEM, wants(R, TPCH_LINEITEM));
        tpch_chunk_gen(R->ctx, TPCH_ORDERS, J->first, J->n,
                       S->sink[0].schema ? &S->sink[0] : NULL,
                       S->sink[1].schema ? &S->sink[1] : NULL);
    } else {
        prepare_sink(&S->sink[0], R->fmt, J->t, 1);
        prepare_sink(&S->sink[1], R->fmt, J->t, 0);
        tpch_chunk_gen(R->ctx, J->t, J->first, J->n, &S->sink[0], NULL);
    }
}

static void *worker(void *arg)
{
    run *R = arg;
    pthread_mutex_lock(&R->mu);
    for (;;) {
        while (!R->abort && R->next < R->njobs && R->next >= R->written + R->nslots)
            pthread_cond_wait(&R->cond_free, &R->mu);
        if (R->abort || R->next >= R->njobs)
            break;
        size_t j = R->next++;
        slot *S = &R->slots[j % R->nslots];
        pthread_mutex_unlock(&R->mu);
        fill_slot(R, &R->jobs[j], S);
        pthread_mutex_lock(&R->mu);
        S->ready = 1;
        pthread_cond_broadcast(&R->cond_ready);
    }
    pthread_mutex_unlock(&R->mu);
    return NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int emit(run *R, tpch_table_id t, tpch_sink *s, char *err, size_t errlen)
{
    if (tpch_sink_failed(s)) {
        snprintf(err, errlen, "out of memory while generating %s", tpch_table_name(t));
        return -1;
    }
    if (R->fmt == TPCH_FMT_BIN)
        return tpch_binw_append(R->binw[t], s, err, errlen);
    if (write_all(R->fd[t], s->text.p, s->text.len) != 0) {
        snprintf(err, errlen, "cannot write %s.tbl: %s", tpch_table_name(t), strerror(errno));
        return -1;
    }
    return 0;
}

static int write_slot(run *R, const job *J, slot *S, char *err, size_t errlen)
{
    for (int i = 0; i < 2; i++) {
        if (!S->sink[i].schema)
            continue;
        tpch_table_id t = J->t == TPCH_ORDERS && i == 1 ? TPCH_LINEITEM : J->t;
        if (emit(R, t, &S->sink[i], err, errlen) != 0)
            return -1;
    }
    return 0;
}

static void *finish_main(void *arg)
{
    finisher *f = arg;
    f->rc = tpch_binw_finish(f->w, f->err, sizeof f->err);
    return NULL;
}

/* Hands a fully appended .bin file to a finisher thread (or finishes it
 * here when no thread can be started). */
static int start_finish(run *R, tpch_table_id t, char *err, size_t errlen)
{
    finisher *f = &R->fin[t];
    f->w = R->binw[t];
    R->binw[t] = NULL;
    if (pthread_create(&f->tid, NULL, finish_main, f) == 0) {
        f->started = 1;
        return 0;
    }
    return tpch_binw_finish(f->w, err, errlen);
}

/* The writer side, on the calling thread. */
static int drain(run *R, void (*progress)(void *, uint64_t, uint64_t), void *pctx, char *err,
                 size_t errlen)
{
    for (size_t j = 0; j < R->njobs; j++) {
        slot *S = &R->slots[j % R->nslots];
        pthread_mutex_lock(&R->mu);
        while (!S->ready)
            pthread_cond_wait(&R->cond_ready, &R->mu);
        pthread_mutex_unlock(&R->mu);
        int rc = write_slot(R, &R->jobs[j], S, err, errlen);
        for (int t = 0; rc == 0 && t < TPCH_NTABLES; t++)
            if (R->binw[t] && R->last_job[t] == j)
                rc = start_finish(R, (tpch_table_id)t, err, errlen);
        pthread_mutex_lock(&R->mu);
        S->ready = 0;
        R->written = j + 1;
        R->abort = rc != 0;
        pthread_cond_broadcast(&R->cond_free);
        pthread_mutex_unlock(&R->mu);
        if (rc != 0)
            return -1;
        if (progress)
            progress(pctx, j + 1, R->njobs);
    }
    return 0;
}

static void add_jobs(run *R, tpch_table_id t)
{
    uint64_t units = tpch_counts_units(&R->ctx->n, t);
    for (uint64_t first = 0; first < units; first += job_units[t]) {
        uint64_t n = units - first < job_units[t] ? units - first : job_units[t];
        R->jobs[R->njobs++] = (job){t, first, n};
    }
    R->last_job[t] = R->njobs - 1;
    if (t == TPCH_ORDERS)
        R->last_job[TPCH_LINEITEM] = R->njobs - 1;
}

static int make_jobs(run *R)
{
    size_t cap = 0;
    for (int t = 0; t < TPCH_NTABLES; t++)
        cap += tpch_counts_units(&R->ctx->n, (tpch_table_id)t) / job_units[t] + 1;
    R->jobs = malloc(cap * sizeof *R->jobs);
    if (!R->jobs)
        return -1;
    if (R->mask & ORDERS_LINEITEM)
        add_jobs(R, TPCH_ORDERS);
    for (int t = 0; t < TPCH_NTABLES; t++)
        if (t != TPCH_ORDERS && t != TPCH_LINEITEM && wants(R, (tpch_table_id)t))
            add_jobs(R, (tpch_table_id)t);
    return 0;
}

static uint64_t lineitem_rows(const tpch_ctx *c)
{
    uint64_t n = 0;
    for (uint64_t k = 0; k < c->n.orders; k++)
        n += (uint64_t)tpch_order_nlines(c, k);
    return n;
}

static int open_outputs(run *R, const char *dir, char *err, size_t errlen)
{
    for (int t = 0; t < TPCH_NTABLES; t++) {
        if (!wants(R, (tpch_table_id)t))
            continue;
        if (R->fmt == TPCH_FMT_BIN) {
            uint64_t rows = t == TPCH_LINEITEM ? lineitem_rows(R->ctx)
                                               : tpch_counts_units(&R->ctx->n, (tpch_table_id)t);
            if (tpch_binw_open(&R->binw[t], dir, (tpch_table_id)t, rows, err, errlen) != 0)
                return -1;
            continue;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.tbl", dir, tpch_table_name((tpch_table_id)t));
        R->fd[t] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (R->fd[t] < 0) {
            snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Closes the outputs; on success completes .bin files. */
static int close_outputs(run *R, int ok, char *err, size_t errlen)
{
    int rc = ok ? 0 : -1;
    for (int t = 0; t < TPCH_NTABLES; t++) {
        if (R->fd[t] >= 0 && close(R->fd[t]) != 0 && rc == 0) {
            snprintf(err, errlen, "cannot write %s.tbl: %s", tpch_table_name((tpch_table_id)t),
                     strerror(errno));
            rc = -1;
        }
        finisher *f = &R->fin[t];
        if (f->started) {
            pthread_join(f->tid, NULL);
            if (f->rc != 0 && rc == 0) {
                snprintf(err, errlen, "%s", f->err);
                rc = -1;
            }
        }
        if (R->binw[t] && rc == 0)
            rc = tpch_binw_finish(R->binw[t], err, errlen);
        else if (R->binw[t])
            tpch_binw_abort(R->binw[t]);
    }
    return rc;
}

static int mkdir_p(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "output directory name too long");
        return -1;
    }
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create directory %s: %s", path, strerror(errno));
            return -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory", dir);
        return -1;
    }
    return 0;
}

static int write_meta(const char *dir, double sf, tpch_format fmt, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "sf=%g\nformat=1\noutput=%s\n", sf,
                      fmt == TPCH_FMT_BIN ? "bin" : "tbl") < 0 ||
        fclose(f) != 0) {
        snprintf(err, errlen, "cannot write %s", path);
        return -1;
    }
    return 0;
}

static int run_threads(run *R, int nthreads, void (*progress)(void *, uint64_t, uint64_t),
                       void *pctx, char *err, size_t errlen)
{
    pthread_t tid[MAX_THREADS];
    int started = 0;
    while (started < nthreads && pthread_create(&tid[started], NULL, worker, R) == 0)
        started++;
    int rc;
    if (started == 0) {
        snprintf(err, errlen, "cannot start threads");
        rc = -1;
    } else {
        rc = drain(R, progress, pctx, err, errlen);
    }
    pthread_mutex_lock(&R->mu);
    R->abort = 1;
    pthread_cond_broadcast(&R->cond_free);
    pthread_mutex_unlock(&R->mu);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return rc;
}

int tpch_generate(double sf, const char *outdir, tpch_format fmt, unsigned tables_mask,
                  int threads, void (*progress)(void *ctx, uint64_t done, uint64_t total),
                  void *progress_ctx, char *err, size_t errlen)
{
    if (!(sf >= 0.01 - 1e-9 && sf <= 100 + 1e-9)) {
        snprintf(err, errlen, "scale factor must be between 0.01 and 100");
        return -1;
    }
    if (!outdir || !*outdir) {
        snprintf(err, errlen, "no output directory given");
        return -1;
    }
    if (fmt != TPCH_FMT_TBL && fmt != TPCH_FMT_BIN) {
        snprintf(err, errlen, "unknown output format");
        return -1;
    }
    if (tables_mask >> TPCH_NTABLES) {
        snprintf(err, errlen, "unknown table in table mask");
        return -1;
    }
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (mkdir_p(outdir, err, errlen) != 0)
        return -1;
    char meta[4096];
    snprintf(meta, sizeof meta, "%s/meta.txt", outdir);
    if (unlink(meta) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", meta, strerror(errno));
        return -1;
    }

    tpch_ctx ctx;
    if (tpch_ctx_init(&ctx, sf, err, errlen) != 0)
        return -1;
    run R = {.ctx = &ctx, .fmt = fmt, .mask = tables_mask ? tables_mask : (1u << TPCH_NTABLES) - 1};
    for (int t = 0; t < TPCH_NTABLES; t++)
        R.fd[t] = -1;
    R.nslots = 2 * (size_t)threads + 2;
    pthread_mutex_init(&R.mu, NULL);
    pthread_cond_init(&R.cond_ready, NULL);
    pthread_cond_init(&R.cond_free, NULL);
    R.slots = calloc(R.nslots, sizeof *R.slots);
    int rc = -1;
    if (!R.slots || make_jobs(&R) != 0)
        snprintf(err, errlen, "out of memory");
    else if (open_outputs(&R, outdir, err, errlen) == 0)
        rc = run_threads(&R, threads, progress, progress_ctx, err, errlen);
    rc = close_outputs(&R, rc == 0, err, errlen);
    if (rc == 0)
        rc = write_meta(outdir, sf, fmt, err, errlen);
    for (size_t i = 0; R.slots && i < R.nslots; i++) {
        tpch_sink_free(&R.slots[i].sink[0]);
        tpch_sink_free(&R.slots[i].sink[1]);
    }
    free(R.slots);
    free(R.jobs);
    pthread_cond_destroy(&R.cond_free);
    pthread_cond_destroy(&R.cond_ready);
    pthread_mutex_destroy(&R.mu);
    tpch_ctx_free(&ctx);
    return rc;
}

/*
 * run.c - one query run (see run.h).
 *
 * The setjmp frame here is the landing point of q_fail: whatever operator
 * failed, the registry closes all operators and the space is destroyed,
 * which deletes every temp file the run created.
 */
#include "run.h"

#include "spill_codecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "queries/queries.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* User + system CPU time of the process so far, from the OS. */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* CPU time of the calling thread so far: the query's thread, without the space's workers
   (with one worker on 2 cores its CPU bounds the wall: issue 49). */
static double thread_cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Voluntary context switches of the calling thread so far (0 where not counted). */
static long thread_waits(void)
{
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        return ru.ru_nvcsw;
#endif
    return 0;
}

#define MEM_SLACK 1.1

const char *run_mem_mark(const run_result *r, int64_t work_mem)
{
    if (work_mem <= 0)
        return NULL;
    if ((double)r->op_peak <= MEM_SLACK * (double)work_mem)
        return "ok";
    return r->op_over <= MEM_SLACK ? "floor" : "OVER";
}

void run_space_options(const run_config *cfg, bf_space_options *so)
{
    bf_space_options_init(so);
    so->temp_dir = cfg->temp_dir;
    so->codec = cfg->codec;
    so->level = cfg->level;
    so->block_size = cfg->block_size;
    so->temp_limit = cfg->temp_limit;
    so->io_limit = cfg->io_limit;
    so->auto_device = cfg->auto_device;
    so->encrypt = cfg->encrypt;
    so->user_codecs = spill_user_codecs(&so->n_user_codecs);
}

int run_query(const struct tpch_db *db, int qnum, const run_config *cfg, run_result *r)
{
    memset(r, 0, sizeof *r);
    const qdef *def = query_get(qnum);
    if (!def) {
        snprintf(r->err, sizeof r->err, "no query %d (1..%d)", qnum, TPCH_NQUERIES);
        return -1;
    }
    bf_space_options so;
    run_space_options(cfg, &so);
    bf_space *space = NULL;
    char err[256] = "";
    if (bf_space_create(&so, &space, err, sizeof err) != 0) {
        snprintf(r->err, sizeof r->err, "cannot create spill space: %s", err);
        return -1;
    }
    if (cfg->threads > 0 && bf_space_set_workers(space, (unsigned)cfg->threads, NULL, NULL) != 0) {
        snprintf(r->err, sizeof r->err, "cannot give the spill space workers: %s",
                 bf_space_errmsg(space));
        bf_space_destroy(space);
        return -1;
    }

    static _Thread_local qctx q; /* survives longjmp without volatile games */
    q_init(&q, space, db, cfg->work_mem);
    q.block_size = cfg->block_size;
    jmp_buf jb;
    q.jb = &jb;
    double t0 = now_seconds(), c0 = cpu_seconds(), tc0 = thread_cpu_seconds();
    long w0 = thread_waits();
    int rc = 0;
    if (setjmp(jb) == 0) {
        op *root = def->plan(&q);
        const tup *t;
        while ((t = root->next(root)) != NULL) {
            result_format_row(&r->text, t, def->ncols, def->cols);
            r->rows++;
        }
    } else {
        snprintf(r->err, sizeof r->err, "Q%d: %s", qnum, q.errmsg);
        rc = -1;
    }
    q_close_all(&q);
    r->seconds = now_seconds() - t0;
    r->cpu_seconds = cpu_seconds() - c0;
    r->caller_cpu_seconds = thread_cpu_seconds() - tc0;
    r->caller_waits = thread_waits() - w0;
    bf_space_stats(space, &r->spill);
    snprintf(r->auto_reason, sizeof r->auto_reason, "%s", bf_space_auto_reason(space));
    if (cfg->auto_device != NULL)
        bf_space_auto_device(space, cfg->auto_device);
    r->ops = q.st;
    r->op_peak = q.op_peak;
    r->op_peak_floor = q.op_peak_floor;
    r->op_over = q.op_over;
    r->mem_peak = q.mem_peak;
    r->heap_peak = q.heap_peak;
    bf_space_destroy(space);
    if (rc != 0)
        sb_free(&r->text);
    return rc;
}

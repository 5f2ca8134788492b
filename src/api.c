/*
 * api.c - the public calls that span the library's layers, so that no layer
 * calls the one above it:
 *   bf_space_create                the options checked, then the space assembled:
 *                                  codecs, seal, I/O stack, segment cache, directory
 *   bf_file_close, bf_file_abort   a named file through the file set, an
 *                                  anonymous one through the stream
 *   bf_space_destroy               the space's cursors, its open files, its place
 *                                  in a budget, then its segment cache and the space
 *   bf_space_stats_sized           the space's figures, its segment cache's and its
 *                                  open files' memory
 *
 * Invariants: none of its own; it only orders calls into fileset.c,
 * cursor.c, file.c, budget.c and space.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "abi.h"
#include "alloc.h"
#include "budget.h"
#include "buffile.h"
#include "codec.h"
#include "cursor.h"
#include "seal.h"
#include "sweep.h"
#include "file.h"
#include "fileset.h"
#include "segment.h"
#include "space.h"

static int reject(char *errbuf, size_t len, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int reject(char *errbuf, size_t len, int status, const char *fmt, ...)
{
    if (errbuf != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, len, fmt, ap);
        va_end(ap);
    }
    return status;
}

static uint32_t auto_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 256;
    rlim_t n = rl.rlim_cur / 4;
    return (uint32_t)(n < 16 ? 16 : n > 1024 ? 1024 : n);
}

int bf_space_create(const bf_space_options *opts, bf_space **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    bf_space_options o;
    bf_space_options_init(&o);
    char why[256];
    if (opts != NULL && bf_abi_read(&o, &bf_abi_space_options, opts, why, sizeof(why)) != BF_OK)
        return reject(errbuf, errlen, BF_EINVAL, "%s", why);
    bf_auto_device seed = BF_AUTO_DEVICE_INIT;
    if (o.auto_device != NULL &&
        bf_abi_read(&seed, &bf_abi_auto_device, o.auto_device, why, sizeof(why)) != BF_OK)
        return reject(errbuf, errlen, BF_EINVAL, "%s", why);
    uint32_t bs = o.block_size;
    if (bs < BF_BLOCK_SIZE_MIN || bs > BF_BLOCK_SIZE_MAX || (bs & (bs - 1)) != 0)
        return reject(errbuf, errlen, BF_EINVAL,
                      "bad block size %u: must be a power of two from %u to %u", bs,
                      BF_BLOCK_SIZE_MIN, BF_BLOCK_SIZE_MAX);
    if (o.n_user_codecs > BF_USER_CODECS_MAX || (o.n_user_codecs > 0 && o.user_codecs == NULL))
        return reject(errbuf, errlen, BF_EINVAL, "bad user_codecs: %u of them (at most %d)",
                      o.n_user_codecs, BF_USER_CODECS_MAX);
    const bf_codec_ops *ops = NULL;
    bf_codec_ops user_default;
    for (uint32_t i = 0; i < o.n_user_codecs; i++) {
        const bf_user_codec *u = &o.user_codecs[i];
        if (bf_user_codec_check(u, why, sizeof(why)) != BF_OK)
            return reject(errbuf, errlen, BF_EINVAL, "%s", why);
        for (uint32_t j = 0; j < i; j++)
            if (o.user_codecs[j].id == u->id || strcmp(o.user_codecs[j].name, u->name) == 0)
                return reject(errbuf, errlen, BF_EINVAL,
                              "caller codecs %d and %d share an id or a name", j, i);
        if (u->id == (int)o.codec) {
            bf_user_codec_ops(u, u->name, &user_default); /* its levels, for the check below */
            ops = &user_default;
        }
    }
    if (ops == NULL && bf_codec_name(o.codec) == NULL)
        return reject(errbuf, errlen, BF_EINVAL, "unknown codec %d", (int)o.codec);
    if (ops == NULL)
        ops = bf_codec_ops_get(o.codec);
    int32_t level = BF_LEVEL_DEFAULT;
    if (o.codec == BF_CODEC_AUTO) {
        if (o.level != BF_LEVEL_DEFAULT)
            return reject(errbuf, errlen, BF_EINVAL,
                          "codec auto chooses its own levels: leave the level at its default");
    } else if (ops == NULL) {
        return reject(errbuf, errlen, BF_ENOCODEC, "codec %s was not built into this library",
                      bf_codec_name(o.codec));
    } else if (bf_codec_resolve_level(ops, o.level, &level) != BF_OK) {
        return reject(errbuf, errlen, BF_EINVAL, "level %d out of range %d..%d for %s",
                      (int)o.level, (int)ops->min_level, (int)ops->max_level, ops->name);
    }
    if (o.auto_prefer != BF_AUTO_TIME && o.auto_prefer != BF_AUTO_SPACE)
        return reject(errbuf, errlen, BF_EINVAL, "bad auto_prefer %d (BF_AUTO_TIME, BF_AUTO_SPACE)",
                      o.auto_prefer);
    if (!bf_auto_device_valid(&seed))
        return reject(
            errbuf, errlen, BF_EINVAL,
            "bad auto_device: no space measures those figures (device_ns, pace_ns "
            "and read_device_ns are 0..2^64 ns/B, transfer_ns and read_transfer_ns "
            "0..%.0f, limited_share 0..1, read_limited_windows at most read_share_windows, "
            "request_ns, read_overlap and moved_ns 0..2^64, slope_ns and read_slope_ns "
            "-2^64..2^64)",
            BF_AUTO_WAIT_NS + BF_AUTO_WAIT_NS_B);
    if (o.segment_size == 0)
        o.segment_size = BF_SEGMENT_SIZE_DEFAULT;
    if (o.segment_size % 4096 != 0 || o.segment_size < 2 * ((uint64_t)bs + 4096))
        return reject(errbuf, errlen, BF_EINVAL,
                      "bad segment size %llu: must be a multiple of 4096 and hold two blocks",
                      (unsigned long long)o.segment_size);
    const bf_allocator *a = o.allocator ? o.allocator : &bf_default_allocator;
    if (a->malloc_fn == NULL || a->realloc_fn == NULL || a->free_fn == NULL)
        return reject(errbuf, errlen, BF_EINVAL, "allocator hooks must all be set");

    bf_space *sp = bf_calloc(a, 1, sizeof(*sp));
    if (sp == NULL)
        return reject(errbuf, errlen, BF_ENOMEM, "out of memory creating a space");
    sp->alloc = *a;
    sp->block_size = bs;
    sp->codec = o.codec;
    sp->level = level;
    sp->segment_size = o.segment_size;
    if ((o.segment_size & (o.segment_size - 1)) == 0)
        sp->segment_shift = (uint32_t)__builtin_ctzll(o.segment_size);
    sp->auto_prefer = o.auto_prefer;
    sp->auto_slack_pct = o.auto_slack_pct;
    sp->auto_seed = seed;
    snprintf(why, sizeof(why), "out of memory creating a space");
    int rc = bf_space_set_user_codecs(sp, o.user_codecs, o.n_user_codecs);
    if (rc == BF_OK && (o.encrypt || o.key != NULL) &&
        (rc = bf_seal_new(a, o.key, &sp->seal, why, sizeof(why))) == BF_OK)
        bf_seal_nonce(sp->seal, sp->anon_id);
    sp->seal_default = o.encrypt != 0;
    if (rc == BF_OK)
        rc = bf_iostack_init(&sp->ios, a, o.io_limit, o.io_hooks);
    if (rc == BF_OK &&
        (sp->segs = bf_segcache_new(a, o.max_open_fds ? o.max_open_fds : auto_fd_limit())) == NULL)
        rc = BF_ENOMEM;
    if (rc == BF_OK)
        rc = bf_space_dir_make(a, o.temp_dir, &sp->dir, why, sizeof(why));
    if (rc == BF_OK) /* after the directory: BF_TEMP_LIMIT_AUTO is read off its file system */
        bf_space_set_temp_limit(sp, o.temp_limit);
    if (rc != BF_OK) {
        bf_segcache_free(a, sp->segs);
        bf_space_free(sp);
        return reject(errbuf, errlen, rc, "%s", why);
    }
    bf_space_set_budget(sp, o.budget); /* cannot fail: the space holds no bytes yet */
    *out = sp;
    return BF_OK;
}

int bf_file_close(bf_file *f)
{
    if (f == NULL)
        return BF_OK;
    if (f->seg.space->cursors != NULL)
        bf_cursors_detach(f);
    return f->named != NULL ? bf_named_close(f) : bf_file_discard(f);
}

int bf_file_abort(bf_file *f)
{
    if (f == NULL)
        return BF_OK;
    if (f->seg.space->cursors != NULL)
        bf_cursors_detach(f);
    return f->named != NULL ? bf_named_abort(f) : bf_file_discard(f);
}

void bf_space_destroy(bf_space *sp)
{
    if (sp == NULL)
        return;
    bf_cursors_free_all(sp);
    while (sp->files != NULL)
        bf_file_close(sp->files);
    bf_space_set_budget(sp, NULL); /* its files gave their bytes back; now the space goes */
    bf_segcache_free(&sp->alloc, sp->segs);
    bf_space_free(sp);
}

int bf_space_set_workers(bf_space *sp, unsigned n,
                         void (*run)(void *run_ctx, void (*task)(void *arg), void *arg),
                         void *run_ctx)
{
    if (sp->files != NULL)
        return bf_fail(sp, BF_EINVAL, "workers", NULL, 0,
                       "workers are set while the space has no open file");
    if (n > BF_WORKERS_MAX)
        return bf_fail(sp, BF_EINVAL, "workers", NULL, 0, "%u workers (at most %d)", n,
                       BF_WORKERS_MAX);
    bf_workers *w = NULL;
    if (n > 0 && bf_workers_new(&sp->alloc, n, run, run_ctx, &w) != BF_OK)
        return bf_fail(sp, BF_ENOMEM, "workers", NULL, 0, "%u workers' slots", n);
    bf_workers_free(&sp->alloc, sp->workers);
    sp->workers = w;
    return BF_OK;
}

void bf_space_stats_sized(const bf_space *sp, bf_stats *out, size_t size)
{
    /* Figures of committed blocks: the files' blocks on workers are first (the space is the
       caller's, not const to the library; a failure stays for its file's next call). */
    if (sp->workers != NULL)
        for (bf_file *f = sp->files; f != NULL; f = f->next)
            (void)bf_file_settle(f);
    bf_stats st;
    bf_space_stats_own(sp, &st);
    st.memory_bytes += bf_segcache_memory(sp->segs);
    for (const bf_file *f = sp->files; f != NULL; f = f->next)
        st.memory_bytes += bf_file_memory(f);
    st.memory_bytes += bf_cursors_memory(sp);
    bf_abi_write(out, size, &st, sizeof(st));
}

/*
 * space.c - the space: private directory, defaults, codec contexts,
 * scratch buffer, descriptor cache limit, statistics and last error.
 *
 * Invariants: the directory exists from create to destroy and holds only
 * segment files of this space's open files; codec contexts and the
 * scratch buffer are shared by all files and never owned by one.
 */
#include "space.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "abi.h"
#include "alloc.h"
#include "codec.h"
#include "extent.h"
#include "seal.h"
#include "sweep.h"

void bf_space_options_init_sized(bf_space_options *o, size_t size)
{
    bf_space_options d = {.struct_size = (uint32_t)size,
                          .block_size = BF_BLOCK_SIZE_DEFAULT,
                          .codec = BF_CODEC_LZ4,
                          .level = BF_LEVEL_DEFAULT,
                          .segment_size = BF_SEGMENT_SIZE_DEFAULT,
                          .auto_slack_pct = 20};
    bf_abi_write(o, size, &d, sizeof(d));
}

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

/* Copy the caller's codecs and their names into the space, with a table for each. */
static int user_codecs_copy(bf_space *sp, const bf_user_codec *u, uint32_t n)
{
    if (n == 0)
        return BF_OK;
    sp->user = bf_calloc(&sp->alloc, n, sizeof(*sp->user));
    sp->user_name = bf_calloc(&sp->alloc, n, sizeof(*sp->user_name));
    sp->user_ops = bf_calloc(&sp->alloc, n, sizeof(*sp->user_ops));
    if (sp->user == NULL || sp->user_name == NULL || sp->user_ops == NULL)
        return BF_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        sp->user[i] = u[i];
        snprintf(sp->user_name[i], sizeof(sp->user_name[i]), "%s", u[i].name);
        sp->user[i].name = sp->user_name[i];
        bf_user_codec_ops(&sp->user[i], sp->user_name[i], &sp->user_ops[i]);
    }
    sp->nuser = n;
    return BF_OK;
}

/* Free what a space holds (any part of it may be missing: a creation that failed half way). */
static void space_free(bf_space *sp)
{
    bf_allocator a = sp->alloc;
    for (int c = 0; c < 4; c++)
        if (sp->codec_ctx[c] != NULL)
            bf_codec_ops_get((bf_codec)c)->ctx_destroy(&a, sp->codec_ctx[c]);
    bf_free(&a, sp->scratch);
    bf_free(&a, sp->unsealed);
    if (sp->autoc != NULL) {
        bf_free(&a, sp->autoc->probe_out);
        bf_free(&a, sp->autoc->probe_back);
        bf_free(&a, sp->autoc);
    }
    bf_seal_free(&a, sp->seal);
    bf_free(&a, sp->user);
    bf_free(&a, sp->user_name);
    bf_free(&a, sp->user_ops);
    bf_iostack_free(&sp->ios, &a);
    bf_free(&a, sp->dir);
    bf_free(&a, sp);
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
        return reject(errbuf, errlen, BF_EINVAL,
                      "bad auto_device: no space measures those figures (device_ns and pace_ns "
                      "are 0..2^64 ns/B, transfer_ns 0..%.0f, limited_share 0..1)",
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
    sp->temp_limit = o.temp_limit;
    sp->segment_size = o.segment_size;
    sp->segs.fds_max = o.max_open_fds ? o.max_open_fds : auto_fd_limit();
    sp->auto_prefer = o.auto_prefer;
    sp->auto_slack_pct = o.auto_slack_pct;
    sp->auto_seed = seed;
    snprintf(why, sizeof(why), "out of memory creating a space");
    int rc = user_codecs_copy(sp, o.user_codecs, o.n_user_codecs);
    if (rc == BF_OK && (o.encrypt || o.key != NULL) &&
        (rc = bf_seal_new(a, o.key, &sp->seal, why, sizeof(why))) == BF_OK)
        bf_seal_nonce(sp->seal, sp->anon_id);
    sp->seal_default = o.encrypt != 0;
    if (rc == BF_OK)
        rc = bf_iostack_init(&sp->ios, a, o.io_limit, o.io_hooks);
    if (rc == BF_OK)
        rc = bf_space_dir_make(a, o.temp_dir, &sp->dir, why, sizeof(why));
    if (rc != BF_OK) {
        space_free(sp);
        return reject(errbuf, errlen, rc, "%s", why);
    }
    *out = sp;
    return BF_OK;
}

void bf_space_free(bf_space *sp)
{
    /* Files whose removal failed at close (a failed unlink) go with the directory. */
    bf_remove_space_dir(AT_FDCWD, sp->dir);
    space_free(sp);
}

const char *bf_space_errmsg(const bf_space *sp)
{
    return sp->err.msg;
}

int bf_space_errno(const bf_space *sp)
{
    return sp->err.errnum;
}

const char *bf_space_auto_reason(const bf_space *sp)
{
    return sp->autoc != NULL ? sp->autoc->reason : "";
}

void bf_space_set_io_clock(bf_space *sp, uint64_t (*clock)(void *ctx), void *ctx)
{
    sp->ios.clock = clock;
    sp->ios.clock_ctx = ctx;
}

int bf_space_auto(bf_space *sp, bf_auto **out)
{
    if (sp->autoc == NULL) {
        sp->autoc = bf_malloc(&sp->alloc, sizeof(*sp->autoc));
        if (sp->autoc == NULL)
            return bf_fail(sp, BF_ENOMEM, "create", NULL, 0, "codec auto's state");
        bf_auto_init(sp->autoc, sp->auto_prefer == BF_AUTO_SPACE, sp->auto_slack_pct);
        for (uint32_t i = 0; i < sp->nuser; i++)
            if (sp->user[i].auto_candidate)
                bf_auto_add_user(sp->autoc, (bf_codec)sp->user[i].id, sp->user[i].default_level,
                                 sp->user_name[i]);
        /* The counts come along with the figures: a figure learned from many samples
           moves as slowly in this space as it would have in the one that learned it. */
        sp->autoc->dev = sp->auto_seed;
    }
    *out = sp->autoc;
    return BF_OK;
}

void bf_space_auto_device_sized(const bf_space *sp, bf_auto_device *out, size_t size)
{
    bf_auto_device d = sp->autoc != NULL ? sp->autoc->dev : sp->auto_seed;
    d.struct_size = (uint32_t)size;
    bf_abi_write(out, size, &d, sizeof(d));
}

const char *bf_space_dir(const bf_space *sp)
{
    return sp->dir;
}

void bf_space_set_temp_limit(bf_space *sp, uint64_t limit)
{
    sp->temp_limit = limit;
}

void bf_space_set_io(bf_space *sp, const bf_io *io)
{
    sp->ios.io = *io;
}

void bf_stats_fill(bf_stats *out, const bf_counters *c, uint64_t logical, uint64_t physical,
                   uint64_t dead)
{
    memset(out, 0, sizeof(*out));
    out->logical_bytes = logical;
    out->logical_peak = c->logical_peak;
    out->physical_bytes = physical;
    out->physical_peak = c->physical_peak;
    out->dead_bytes = dead;
    out->logical_written = c->logical_written;
    out->logical_read = c->logical_read;
    out->physical_written = c->physical_written;
    out->physical_read = c->physical_read;
    out->blocks_compressed = c->blocks_compressed;
    out->blocks_raw = c->blocks_raw;
    out->blocks_read = c->blocks_read;
    out->compress_ns = c->compress_ns;
    out->decompress_ns = c->decompress_ns;
}

void bf_space_stats_own(const bf_space *sp, bf_stats *st)
{
    bf_stats_fill(st, &sp->c, sp->logical_now, sp->physical_now,
                  sp->physical_now - sp->index_now - sp->live_now);
    st->files_created = sp->files_created;
    st->files_open = sp->files_open;
    memcpy(st->blocks_by_codec, sp->blocks_by_codec, sizeof(st->blocks_by_codec));
    st->blocks_user_codec = sp->blocks_user;
    st->blocks_sealed = sp->blocks_sealed;
    if (sp->autoc != NULL) {
        st->auto_probe_ns = sp->autoc->probe_ns;
        st->auto_switches = sp->autoc->switches;
    }
    st->memory_bytes =
        sizeof(*sp) + sp->scratch_size + sp->unsealed_size;
    if (sp->autoc != NULL)
        st->memory_bytes += sizeof(*sp->autoc) + 2 * sp->autoc->probe_cap;
}

int bf_space_grow(bf_space *sp, unsigned char **buf, size_t *size, size_t need, const char *op,
                  const char *what)
{
    if (*size >= need)
        return BF_OK;
    unsigned char *p = bf_realloc(&sp->alloc, *buf, need);
    if (p == NULL)
        return bf_fail(sp, BF_ENOMEM, op, NULL, 0, "%s of %zu bytes", what, need);
    *buf = p;
    *size = need;
    return BF_OK;
}

int bf_space_reserve_scratch(bf_space *sp, size_t size)
{
    return bf_space_grow(sp, &sp->scratch, &sp->scratch_size, size, "create", "scratch buffer");
}

const bf_codec_ops *bf_space_codec_ops(const bf_space *sp, bf_codec codec)
{
    if (!bf_codec_is_user(codec))
        return bf_codec_ops_get(codec);
    for (uint32_t i = 0; i < sp->nuser; i++)
        if (sp->user[i].id == (int)codec)
            return &sp->user_ops[i];
    return NULL;
}

const char *bf_space_codec_name(const bf_space *sp, bf_codec codec)
{
    if (!bf_codec_is_user(codec))
        return bf_codec_name(codec);
    const bf_codec_ops *ops = bf_space_codec_ops(sp, codec);
    return ops != NULL ? ops->name : NULL;
}

int bf_space_codec_parse(const bf_space *sp, const char *name, bf_codec *out)
{
    for (uint32_t i = 0; name != NULL && i < sp->nuser; i++) {
        if (strcmp(name, sp->user[i].name) == 0) {
            *out = (bf_codec)sp->user[i].id;
            return BF_OK;
        }
    }
    return bf_codec_parse(name, out);
}

size_t bf_space_extent_room(const bf_space *sp, uint32_t block_size)
{
    size_t room = block_size;
    for (uint32_t i = 0; i < sp->nuser; i++) {
        size_t need = sp->user_ops[i].bound(&sp->user[i], block_size);
        room = need > room ? need : room;
    }
    return BF_EXTENT_HDR + room + (sp->seal != NULL ? BF_SEAL_BYTES : 0);
}

int bf_space_codec_ctx(bf_space *sp, bf_codec codec, void **ctx)
{
    if (bf_codec_is_user(codec)) { /* the context is the space's copy of the caller's codec */
        for (uint32_t i = 0; i < sp->nuser; i++) {
            if (sp->user[i].id == (int)codec) {
                *ctx = &sp->user[i];
                return BF_OK;
            }
        }
        return bf_fail(sp, BF_ENOCODEC, "codec", NULL, 0,
                       "caller codec %d was not given to this space", (int)codec);
    }
    if (sp->codec_ctx[codec] == NULL) {
        const bf_codec_ops *ops = bf_codec_ops_get(codec);
        int rc = ops->ctx_create(&sp->alloc, &sp->codec_ctx[codec]);
        if (rc != BF_OK)
            return bf_fail(sp, rc, "codec", NULL, 0, "creating the %s context", ops->name);
    }
    *ctx = sp->codec_ctx[codec];
    return BF_OK;
}

/*
 * space.c - the space's own state and what the layers above ask of it:
 * its defaults, its codecs (the caller's copied, contexts made on first
 * use), the scratch and other shared buffers, codec=auto's state, the
 * statistics it sums, its last error and its freeing. The space is
 * assembled by api.c (bf_space_create); its parts are owned by their
 * modules: the I/O stack (io_stack.c), the segment cache (segment.c), the
 * error state (error.c), the directory's rules (sweep.c).
 * Implements: bf_space_options_init_sized, bf_space_errmsg, bf_space_errno,
 * bf_space_auto_reason, bf_space_auto_device_sized, bf_space_dir,
 * bf_space_set_temp_limit, bf_space_temp_limit, bf_space_codec_name, bf_space_codec_parse
 * (buffile.h); space.h.
 *
 * Invariants: the directory exists from create to destroy and holds only
 * segment files of this space's open files; codec contexts and the
 * scratch buffer are shared by all files and never owned by one.
 */
#include "space.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

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
                          .temp_limit = BF_TEMP_LIMIT_AUTO,
                          .auto_slack_pct = 20};
    bf_abi_write(o, size, &d, sizeof(d));
}

int bf_space_set_user_codecs(bf_space *sp, const bf_user_codec *u, uint32_t n)
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

static void space_free(bf_space *sp)
{
    bf_allocator a = sp->alloc;
    bf_workers_free(&a, sp->workers); /* first: its threads are joined before anything goes */
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
    bf_devclock_close(&sp->devclk);
    bf_seal_free(&a, sp->seal);
    bf_free(&a, sp->user);
    bf_free(&a, sp->user_name);
    bf_free(&a, sp->user_ops);
    bf_iostack_free(&sp->ios, &a);
    bf_free(&a, sp->dir);
    bf_free(&a, sp);
}

void bf_space_free(bf_space *sp)
{
    /* Files whose removal failed at close (a failed unlink) go with the directory. */
    if (sp->dir != NULL)
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
    /* A fake device's time is not this thread's: its run delay would be noise. */
    bf_devclock_set_source(&sp->devclk, NULL, clock != NULL);
}

void bf_space_set_schedstat(bf_space *sp, const char *path)
{
    bf_devclock_set_source(&sp->devclk, path, 0);
}

int bf_space_auto(bf_space *sp, bf_auto **out)
{
    if (sp->autoc == NULL) {
        sp->autoc = bf_malloc(&sp->alloc, sizeof(*sp->autoc));
        if (sp->autoc == NULL)
            return bf_fail(sp, BF_ENOMEM, "create", NULL, 0, "codec auto's state");
        bf_auto_init(sp->autoc, sp->auto_prefer == BF_AUTO_SPACE, sp->auto_slack_pct);
        /* auto's device clock keeps a descriptor: the caller's budget is asked for it. */
        bf_devclock_set_hooks(&sp->devclk, &sp->ios.hooks);
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
    sp->temp_limit = limit == BF_TEMP_LIMIT_AUTO ? bf_dir_default_limit(sp->dir) : limit;
}

uint64_t bf_space_temp_limit(const bf_space *sp)
{
    return sp->temp_limit;
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
    /* The logical peak lags its figure while writes append (file.c: logical_append). */
    out->logical_peak = c->logical_peak > logical ? c->logical_peak : logical;
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
    st->readahead_hits = sp->ra_hits;
    st->readahead_misses = sp->ra_misses;
    if (sp->autoc != NULL) {
        st->auto_probe_ns = sp->autoc->probe_ns;
        st->auto_switches = sp->autoc->switches;
    }
    st->memory_bytes =
        sizeof(*sp) + sp->scratch_size + sp->unsealed_size;
    if (sp->workers != NULL)
        st->memory_bytes += bf_workers_memory(sp->workers);
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

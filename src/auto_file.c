/*
 * auto_file.c - codec=auto where files meet it: a file's start on the
 * space's current choice, the probes and the choice before a block is
 * packed, what packing and loading a block tell the space's estimates,
 * and the timing of the transfers they weigh (auto.c holds the estimates
 * and the decisions; this file feeds them).
 * Implements: auto_file.h.
 *
 * Invariants: only files with fauto.on reach the pack-side calls; the
 * load- and transfer-side calls do nothing until the space has auto's
 * state (its first auto file made it).
 */
#include "auto_file.h"

#include "alloc.h"
#include "clock.h"
#include "devclock.h"
#include "extent.h"

int bf_auto_file_start(bf_space *sp, bf_file_auto *fa, bf_codec *codec, int32_t *level)
{
    bf_auto *a;
    int rc = bf_space_auto(sp, &a);
    if (rc != BF_OK)
        return rc;
    int k = bf_auto_start(a);
    *fa = (bf_file_auto){.on = 1, .cand = (uint8_t)k, .first = 1, .epoch = a->epoch};
    *codec = a->cand[k].codec;
    *level = a->cand[k].level;
    return BF_OK;
}

/* Make the space's probe buffers hold `raw_len` bytes; 0 when they cannot (then no probe). */
static int probe_room(bf_space *sp, bf_auto *a, uint32_t raw_len)
{
    size_t need = bf_space_extent_room(sp, raw_len); /* a caller's codec may want more */
    if (a->probe_cap < need) {
        unsigned char *out = bf_realloc(&sp->alloc, a->probe_out, need);
        unsigned char *back = out ? bf_realloc(&sp->alloc, a->probe_back, need) : NULL;
        if (out != NULL)
            a->probe_out = out;
        if (back == NULL)
            return 0; /* no probe this time: the estimates just age */
        a->probe_back = back;
        a->probe_cap = need;
    }
    return 1;
}

/*
 * Compress the block about to be written with the candidates other than
 * the file's own (whose figures come from the real pack, once it has any), and decompress
 * the first result of each codec, feeding the space's estimates. Returns 1 when some codec
 * made the block shrink by a tenth or more. Probe time is counted apart.
 *
 * Each candidate runs twice and only the second run is timed: a probe
 * finds the codec's context and tables cold (they were last used a few
 * hundred blocks ago), which made zstd look two to three times slower
 * than it runs when a file uses it, and kept auto from choosing it. Not
 * so in the warm-up, whose probes are the first TIME_WARM samples, of
 * which a time estimate takes the minimum (auto.c): the first finds the
 * tables cold, the next ones (consecutive blocks) warm. Nor when the
 * space probed the block before (a file's check or its flat data's probe
 * next to a scheduled one). The warm-up's second runs were half of what
 * auto cost over none in the page cache (docs/results/format4.md, "What
 * auto costs over none").
 */
/*
 * The bytes a block of `raw_len` takes on disk when its codec gives `n`
 * bytes (0: stored raw): bare when the space does not seal, else an extent.
 */
static uint32_t stored_bytes(const bf_space *sp, uint32_t n, uint32_t raw_len)
{
    if (n == 0 && !sp->seal_default)
        return raw_len;
    return (n > 0 ? n : raw_len) + BF_EXTENT_HDR + (sp->seal_default ? BF_SEAL_BYTES : 0);
}

static int auto_probe(bf_space *sp, const bf_file_auto *fa, bf_auto *a, const void *data,
                      uint32_t raw_len)
{
    if (!probe_room(sp, a, raw_len))
        return 0;
    uint64_t start = bf_now_ns();
    int shrinks = 0;
    int runs =
        a->blocks <= BF_AUTO_WARMUP || (a->probed != 0 && a->blocks - a->probed <= 1) ? 1 : 2;
    a->probed = a->blocks;
    bf_codec unpacked[BF_AUTO_MAX]; /* codecs whose decompression this probe timed */
    int nunpacked = 0;
    for (int k = 0; k < a->ncand; k++) {
        const bf_auto_cand *c = &a->cand[k];
        if (k == fa->cand && c->samples > 0)
            continue; /* measured by its own packs; a new space's first probe takes it too */
        if (c->codec == BF_CODEC_NONE) {
            bf_auto_note_pack(a, k, raw_len, stored_bytes(sp, 0, raw_len), 0);
            continue;
        }
        const bf_codec_ops *ops = bf_space_codec_ops(sp, c->codec);
        void *ctx;
        if (bf_space_codec_ctx(sp, c->codec, &ctx) != BF_OK || raw_len < 2)
            continue;
        size_t cap = ops->bound != NULL ? ops->bound(ctx, raw_len) : raw_len - 1;
        int64_t n = 0;
        uint64_t t0 = 0, t1 = 0;
        for (int run = 0; run < runs && n >= 0; run++) {
            t0 = bf_now_ns();
            n = ops->compress(ctx, c->level, data, raw_len, a->probe_out, cap);
            t1 = bf_now_ns();
        }
        if (n < 0)
            continue;
        bf_auto_note_pack(a, k, raw_len, stored_bytes(sp, (uint32_t)n, raw_len), t1 - t0);
        if (n == 0)
            continue;
        shrinks |= (uint64_t)n * 10 <= (uint64_t)raw_len * 9;
        /* A codec's decompression time is one estimate for all its levels
           (bf_auto_note_unpack): zstd:3's output decompressed after zstd:1's fed it a
           second sample, ~14% of what a warm-up probe cost (both were ~27%). */
        int seen = 0;
        for (int j = 0; j < nunpacked; j++)
            seen |= unpacked[j] == c->codec;
        if (seen)
            continue;
        unpacked[nunpacked++] = c->codec;
        int d = 0;
        for (int run = 0; run < runs && d == 0; run++) {
            t0 = bf_now_ns();
            d = ops->decompress(ctx, a->probe_out, (size_t)n, a->probe_back, raw_len);
            t1 = bf_now_ns();
        }
        if (d == 0)
            bf_auto_note_unpack(a, c->codec, raw_len, t1 - t0);
    }
    a->probe_ns += bf_now_ns() - start;
    bf_auto_note_probe(a, shrinks);
    return shrinks;
}

/*
 * Whether the block shrinks by a tenth or more with the first compressing
 * candidate: one pass, a look at the file's own data for bf_auto_recheck's
 * sake. Its time counts as probing; it feeds no estimate (a single pass
 * finds the codec cold, and misleads them: see auto_probe).
 */
static int auto_check(bf_space *sp, bf_auto *a, const void *data, uint32_t raw_len)
{
    if (raw_len < 2 || !probe_room(sp, a, raw_len))
        return 0;
    for (int k = 0; k < a->ncand; k++) {
        const bf_auto_cand *c = &a->cand[k];
        void *ctx;
        if (c->codec == BF_CODEC_NONE || bf_space_codec_ctx(sp, c->codec, &ctx) != BF_OK)
            continue;
        const bf_codec_ops *ops = bf_space_codec_ops(sp, c->codec);
        uint64_t t0 = bf_now_ns();
        int64_t n = ops->compress(ctx, c->level, data, raw_len, a->probe_out,
                                  ops->bound != NULL ? ops->bound(ctx, raw_len) : raw_len - 1);
        a->probe_ns += bf_now_ns() - t0;
        return n > 0 && (uint64_t)n * 10 <= (uint64_t)raw_len * 9;
    }
    return 0;
}

/*
 * A file on none because nothing the space measured shrinks (the space's
 * ratios may be of other data: one random block first made them say so for
 * the thousand compressible blocks that followed) checks its own data at
 * its decision points: at each at first, then backing off to every
 * BF_AUTO_RECHECK-th while it does not shrink. When it does, the ratios
 * start again from a probe of this block, and the decision follows.
 */
static void auto_recheck(bf_space *sp, bf_file_auto *fa, bf_auto *a, const void *data,
                         uint32_t raw_len)
{
    if ((fa->check & 15) != 0) {
        fa->check--;
        return;
    }
    unsigned misses = fa->check >> 4;
    if (auto_check(sp, a, data, raw_len)) {
        bf_auto_note_change(a);
        auto_probe(sp, fa, a, data, raw_len);
        fa->check = 0;
        return;
    }
    if ((2u << misses) <= BF_AUTO_RECHECK)
        misses++;
    fa->check = (uint8_t)(misses << 4 | ((1u << misses) - 1)); /* next in 2^misses decisions */
}

void bf_auto_file_prepare(bf_space *sp, bf_file_auto *fa, uint8_t *codec, int32_t *level,
                          const void *data, uint32_t raw_len)
{
    bf_auto *a = sp->autoc;
    /* While the space warms up every block is probed, and decided on: the first samples
       are the least reliable (cold caches), the next ones correct them at once. A new
       file is decided on at once but not probed: the space's figures are its own, and
       probing the first block of every file costs most where files are many and small
       (a hash join's batches). */
    int warming = bf_auto_warming(a);
    int first = fa->first,
        due = first || warming || fa->since >= BF_AUTO_EVERY || fa->epoch != a->epoch;
    int scheduled = bf_auto_probe_due(a);
    a->blocks++;
    if (scheduled || (due && fa->flat)) {
        int shrinks = auto_probe(sp, fa, a, data, raw_len);
        if (fa->flat && shrinks)
            fa->flat = 0; /* its data compresses again */
    }
    if (!due)
        return;
    /* Blocks that come out raw under a compressing codec: the file's data does not shrink. */
    if (!first && !fa->flat && fa->since >= BF_AUTO_EVERY &&
        a->cand[fa->cand].codec != BF_CODEC_NONE &&
        (uint32_t)fa->raw * 8 >= (uint32_t)fa->since * 7)
        fa->flat = 1;
    if (!fa->flat && a->cand[fa->cand].codec == BF_CODEC_NONE && !bf_auto_shrinks(a))
        auto_recheck(sp, fa, a, data, raw_len);
    int k = bf_auto_choose(a, fa->cand, fa->flat, NULL, 0);
    /* The reason is worth its formatting only when a file's codec changes, or at a file's
       first decision if it differs from the reason's: formatting it at every new file's
       (a snprintf of every candidate's figures) was a fifth of what auto cost over none
       with 256 batch files in the page cache, which all start on the prior's lz4 (made
       before any block) and all go to none at their first block. */
    if (first ? k != a->reason_k || fa->flat != a->reason_flat : k != fa->cand) {
        bf_auto_explain(a, k, fa->flat, a->reason, sizeof(a->reason));
        a->reason_k = k;
        a->reason_flat = fa->flat;
    }
    if (k != fa->cand) {
        a->switches += !first;
        fa->check = 0;
        fa->cand = (uint8_t)k;
        *codec = (uint8_t)a->cand[k].codec;
        *level = a->cand[k].level;
    }
    fa->first = 0;
    fa->since = fa->raw = 0;
    fa->epoch = a->epoch;
}

void bf_auto_file_packed(bf_space *sp, bf_file_auto *fa, bf_codec codec, const bf_extent_info *info)
{
    bf_auto_note_pack(sp->autoc, fa->cand, info->raw_len, info->disk_len, info->codec_ns);
    bf_auto_note_block(sp->autoc, 1, info->raw_len, info->codec_ns);
    fa->since++;
    fa->raw += info->raw && codec != BF_CODEC_NONE;
}

void bf_auto_file_unpacked(bf_space *sp, bf_codec codec, uint32_t raw_len, uint64_t ns)
{
    if (sp->autoc != NULL)
        bf_auto_note_unpack(sp->autoc, codec, raw_len, ns);
}

void bf_auto_file_loaded(bf_space *sp, uint32_t raw_len, uint64_t ns)
{
    if (sp->autoc != NULL)
        bf_auto_note_block(sp->autoc, 0, raw_len, ns);
}

/*
 * A timed transfer: the device clock (devclock.h) reads the thread's run
 * delay, when it does, outside the wall clock's span, so that its reading
 * is not counted as the transfer's time.
 */
int bf_auto_io_start(bf_space *sp, uint64_t bytes, uint64_t *t0)
{
    int timed = bf_auto_times_io(sp->autoc, bytes);
    if (timed)
        bf_devclock_begin(&sp->devclk);
    *t0 = timed ? bf_space_io_now(sp) : 0;
    return timed;
}

void bf_auto_io_finish(bf_space *sp, int read, uint64_t bytes, int timed, uint64_t t0)
{
    if (timed) {
        uint64_t t1 = bf_space_io_now(sp);
        bf_devwait w = bf_devclock_end(&sp->devclk, bytes, t1 > t0 ? t1 - t0 : 0);
        bf_auto_wait aw = {w.wait_ns, w.late_ns, w.cpu_ns, w.paused, w.unsure};
        bf_auto_note_transfer(sp->autoc, read, bytes, t0, t1, &aw);
    } else
        bf_auto_note_untimed(sp->autoc, read, bytes);
}

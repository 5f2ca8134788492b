/*
 * auto.c - estimates and decisions of codec=auto (the model is in auto.h).
 *
 * Invariants: cand[0] is none; a candidate's estimates are unknown until
 * its first sample (samples == 0), and a choice only ever falls on known
 * candidates or, before any is known, on the prior (lz4, else none).
 */
#include "auto.h"

#include <stdio.h>
#include <string.h>

#include "codec.h"

/*
 * Before the first window of I/O is measured: a 200 MB/s disk. The guess
 * only decides a space's first blocks, and it is a good bet either way:
 * compressible data gets lz4, never far from the best on any device, and
 * incompressible data gets none (every codec's ratio equals none's, so its
 * time can only add).
 */
#define IO_PRIOR_NS 5.0
/* Decompression before it is measured: a quarter of compression (lz4 and zstd are faster). */
#define DECOMP_PRIOR 0.25
/* Weight of a new sample in the running estimates. */
#define EWMA 0.125
/* Weight of a new I/O window: windows are few and long, so they count more. */
#define EWMA_IO 0.25
/* Samples a time estimate takes the minimum of before it averages. */
#define TIME_WARM 4
/* A time sample counts as at most this many times the estimate. */
#define TIME_CAP 3.0

static void add_cand(bf_auto *a, bf_codec codec, int32_t level)
{
    if (!bf_codec_available(codec))
        return;
    bf_auto_cand *c = &a->cand[a->ncand++];
    memset(c, 0, sizeof(*c));
    c->codec = codec;
    c->level = level;
}

void bf_auto_init(bf_auto *a, int prefer_space, uint32_t slack_pct)
{
    memset(a, 0, sizeof(*a));
    a->force = -1;
    a->prefer_space = prefer_space;
    a->slack = slack_pct / 100.0;
    add_cand(a, BF_CODEC_NONE, 0);
    add_cand(a, BF_CODEC_LZ4, 1);
    add_cand(a, BF_CODEC_ZSTD, 1);
    add_cand(a, BF_CODEC_ZSTD, 3);
}

static void ewma(double *v, double x, double w, int first)
{
    *v = first ? x : *v + (x - *v) * w;
}

/*
 * Times err one way: a preempted call, a cold cache or a page fault makes a
 * sample longer, never shorter. So the first samples give their minimum,
 * and later ones count as at most TIME_CAP times the estimate: a real
 * change still gets through, a few windows later, a hiccup does not.
 */
static void time_sample(double *v, double x, double w, uint32_t n)
{
    if (n < TIME_WARM)
        *v = n == 0 || x < *v ? x : *v;
    else
        ewma(v, x < *v * TIME_CAP ? x : *v * TIME_CAP, w, 0);
}

void bf_auto_note_io(bf_auto *a, uint64_t bytes, uint64_t ns)
{
    a->win_bytes += bytes;
    a->win_ns += ns;
    /* The first window is short, so that the guess decides few blocks. */
    if (a->win_bytes < (a->io_windows == 0 ? BF_AUTO_IO_FIRST : BF_AUTO_IO_WINDOW))
        return;
    time_sample(&a->io_ns, (double)a->win_ns / (double)a->win_bytes, EWMA_IO, a->io_windows++);
    a->win_bytes = a->win_ns = 0;
}

void bf_auto_note_pack(bf_auto *a, int k, uint32_t raw_len, uint32_t stored, uint64_t ns)
{
    if (raw_len == 0)
        return;
    bf_auto_cand *c = &a->cand[k];
    time_sample(&c->comp_ns, (double)ns / raw_len, EWMA, c->samples);
    ewma(&c->ratio, (double)stored / raw_len, EWMA, c->samples == 0);
    c->samples++;
}

void bf_auto_note_unpack(bf_auto *a, bf_codec codec, uint32_t raw_len, uint64_t ns)
{
    if (raw_len == 0)
        return;
    for (int k = 0; k < a->ncand; k++) {
        bf_auto_cand *c = &a->cand[k];
        if (c->codec == codec)
            time_sample(&c->decomp_ns, (double)ns / raw_len, EWMA, c->decomp_samples++);
    }
}

double bf_auto_cost(const bf_auto *a, int k)
{
    const bf_auto_cand *c = &a->cand[k];
    if (c->samples == 0)
        return -1;
    double io = a->io_windows > 0 ? a->io_ns : IO_PRIOR_NS;
    double decomp = c->decomp_samples > 0 ? c->decomp_ns : c->comp_ns * DECOMP_PRIOR;
    return c->comp_ns + decomp + c->ratio * io * 2;
}

static int name_of(const bf_auto_cand *c, char *buf, size_t len)
{
    if (c->codec == BF_CODEC_ZSTD)
        return snprintf(buf, len, "zstd:%d", (int)c->level);
    return snprintf(buf, len, "%s", bf_codec_name(c->codec));
}

/* The reason for choosing `k`: its cost and ratio, the others', the device. */
static void explain(const bf_auto *a, int k, int flat, char *why, size_t len)
{
    char name[16];
    name_of(&a->cand[k], name, sizeof(name));
    size_t n = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(why + n, n < len ? len - n : 0, __VA_ARGS__);                            \
        n += w_ > 0 ? (size_t)w_ : 0;                                                              \
    } while (0)
    if (flat) {
        PUT("%s: the file's blocks do not shrink", name);
        return;
    }
    double io = a->io_windows > 0 ? a->io_ns : IO_PRIOR_NS;
    if (bf_auto_cost(a, k) < 0) {
        PUT("%s: nothing measured yet", name);
        return;
    }
    PUT("%s%s %.2f ns/B (ratio %.3f)", name, a->prefer_space ? " (prefer space):" : ":",
        bf_auto_cost(a, k), a->cand[k].ratio);
    for (int j = 0; j < a->ncand; j++) {
        if (j == k)
            continue;
        name_of(&a->cand[j], name, sizeof(name));
        double c = bf_auto_cost(a, j);
        if (c < 0)
            PUT(", %s ?", name);
        else
            PUT(", %s %.2f (%.3f)", name, c, a->cand[j].ratio);
    }
    PUT("; I/O %.2f ns/B%s", io, a->io_windows > 0 ? "" : " (prior)");
#undef PUT
}

int bf_auto_choose(const bf_auto *a, int cur, int flat, char *why, size_t len)
{
    int pick = -1;
    if (a->force >= 0) {
        pick = a->force;
    } else if (flat) {
        pick = 0; /* none */
    } else {
        double fastest = -1;
        for (int k = 0; k < a->ncand; k++) {
            double c = bf_auto_cost(a, k);
            if (c >= 0 && (fastest < 0 || c < fastest))
                fastest = c;
        }
        if (fastest < 0) {
            /* Nothing measured yet: lz4 costs little and usually halves the bytes. */
            pick = a->ncand > 1 && a->cand[1].codec == BF_CODEC_LZ4 ? 1 : 0;
        } else {
            double limit = a->prefer_space ? fastest * (1 + a->slack) : fastest;
            for (int k = 0; k < a->ncand; k++) {
                double c = bf_auto_cost(a, k);
                if (c < 0 || c > limit)
                    continue;
                if (pick < 0 || (a->prefer_space ? a->cand[k].ratio < a->cand[pick].ratio
                                                 : c < bf_auto_cost(a, pick)))
                    pick = k;
            }
            /* Hysteresis: the current candidate stays unless the pick clearly wins; but a
               codec that saves nothing over none (incompressible data) never stays by it. */
            double cc = cur >= 0 ? bf_auto_cost(a, cur) : -1;
            int saves = cur >= 0 && a->cand[cur].ratio < a->cand[0].ratio * 0.99;
            if (cc >= 0 && pick != cur && (cur == 0 || saves)) {
                int stays = a->prefer_space
                                ? cc <= limit && a->cand[cur].ratio <=
                                                     a->cand[pick].ratio * (1 + BF_AUTO_MARGIN)
                                : bf_auto_cost(a, pick) >= cc * (1 - BF_AUTO_MARGIN);
                if (stays)
                    pick = cur;
            }
        }
    }
    if (why != NULL && len > 0)
        explain(a, pick, flat, why, len);
    return pick;
}

int bf_auto_start(const bf_auto *a)
{
    return bf_auto_choose(a, -1, 0, NULL, 0);
}

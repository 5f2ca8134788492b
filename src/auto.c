/*
 * auto.c - estimates and decisions of codec=auto (the model is in auto.h).
 * Implements: auto.h: the estimates (bf_auto_note_*), the transfer windows
 * (bf_auto_times_io), the choice (bf_auto_start, bf_auto_choose,
 * bf_auto_explain, bf_auto_cost) and the seed check (bf_auto_device_valid).
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
 * Before the first window is measured, once a transfer has waited: a
 * 200 MB/s disk, with no overlap. The guess only decides a space's first
 * blocks, and it is a good bet either way: compressible data gets lz4,
 * never far from the best on any device, and incompressible data gets none
 * (every codec's ratio equals none's, so its time can only add).
 * Until a transfer waits the device is taken for the page cache, where
 * every write lands first, and the blocks go raw (bf_auto_cost): the prior's
 * ~56 lz4 blocks a space (the first 256 KiB of transfers) were most of what
 * auto cost over none there, ~1.2 ms of lz4 a space in bench_spill
 * (docs/results/format4.md, "What auto costs over none, once raw"). A
 * device that limits from the start (a throttle, a FUSE device) makes the
 * first transfers wait, and the prior holds from the first that does.
 * XXX: a slow disk behind the write-back cache makes nothing wait in its
 * first 256 KiB either; those blocks now go raw, to be written back later.
 */
#define IO_PRIOR_NS 5.0
/* Decompression before it is measured: a quarter of compression (lz4 and zstd are faster). */
#define DECOMP_PRIOR 0.25
/* Weight of a new sample in the running estimates. */
#define EWMA 0.125
/* Weight of a new window: windows are few and long, so they count more. */
#define EWMA_IO 0.25
/* Samples a time estimate takes the minimum of before it averages. */
#define TIME_WARM 4
/* The warm-up's probes give each candidate those samples, and no more (auto.h). */
_Static_assert(BF_AUTO_WARMUP == TIME_WARM, "the warm-up is TIME_WARM probes");
/* probe_every goes from BF_AUTO_PROBE_EVERY to BF_AUTO_PROBE_MAX by doubling: powers of two. */
_Static_assert((BF_AUTO_PROBE_EVERY & (BF_AUTO_PROBE_EVERY - 1)) == 0 &&
                   (BF_AUTO_PROBE_MAX & (BF_AUTO_PROBE_MAX - 1)) == 0 &&
                   (BF_AUTO_PROBE_IDLE & (BF_AUTO_PROBE_IDLE - 1)) == 0,
               "the probe schedule is a mask");
/* A time sample counts as at most this many times the estimate. */
#define TIME_CAP 3.0
/* Windows fit_moved's means span once they have that many (fewer: all of them, alike). */
#define MOVED_HORIZON 64
/* Least variance of the windows' bytes moved per logical byte that tells a slope: about a
   tenth of the windows raw among windows of half the bytes, or more. */
#define MOVED_SPREAD 0.02

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
    a->rng = 0x9e3779b9u; /* any but 0: the same draws in every space, tests reproducible */
    a->probe_every = BF_AUTO_PROBE_EVERY;
    a->best = -1;
    a->reason_k = -1;
    a->prefer_space = prefer_space;
    a->slack = slack_pct / 100.0;
    add_cand(a, BF_CODEC_NONE, 0);
    add_cand(a, BF_CODEC_LZ4, 1);
    add_cand(a, BF_CODEC_ZSTD, 1);
    add_cand(a, BF_CODEC_ZSTD, 3);
}

void bf_auto_add_user(bf_auto *a, bf_codec codec, int32_t level, const char *name)
{
    bf_auto_cand *c = &a->cand[a->ncand++];
    memset(c, 0, sizeof(*c));
    c->codec = codec;
    c->level = level;
    c->name = name;
}

static void ewma(double *v, double x, double w, int first)
{
    *v = first ? x : *v + (x - *v) * w;
}

/*
 * Times err one way: a preempted call, a cold cache or a page fault makes a
 * sample longer, never shorter. So the first samples give their minimum,
 * and later ones count as at most TIME_CAP times the estimate: a real
 * change still gets through, a few windows later, a hiccup does not. An
 * estimate of 0 (a clock too coarse, or figures passed in from another
 * space) caps nothing, or it could never move.
 */
static void time_sample(double *v, double x, double w, uint32_t n)
{
    if (n < TIME_WARM)
        *v = n == 0 || x < *v ? x : *v;
    else
        ewma(v, *v > 0 && x > *v * TIME_CAP ? *v * TIME_CAP : x, w, 0);
}

/*
 * A run of waits errs the same way, and more: between waits under
 * BF_AUTO_GAP apart the caller may still pause long enough, all told, for
 * the device to idle. Traced under io_limit, a quarter of Q21's runs at
 * 50 MB/s read 28-33 ns/B against 19.1, Q3's only run at 100 MB/s 19-20
 * against 9.5, and no run read more than 10% fast. So a run slower than the
 * estimate counts a quarter as much as one faster: a device that really
 * slows down is still followed, but slowly (half way after 11 runs, 90%
 * after 36: 20-70 MiB at 2 MiB a run).
 */
static void device_sample(bf_auto *a, int read, double x)
{
    double *v = read ? &a->dev.read_device_ns : &a->dev.device_ns;
    uint32_t *n = read ? &a->dev.read_runs : &a->dev.device_runs;
    double w = *n >= TIME_WARM && x > *v ? EWMA_IO / 4 : EWMA_IO;
    time_sample(v, x, w, (*n)++);
}

/* Decompression per logical byte (before it is measured: a share of compression). */
static double decomp_of(const bf_auto_cand *c)
{
    return c->decomp_samples > 0 ? c->decomp_ns : c->comp_ns * DECOMP_PRIOR;
}

/*
 * The writes' runs as a time per request plus a time per byte. A run's time
 * over its bytes (y, ns per byte) is a line in its requests per byte (x):
 * y = request_ns * x + the device's time per byte. A device held to a rate
 * has no request part; a FUSE request that waits for its daemon, descheduled
 * on a busy machine, waits about as long whatever its size: through
 * PostgreSQL on slowfs at 200 MB/s (5 ns/B) the writes' runs read 20 ns/B
 * for raw 8 KiB requests and up to 50-93 as compression shrank them, so the
 * more a space compressed, the slower the device looked and the more the
 * next space compressed (docs/results/pg-buffile-wall.md, "The matrix on
 * slowfs, again"). The line is fitted through this space's runs once their
 * sizes spread by a tenth (a file that changes codec, a raw window among
 * compressed ones: explore_next), its request part averaged over fits as it
 * comes (noise below 0 included, or it would be a bias) and carried to the
 * next space (bf_auto_device.request_ns); once it is known, a run samples
 * the device at its time less its requests' part. A run far slower than
 * the others (a stall) counts in the line as at most TIME_CAP times their
 * mean: it would tilt it. Returns the run's time per byte to sample.
 */
static double fit_run(bf_auto *a, double x, double y)
{
    bf_auto_device *d = &a->dev;
    double *m = a->run_fit;
    int first = a->run_fits++ == 0;
    double yc = !first && a->run_fits > TIME_WARM && y > m[1] * TIME_CAP ? m[1] * TIME_CAP : y;
    ewma(&m[0], x, EWMA_IO, first);
    ewma(&m[1], yc, EWMA_IO, first);
    ewma(&m[2], x * x, EWMA_IO, first);
    ewma(&m[3], x * yc, EWMA_IO, first);
    double var = m[2] - m[0] * m[0];
    if (a->run_fits >= TIME_WARM && var > 0.01 * m[0] * m[0]) {
        double r = (m[3] - m[0] * m[1]) / var;
        if (!a->request_fitted)
            a->request_fit = d->request_ns; /* another space's, if it fitted one */
        a->request_fitted = 1;
        ewma(&a->request_fit, r, EWMA_IO, d->request_fits++ == 0);
        d->request_ns = a->request_fit > 0 ? a->request_fit : 0;
    }
    if (d->request_fits == 0)
        return y;
    double b = y - d->request_ns * x;
    return b > 0 ? b : 0;
}

/*
 * The device's time per byte written: timed by runs of waiting writes;
 * before that, the pace of windows that waited, provided that enough
 * windows moving uncompressed bytes waited (a page cache makes a call wait
 * now and then too). But runs time a device only as it is while it makes
 * writes wait: where, of BF_AUTO_SHARE_MIN windows of uncompressed writes
 * or more, under BF_AUTO_LIMITED_SHARE waited, it stalls now and then and
 * otherwise keeps up, and none of it is priced (the share the pace needs:
 * a device that limits makes most raw windows wait). On slowfs at 100 MB/s
 * (tmpfs behind it) clusters of 8 KiB writes held 1-18 ms timed 24-41 ns/B
 * in spills where 1 window in 1,000 to 1 in 8 (a cluster late in the
 * spill: the share is the recent one) waited; priced, every block went to
 * zstd:1, 1.10x lz4's time, and the figure passed to the next space kept
 * it there (docs/results/auto-synchronous.md).
 * Until the share is known the runs are priced (a device that limits from
 * the start is compressed for at once), but once files compress, windows
 * stop telling: a space whose first writes stalled kept compressing, and so
 * did every space started from its figures (bench_auto at 200 MB/s: 8 runs
 * in the first MiB timed 38 ns/B, every block of five spaces went to
 * zstd:1, 1.40x none's time). So while the runs are all that prices the
 * writes, every other window is written raw (explore_next).
 */
static double device_w(const bf_auto *a)
{
    int known = a->dev.share_windows >= BF_AUTO_SHARE_MIN;
    int limits = a->dev.limited_share >= BF_AUTO_LIMITED_SHARE;
    if (a->dev.device_runs > 0 && (!known || limits))
        return a->dev.device_ns;
    return known && limits ? a->dev.pace_ns : 0;
}

/* Whether enough windows of raw reads have shown how much the caller hides (hidden_r). */
static int overlap_known(const bf_auto *a)
{
    return a->dev.read_overlap_windows >= BF_AUTO_SHARE_MIN;
}

/*
 * The device's time per byte read: timed by runs of waiting reads; until
 * then the writes'. A hash join decides every block's codec before it reads
 * any back, so in the space that first spills on a device the writes' figure
 * prices the reads; the next space starts from this one's read figure
 * (bf_auto_device.read_device_ns). On slowfs at 100 MB/s the batches' 8 KiB
 * writes never waited (FUSE's round trip, about 70 MiB/s, is under the
 * rate) while their reads were held to it and timed 9.5 ns/B
 * (docs/results/auto-synchronous.md).
 */
static double device_r(const bf_auto *a)
{
    /* As for writes, runs of rare stalls are not the device: at 200 MB/s slowfs's reads of
       128 KiB wait 0.65 ms, under BF_AUTO_WAIT_NS, and 2 runs in 256 MiB read 6-8 ns/B
       against 4.8; priced, the next space compressed and took 1.19x none's time. */
    uint32_t n = a->dev.read_share_windows;
    int rare = n >= BF_AUTO_SHARE_MIN && a->dev.read_limited_windows < BF_AUTO_LIMITED_SHARE * n;
    /* Rare, the waits are still priced once how much of them the caller hides is known
       (hidden_r): through PostgreSQL at 200 MB/s a quarter of raw read windows waited,
       and left at 0 the reads kept a hash join raw while slowfs held its reads 2.7 s
       (lz4's 0.6) and lz4 took 0.83-0.91 of none's time (docs/results/
       pg-buffile-wall.md, "What the 200 MB/s cells measure"). */
    return a->dev.read_runs > 0 && (!rare || overlap_known(a)) ? a->dev.read_device_ns
                                                               : device_w(a);
}

/*
 * Of the caller's work `other` per byte read, how much hides the reads'
 * device time: the multiple of it raw reads were seen to hide
 * (bf_auto_device.read_overlap), until then all of it. The kernel's
 * read-ahead runs the device behind the caller's work, but not always all
 * of it: through PostgreSQL on slowfs at 200 MB/s raw reads spent 1.6-2.7
 * ns/B in their transfers of the 4.77 the rate takes, behind 1.9-3.8 ns/B
 * of the caller's work (0.7-1.1 of it); in bench_auto on slowfs they spent
 * about their copy, the device running behind more than the caller's work.
 */
static double hidden_r(const bf_auto *a, double other)
{
    return overlap_known(a) ? a->dev.read_overlap * other : other;
}

/* Whether the device limits either direction, as far as auto knows. */
static int device_limits(const bf_auto *a)
{
    return device_w(a) > 0 || device_r(a) > 0;
}

/*
 * The caller's own work each byte the device moves adds, where the device
 * limits (fit_moved); 0 elsewhere. Through PostgreSQL on slowfs at 200
 * MB/s the executor's own code ran slower while the blocks went raw: the
 * caller's work was 4.2-5.2 ns per logical byte in windows of raw writes,
 * 2.4-2.8 in windows of compressed ones, and perf put the difference in
 * ExecInterpExpr and ExecHashJoin, not in the library; taken as the same
 * whatever the codec, lz4 was priced about even with none where it took
 * 0.90 of none's time (docs/results/pg-buffile-wall.md). A process of this
 * machine doing 8 KiB writes between stretches of work ran that work
 * 1.5-2.5 ns/op slower (one write per 10,000 ops) into tmpfs and FUSE
 * alike. In the page cache lz4 never paid on this machine, so there it is
 * not priced: a difference there between raw and compressed windows is
 * taken for the phases' (a hash join's partitioning and probing), not the
 * bytes'.
 */
static double moved_of(const bf_auto *a)
{
    return device_limits(a) && a->dev.moved_fits > 0 ? a->dev.moved_ns : 0;
}

/*
 * A window mostly of writes moved x bytes per logical byte while the caller
 * worked y ns per logical byte: the line through the windows' (x, y), over
 * the last MOVED_HORIZON windows, once BF_AUTO_SHARE_MIN of them spread in
 * x by MOVED_SPREAD (windows raw and compressed), has the caller's work per
 * byte moved for its slope. The slopes are averaged as fitted (noise takes
 * them below 0 at times; clamped one by one, the last fit stood for the
 * space: 0 in six spaces of eight through PostgreSQL at 200 MB/s, where
 * raw windows beside compressed ones gave 3-5 ns per byte moved), starting
 * from the last space's, and stored in bf_auto_device.moved_ns at least 0
 * and at most the caller's work per byte moved on average. Windows of reads
 * move the bytes of blocks written earlier, whatever the codec now, in
 * another phase (a hash join's probing, not its partitioning).
 */
static void fit_moved(bf_auto *a, double x, double y)
{
    double *m = a->moved_fit;
    uint32_t n = a->moved_windows++;
    double w = n < MOVED_HORIZON ? 1.0 / (n + 1) : 1.0 / MOVED_HORIZON;
    m[0] += w * (x - m[0]);
    m[1] += w * (y - m[1]);
    m[2] += w * (x * x - m[2]);
    m[3] += w * (x * y - m[3]);
    double var = m[2] - m[0] * m[0];
    if (a->moved_windows < BF_AUTO_SHARE_MIN || !(var > MOVED_SPREAD) || !(m[0] > 0))
        return;
    double slope = (m[3] - m[0] * m[1]) / var, most = m[1] / m[0];
    if (!a->moved_fitted)
        a->moved_avg = a->dev.moved_ns; /* another space's, if it fitted one */
    a->moved_fitted = 1;
    ewma(&a->moved_avg, slope, 1.0 / BF_AUTO_SHARE_MIN, a->dev.moved_fits++ == 0);
    a->dev.moved_ns = a->moved_avg < 0 ? 0 : a->moved_avg > most ? most : a->moved_avg;
}

/*
 * A transfer's own time per byte in one direction, on average: reads take
 * the writes' until their own is timed. A FUSE device's writes cost their
 * round trip (12-14 ns/B for 8 KiB on slowfs) while reads met in the
 * kernel's read-ahead cost a copy; priced at the writes', reads made zstd
 * look nearly as good as lz4 there.
 */
static double average_of(const bf_auto *a, int read)
{
    return read && a->dev.read_transfer_windows > 0 ? a->dev.read_transfer_ns : a->dev.transfer_ns;
}

/*
 * What a transfer's own time saves per byte a codec does not move: the
 * slope of its time over its size, once transfers of several sizes have
 * been timed (a compressing file's extents differ in size); until then the
 * average. Most of a FUSE request's time is its round trip, which a
 * compressed block still makes: on slowfs at 100 MB/s the writes averaged
 * 10-14 ns/B, priced per byte, and zstd:1 (0.38 of the bytes) looked
 * cheaper than lz4 (0.58) by more than its CPU; the hash join then took
 * 1.06x lz4's time (docs/results/auto-synchronous.md).
 */
static double transfer_of(const bf_auto *a, int read)
{
    double avg = average_of(a, read);
    if ((read ? a->dev.read_slope_windows : a->dev.slope_windows) == 0)
        return avg;
    /* the windows' fits averaged, noise both ways */
    double s = read ? a->dev.read_slope_ns : a->dev.slope_ns;
    return s < 0 ? 0 : s > avg ? avg : s;
}

/*
 * The line through window w's transfer times of direction d (those that did
 * not wait), if their sizes spread enough to tell a slope (a tenth of their
 * mean): its slope into *slope, returning 1; 0 if they do not. Noise tilts
 * it either way, and it is averaged over windows as it is: clamped to
 * [0, average] window by window (as it was), a FUSE device's requests
 * (45 us whatever their size, 1 in 16 or so held near 1 ms by its daemon
 * on a busy machine) lost the noise below 0 and kept the rest, and through
 * PostgreSQL on slowfs the writes' transfers were priced 20-130 ns/B
 * (test_request_noise_is_not_a_slope). transfer_of clamps the average.
 */
static int fit_slope(const bf_auto_window *w, int d, double *slope)
{
    const double *f = w->fit[d];
    double n = f[0];
    if (n < 8)
        return 0;
    double mx = (double)w->free_bytes[d] / n, my = (double)w->free_ns[d] / n;
    double var = f[1] / n - mx * mx;
    if (!(var > 0.01 * mx * mx))
        return 0;
    *slope = (f[2] / n - mx * my) / var;
    return 1;
}

/*
 * The transfers' own time per byte, as a codec saves it: not once the
 * device has moved BF_AUTO_CHAIN bytes without a wait and is not taken for
 * limiting (the page cache). There, counting it made Q4 compress 73% of its
 * blocks with lz4 and lose 9% to none, its first transfers into new pages
 * costing 1.1-1.2 ns/B: in the page cache lz4 never paid on this machine
 * (1.10x none over the spilling queries), so what a transfer costs does not
 * shrink as a codec's figures say, and what a codec costs besides its own
 * time (the caches it evicts) is not seen. Before the device is known it
 * counts: left out there, Q16 (6.9 MB, lz4 shrinks it to a sixth) wrote
 * 60% of its blocks raw at 50 MB/s before the device was timed, 1.57x
 * zstd-1; and where the device limits, left out it kept Q4 at 200 MB/s 62%
 * none, 11% slower than lz4.
 */
static double sys_of(const bf_auto *a, int read, double dev)
{
    return dev > 0 || a->dev.since_wait <= BF_AUTO_CHAIN ? transfer_of(a, read) : 0;
}

/*
 * What candidate k would have added to `logical` bytes of one direction in
 * a window: the caller's work its bytes add (moved_of), and its codec time
 * and the transfers' own time (sys_of), or the device's time on its bytes
 * less the caller's work that hides it (`other`, what the caller does
 * whatever it moves, and what these bytes add), whichever is longer.
 * XXX: the longer, not the sum, holds behind a write-back cache or a throttle
 * with a burst; on a synchronous device (slowfs, any FUSE file system) each
 * request's round trip does not overlap the caller's CPU, and a transfer's
 * cost is partly per request (a compressed block is still one pwrite), not
 * all per byte. On slowfs at 200 MB/s auto wrote zstd and took 1.03-1.34x
 * lz4's time (docs/results/pg-buffile-wall.md, "The matrix on slowfs").
 */
static double predict(const bf_auto *a, const bf_auto_cand *c, int read, double logical,
                      double codec_ns, double other, double dev)
{
    double bytes = logical * c->ratio;
    double own = bytes * moved_of(a);
    double cpu = logical * codec_ns + bytes * sys_of(a, read, dev);
    double waits = bytes * dev - other - own;
    return (own + (cpu > waits ? cpu : waits)) / logical;
}

/* Of the caller's work `other`, over `logical` bytes that moved `bytes`, what it does
   whatever it moves (predict's `other`). */
static double base_of(const bf_auto *a, double other, double bytes)
{
    double base = other - moved_of(a) * bytes;
    return base > 0 ? base : 0;
}

static int choose_pick(const bf_auto *a, int cur, int flat);

/* The window being measured is written raw (tests' `force` overrides it). */
static int exploring(const bf_auto *a)
{
    return a->explore && a->force < 0;
}

/*
 * Whether the window after `w` (just measured, the space's choice now
 * `best`) is to be written raw: while the writes' device figure is their
 * runs alone (device_w: the share of raw windows that waited is not known
 * yet) and it makes the space compress, every other window of writes is
 * raw, so that the share becomes known either way. A device that limits
 * makes them wait and the runs stand; a stall does not come back, and its
 * runs go unpriced. Where the first BF_AUTO_SHARE_EARLY raw windows all
 * waited the runs are taken as confirmed and exploring stops: on a device
 * slow enough, a raw window costs what compressing saves on its MiB (at
 * 100 KB/s, seconds). So it costs a space that meets a limiting device two
 * raw windows or so, one that met a stall at most BF_AUTO_SHARE_MIN (16
 * MiB, every other window), and one started from figures whose share is
 * known nothing (bf_auto_device carries it).
 */
static int explore_next(const bf_auto *a, const bf_auto_window *w, int best)
{
    uint32_t n = a->dev.share_windows;
    int confirmed = n >= BF_AUTO_SHARE_EARLY && a->dev.limited_share >= 0.99;
    int share = n < BF_AUTO_SHARE_MIN && !confirmed;
    /* The writes' runs priced per byte with no request part fitted (fit_run) may be
       per-request waits: runs of raw requests among compressed ones tell them apart.
       Where every block compresses alike (through PostgreSQL on slowfs at 200 MB/s, zstd:3
       in every block of every space) nothing else makes request sizes spread: the runs
       read 44-46 ns/B for a 5 ns/B device. Up to BF_AUTO_SPLIT_WINDOWS raw windows a
       space. */
    int split =
        a->dev.request_fits == 0 && a->split_windows < BF_AUTO_SPLIT_WINDOWS && device_w(a) > 0;
    /* Not for a space that prefers space: a raw window is never its choice, whatever
       the device. */
    return !a->explore && a->force < 0 && !a->prefer_space && w->write > w->read &&
           a->dev.device_runs > 0 && (share || split) && a->cand[best].ratio * 10 < 9;
}

/* A window is complete: update the device and each candidate's predicted cost. */
static void end_window(bf_auto *a, uint64_t end)
{
    bf_auto_window *w = &a->win;
    double took = (double)(end - w->start);
    if (w->free_bytes[0] > 0)
        time_sample(&a->dev.transfer_ns, (double)w->free_ns[0] / (double)w->free_bytes[0], EWMA_IO,
                    a->dev.transfer_windows++);
    if (w->free_bytes[1] > 0)
        time_sample(&a->dev.read_transfer_ns, (double)w->free_ns[1] / (double)w->free_bytes[1],
                    EWMA_IO, a->dev.read_transfer_windows++);
    for (int d = 0; d < 2; d++) {
        double slope;
        if (fit_slope(w, d, &slope)) {
            uint32_t *n = d ? &a->dev.read_slope_windows : &a->dev.slope_windows;
            ewma(d ? &a->dev.read_slope_ns : &a->dev.slope_ns, slope, EWMA_IO, (*n)++ == 0);
        }
    }
    /* A window that spent a share of its time waiting moved its bytes at about the
       device's pace, and how many windows do tells whether the device limits. Only
       windows of uncompressed bytes count: one of compressed bytes that did not wait
       says nothing of uncompressed ones, and its pace is not the device's. And only
       windows mostly of writes: the pace stands for the writes' device figure (device_w),
       reads have runs of their own (device_r), and a FUSE device's reads wait where its
       writes do not. */
    double moved = (double)(w->write + w->read);
    int raw = (double)w->bytes * 10 >= moved * 9;
    int limited = (double)w->wait_ns * BF_AUTO_LIMITED >= took;
    int raw_reads = raw && w->read > w->write;
    if (raw_reads) {
        /* Reads keep a plain count: it only tells whether their waits are rare. */
        a->dev.read_limited_windows += limited;
        a->dev.read_share_windows++;
    } else if (raw) {
        if (limited)
            ewma(&a->dev.pace_ns, took / (double)w->bytes, EWMA_IO, a->dev.pace_windows++ == 0);
        double weight =
            a->dev.share_windows < BF_AUTO_SHARE_MIN ? 1.0 / (a->dev.share_windows + 1) : EWMA;
        ewma(&a->dev.limited_share, limited, weight, 0);
        a->dev.share_windows++;
    }
    if (moved > 0) {
        double busy = took - (double)w->io_ns - (double)w->codec_ns;
        double other = busy > 0 ? busy : 0;
        ewma(&a->other_ns, other / moved, EWMA_IO, a->windows == 0);
        if (device_limits(a) && w->write > w->read)
            fit_moved(a, (double)w->bytes / moved, other / moved);
        /* How much of the caller's work the reads' device ran behind (hidden_r): its time
           on the raw reads' bytes less what their transfers took, over the caller's work
           on them. Not where that work is under a quarter of the device's time: a caller
           that does next to nothing tells nothing of one that works. */
        if (raw_reads && a->dev.read_runs > 0 && w->read_bytes > 0) {
            double work = other * (double)w->read / moved;
            double dev_time = a->dev.read_device_ns * (double)w->read_bytes;
            if (work * 4 >= dev_time) {
                double q = (dev_time - (double)w->read_ns) / work;
                ewma(&a->dev.read_overlap, q > 0 ? q : 0, EWMA_IO,
                     a->dev.read_overlap_windows++ == 0);
            }
        }
        double dev_w = device_w(a), dev_r = device_r(a);
        /* The windows' predictions before the device began or ceased to be priced are of
           another device: averaged with them, once a stall's runs were unpriced after 16 raw
           windows the space stayed on zstd:1 for the next 512 blocks of text at least,
           while their weight decayed (test_a_stall_is_not_the_device). */
        /* So are those before the writes' runs were first split per request (fit_run): at
           1.5 ms a request and 2 ns/B, a space whose blocks all went to zstd:3 at 490 ns/B
           kept zstd:1 for 17 windows after it was split (test_raw_windows_split_the_runs). */
        int priced = (dev_w > 0) | (dev_r > 0) << 1 | (a->dev.request_fits > 0) << 2;
        other = base_of(a, other, (double)w->bytes);
        double other_r = hidden_r(a, other / moved); /* per byte read, what hides it */
        int changed = priced ^ a->priced;
        a->priced = priced;
        for (int k = 0; k < a->ncand; k++) {
            bf_auto_cand *c = &a->cand[k];
            if (changed & 5)
                c->windows_w = 0;
            if (changed & 2)
                c->windows_r = 0;
            if (c->samples == 0)
                continue;
            /* The caller's work hides the device for reads and writes in proportion. */
            if (w->write > 0)
                ewma(&c->extra_w,
                     predict(a, c, 0, (double)w->write, c->comp_ns,
                             other * (double)w->write / moved, dev_w),
                     EWMA_IO, c->windows_w++ == 0);
            if (w->read > 0)
                ewma(&c->extra_r,
                     predict(a, c, 1, (double)w->read, decomp_of(c), other_r * (double)w->read,
                             dev_r),
                     EWMA_IO, c->windows_r++ == 0);
        }
        a->windows++;
        /* When the space's choice changes (the device or the data did), files need not
           wait for their next decision point: with a hash join's many batch files that
           is thousands of blocks. */
        int best = choose_pick(a, a->best, 0);
        int explore = explore_next(a, w, best);
        a->split_windows += explore && a->dev.request_fits == 0;
        if (best != a->best || explore != a->explore) {
            a->best = best;
            a->explore = explore;
            a->epoch++;
        }
    }
    *w = (bf_auto_window){.start = end};
}

/*
 * How fast is the device when it limits? A transfer that waits shows that
 * the device had a queue in front of it; a run of such waits close to each
 * other (BF_AUTO_CHAIN bytes at most apart, no long pause of the caller)
 * shows it never ran dry in between, so over a run the bytes moved took the
 * device exactly the time from the end of its first wait to the end of its
 * last. Stretches between waits farther apart may hold idle time, and are
 * not used: they would make the device look slower than it is. A run cut
 * short by such a stretch still times the device up to its last wait, if
 * it got as far as two waits after its first, BF_AUTO_RUN_MIN bytes from
 * it: at 100 MB/s Q3's only full-length run read 19.7 ns/B, its caller
 * pausing 37 of its 42 ms, while a run of three waits over 1.8 MB, cut
 * short, read 9.5.
 */
static void time_run(bf_auto *a, int read)
{
    const bf_auto_run *r = &a->run[read];
    double y = (double)(r->last - r->start) / (double)r->timed;
    device_sample(a, read, read ? y : fit_run(a, (double)r->timed_reqs / (double)r->timed, y));
}

static void end_run(bf_auto *a, int read)
{
    bf_auto_run *r = &a->run[read];
    if (r->start != 0 && r->waits >= 2 && r->timed >= BF_AUTO_RUN_MIN)
        time_run(a, read);
    r->start = 0;
}

static void start_run(bf_auto *a, int read, uint64_t end)
{
    bf_auto_run *r = &a->run[read];
    r->start = end;
    r->bytes = 0;
    r->timed = 0;
    r->waits = 0;
    r->reqs = 0;
    r->timed_reqs = 0;
}

/*
 * The device clock's word (devclock.h): a transfer whose thread waited over
 * BF_AUTO_GAP for a CPU before or in it is `paused`: like a pause of the
 * caller, the device may have run dry meanwhile, so the run ends before it;
 * so does one that brings the thread's CPU waits since the run's last wait
 * over BF_AUTO_GAP (several shorter preemptions between two waits leave a
 * device idle as well: counted one by one, io_limit's 100 MB/s read 10-19
 * ns/B under a burner per core).
 * A wait's end on the wall comes late by the run delay the thread had after
 * the device let it go (woken, it waited for a CPU): a run is timed between
 * the device's releases, end - late_ns, and starts only where that is
 * known (not `unsure`). Timed from the wall ends, runs under a CPU burner
 * per core read io_limit's 400 MB/s 1.6-2.2 ns/B instead of 2.5
 * (docs/results/device-clock.md).
 */
static void time_device(bf_auto *a, int read, uint64_t bytes, uint64_t start, uint64_t end,
                        int waited, const bf_auto_wait *w)
{
    bf_auto_run *r = &a->run[read];
    /* Transfers of the other direction between two of this one's are, for this
       direction's run, time the caller spent elsewhere: a gap like any other. */
    r->cpu += w->cpu_ns;
    if (start > r->last_end + BF_AUTO_GAP || w->paused || r->cpu > BF_AUTO_GAP)
        end_run(a, read);
    r->last_end = end;
    r->bytes += bytes;
    r->reqs++;
    a->dev.since_wait += bytes;
    if (a->dev.since_wait > BF_AUTO_CHAIN) {
        end_run(a, 0);
        end_run(a, 1);
    }
    if (!waited)
        return;
    a->dev.since_wait = 0;
    uint64_t took = end > start ? end - start : 0;
    uint64_t late = w->late_ns < took ? w->late_ns : took;
    uint64_t released = end - late;
    r->cpu = late; /* what came after the device let it go */
    if (r->start == 0) {
        if (!w->unsure) /* else the next wait starts it */
            start_run(a, read, released);
        return;
    }
    r->waits++;
    r->last = released;
    r->timed = r->bytes;
    r->timed_reqs = r->reqs;
    if (r->bytes < BF_AUTO_SPAN && r->waits < BF_AUTO_RUN_WAITS)
        return; /* the run goes on */
    time_run(a, read);
    start_run(a, read, released);
}

/* Nothing is known of the device yet: neither measured nor learned from another space. */
static int device_unknown(const bf_auto *a)
{
    return a->windows == 0 && a->dev.transfer_windows == 0 && a->dev.device_runs == 0 &&
           a->dev.read_runs == 0 && a->dev.read_transfer_windows == 0 &&
           a->dev.share_windows == 0 && a->dev.read_share_windows == 0;
}

/* Bytes of I/O in the window being measured: the first is shorter, so the prior decides less. */
static uint64_t window_len(const bf_auto *a)
{
    return device_unknown(a) ? BF_AUTO_IO_FIRST : BF_AUTO_IO_WINDOW;
}

/*
 * Two clock reads are about 2% of what an 8 KiB transfer into the page
 * cache costs, and there, where the device does not limit, a transfer's own
 * time is steady: one timed stands for the others. A wait among those not
 * timed goes unseen, but a device that starts to limit makes most
 * transfers wait, and the first one timed that did brings back timing them
 * all (since_wait starts again from 0). But behind a write-back cache a
 * slow device makes only one transfer in 15-20 wait (each time the cache is
 * full), and a fixed gap of 8 can fall in step with that and time none of
 * them: the gaps are drawn at random, 1 to 2 * BF_AUTO_TIME_EVERY - 1
 * (test_a_device_turning_slow_is_seen_while_sampling). Fewer samples (one
 * in 32 once settled) were tried: they saved ~4 ns a block of clock reads
 * and left such a device unseen for several MiB.
 */
int bf_auto_times_io(bf_auto *a, uint64_t bytes)
{
    /* The first window is timed whole: its start is the first transfer's (a space
       started from another's figures may have moved BF_AUTO_CHAIN bytes without a wait
       before it has moved any). */
    int all = a->dev.since_wait <= BF_AUTO_CHAIN ||
              (a->dev.transfer_windows == 0 && a->dev.read_transfer_windows == 0) ||
              a->windows == 0 || device_limits(a) || a->win.bytes + bytes >= window_len(a);
    if (all) {
        a->untimed = 0;
        return 1;
    }
    if (a->untimed == 0) {
        a->rng ^= a->rng << 13;
        a->rng ^= a->rng >> 17;
        a->rng ^= a->rng << 5;
        a->untimed = 1 + a->rng % (2 * BF_AUTO_TIME_EVERY - 1); /* BF_AUTO_TIME_EVERY on average */
    }
    return --a->untimed == 0;
}

/* A transfer of `bytes` that took `ns` into window w's sums, and the reads' apart. */
static void window_io(bf_auto_window *w, int read, uint64_t bytes, uint64_t ns)
{
    w->bytes += bytes;
    w->io_ns += ns;
    if (read) {
        w->read_bytes += bytes;
        w->read_ns += ns;
    }
}

void bf_auto_note_untimed(bf_auto *a, int read, uint64_t bytes)
{
    /* It took what the timed ones that did not wait take; no run of waits is going
       (none came in the last BF_AUTO_CHAIN bytes), so only the distance grows. */
    window_io(&a->win, read, bytes, (uint64_t)(average_of(a, read != 0) * (double)bytes));
    a->dev.since_wait += bytes;
}

/*
 * The window's transfer times are their waits (wall less run delay): time a
 * preempted transfer spent waiting for a CPU counts as the caller's own
 * (other_ns), as it does when the caller is preempted between transfers;
 * the window's length stays on the wall, as runs do.
 */
void bf_auto_note_transfer(bf_auto *a, int read, uint64_t bytes, uint64_t start, uint64_t end,
                           const bf_auto_wait *dw)
{
    uint64_t wait_ns = dw->wait_ns;
    bf_auto_window *w = &a->win;
    if (w->bytes == 0 && w->start == 0)
        w->start = start; /* the space's first transfer */
    uint64_t wall = end > start ? end - start : 0;
    uint64_t ns = wait_ns < wall ? wait_ns : wall;
    window_io(w, read, bytes, ns);
    int waited = (double)ns > BF_AUTO_WAIT_NS + BF_AUTO_WAIT_NS_B * (double)bytes;
    w->wait_ns += waited ? ns : 0;
    time_device(a, read != 0, bytes, start, end, waited, dw);
    if (waited && !a->waited) {
        /* The prior holds from now on (bf_auto_cost): the files decide again at once,
           as when a window changes the space's choice. */
        a->waited = 1;
        if (device_unknown(a)) {
            int best = choose_pick(a, a->best, 0);
            if (best != a->best) {
                a->best = best;
                a->epoch++;
            }
        }
    }
    if (!waited) {
        int d = read != 0;
        w->free_bytes[d] += bytes;
        w->free_ns[d] += ns;
        double x = (double)bytes;
        w->fit[d][0] += 1;
        w->fit[d][1] += x * x;
        w->fit[d][2] += x * (double)ns;
    }
    if (w->bytes >= window_len(a))
        end_window(a, end);
}

void bf_auto_note_io(bf_auto *a, uint64_t bytes, uint64_t start, uint64_t end)
{
    bf_auto_wait w = {.wait_ns = end > start ? end - start : 0};
    bf_auto_note_transfer(a, 0, bytes, start, end, &w);
}

void bf_auto_note_read_io(bf_auto *a, uint64_t bytes, uint64_t start, uint64_t end)
{
    bf_auto_wait w = {.wait_ns = end > start ? end - start : 0};
    bf_auto_note_transfer(a, 1, bytes, start, end, &w);
}

void bf_auto_note_block(bf_auto *a, int write, uint32_t raw_len, uint64_t codec_ns)
{
    if (write)
        a->win.write += raw_len;
    else
        a->win.read += raw_len;
    a->win.codec_ns += codec_ns;
}

int bf_auto_warming(const bf_auto *a)
{
    /* A probe that found nothing shrinks backed off (probe_every grew): on flat data the
       next warm-up probes would only find it again. */
    return a->blocks < BF_AUTO_WARMUP && a->probe_every == BF_AUTO_PROBE_EVERY;
}

int bf_auto_probe_due(const bf_auto *a)
{
    if (bf_auto_warming(a))
        return 1;
    /* A power of two: no division at every block. */
    if (device_limits(a))
        return (a->blocks & (a->probe_every - 1)) == 0;
    /* While the device does not limit, codecs can only cost time: their figures
       matter little, and probing for them is most of what auto costs there. So the
       probes thin out as the space grows, at the powers of two from BF_AUTO_PROBE_MAX
       to BF_AUTO_PROBE_IDLE: one every 4096 blocks was 40 probes, 8-16 ms, in each
       10M-row hash join through pg_buffile, whose files all stayed raw. A device that
       starts to limit is seen by the transfers' timing, not by probes, and brings
       back probe_every. */
    uint64_t b = a->blocks;
    return b >= BF_AUTO_PROBE_MAX && ((b & (b - 1)) == 0 || (b & (BF_AUTO_PROBE_IDLE - 1)) == 0);
}

void bf_auto_note_probe(bf_auto *a, int shrinks)
{
    if (shrinks)
        a->probe_every = BF_AUTO_PROBE_EVERY;
    else if (a->probe_every < BF_AUTO_PROBE_MAX)
        a->probe_every *= 2;
}

void bf_auto_note_pack(bf_auto *a, int k, uint32_t raw_len, uint32_t stored, uint64_t ns)
{
    if (raw_len == 0)
        return;
    bf_auto_cand *c = &a->cand[k];
    /* A block stored bare by none after its first samples: its ratio stays exactly 1 and
       its time 0, and the update would change nothing (auto costs most over none where it
       stores everything raw, at every block). */
    if (stored == raw_len && ns == 0 && c->samples >= TIME_WARM && !c->stale && c->ratio == 1.0 &&
        c->comp_ns == 0)
        return;
    time_sample(&c->comp_ns, (double)ns / raw_len, EWMA, c->samples);
    ewma(&c->ratio, (double)stored / raw_len, EWMA, c->samples == 0 || c->stale);
    c->samples++;
    c->stale = 0;
}

int bf_auto_shrinks(const bf_auto *a)
{
    for (int k = 0; k < a->ncand; k++)
        if (a->cand[k].codec != BF_CODEC_NONE && a->cand[k].samples > 0 &&
            a->cand[k].ratio * 10 < 9)
            return 1;
    return 0;
}

void bf_auto_note_change(bf_auto *a)
{
    for (int k = 0; k < a->ncand; k++)
        a->cand[k].stale = 1;
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

/*
 * Candidate c's expected ns per logical byte in one direction (read or
 * not): its windows' average, or until the direction is seen in this
 * space's windows, what a window would predict (bf_auto_cost says why).
 */
static double cost_of(const bf_auto *a, const bf_auto_cand *c, int read)
{
    /* the caller's work per byte, less what the windows' bytes added to it on average */
    double other = base_of(a, a->other_ns, a->moved_fit[0]);
    if (read) {
        if (c->windows_r > 0)
            return c->extra_r;
        return predict(a, c, 1, 1.0, decomp_of(c), hidden_r(a, other), device_r(a));
    }
    return c->windows_w > 0 ? c->extra_w : predict(a, c, 0, 1.0, c->comp_ns, other, device_w(a));
}

double bf_auto_cost(const bf_auto *a, int k)
{
    const bf_auto_cand *c = &a->cand[k];
    if (c->samples == 0)
        return -1;
    if (device_unknown(a))
        return c->comp_ns + decomp_of(c) + c->ratio * (a->waited ? IO_PRIOR_NS : 0) * 2;
    /* A block written is read back once. Until a direction is seen in this space's windows
       it is predicted as a window would predict it (the device's time less the caller's
       work that hides it, or the codec's and the transfers' own, whichever is longer), at
       the device figure of that direction (timed in this space or the last) and with the
       caller's work per byte measured so far (none before the first window). Summed
       instead, with no overlap, a hash join's reads on slowfs at 100 MB/s, which the
       caller's 4 ns/B of probing hides behind the read-ahead, were priced at the device in
       full: lz4 and zstd:1 came out 9.00 and 9.65 ns/B, within the margin, while zstd:1
       took 1.18x lz4's time, and a space started from the last one's figures drifted to
       zstd:1 (docs/results/auto-synchronous.md). */
    return cost_of(a, c, 0) + cost_of(a, c, 1);
}

static int name_of(const bf_auto_cand *c, char *buf, size_t len)
{
    if (c->codec == BF_CODEC_ZSTD)
        return snprintf(buf, len, "zstd:%d", (int)c->level);
    return snprintf(buf, len, "%s", c->name != NULL ? c->name : bf_codec_name(c->codec));
}

void bf_auto_explain(const bf_auto *a, int k, int flat, char *why, size_t len)
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
    if (bf_auto_cost(a, k) < 0) {
        PUT("%s: nothing measured yet", name);
        return;
    }
    if (exploring(a) && k == 0) {
        /* flat files are told above; a raw window's choice is not the costs' */
        PUT("none: a window written raw, to tell a device that limits from a stall or from "
            "waits per request (writes timed %.2f ns/B in %u runs, %u split; %u raw windows "
            "of writes so far)",
            a->dev.device_ns, a->dev.device_runs, (unsigned)a->dev.request_fits,
            a->dev.share_windows);
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
    if (device_unknown(a) && !a->waited)
        PUT("; device not known, no transfer waited yet");
    else if (device_unknown(a))
        PUT("; device %.2f ns/B (prior)", IO_PRIOR_NS);
    else if (!device_limits(a))
        PUT("; device not limiting, transfers %.2f ns/B, caller %.2f", transfer_of(a, 0),
            a->other_ns);
    else {
        if (device_w(a) == 0)
            PUT("; device not limiting writes");
        else
            PUT("; device %.2f ns/B (%s)", device_w(a), a->dev.device_runs > 0 ? "timed" : "pace");
        if (a->dev.read_runs > 0)
            PUT(", reads %.2f (timed)", a->dev.read_device_ns);
        PUT(", transfers %.2f (reads %.2f), caller %.2f", transfer_of(a, 0), transfer_of(a, 1),
            a->other_ns);
    }
    /* What decided whether each direction is priced, and each candidate's cost by
       direction, for whoever reads the reason (after the figures, which scripts parse:
       pg_device.py). */
    if (!device_unknown(a)) {
        PUT("; writes + reads:");
        for (int j = 0; j < a->ncand; j++) {
            const bf_auto_cand *c = &a->cand[j];
            if (c->samples == 0)
                continue;
            name_of(c, name, sizeof(name));
            /* "?": not seen in this space's windows, predicted */
            PUT(" %s %.2f%s + %.2f%s", name, cost_of(a, c, 0), c->windows_w > 0 ? "" : "?",
                cost_of(a, c, 1), c->windows_r > 0 ? "" : "?");
        }
        PUT("; writes' runs %u (%.2f ns/B, %.1f us a request, %u fits), reads' runs %u (%.2f "
            "ns/B); of raw windows waited: writes %.2f of %u, reads %u of %u; reads hid "
            "%.2f of the caller's work (%u windows); each byte moved added %.2f ns to the "
            "caller's work (%u fits)",
            a->dev.device_runs, a->dev.device_ns, a->dev.request_ns / 1000,
            (unsigned)a->dev.request_fits, a->dev.read_runs, a->dev.read_device_ns,
            a->dev.limited_share, a->dev.share_windows, a->dev.read_limited_windows,
            a->dev.read_share_windows, a->dev.read_overlap, (unsigned)a->dev.read_overlap_windows,
            moved_of(a), (unsigned)a->dev.moved_fits);
    }
#undef PUT
}

/* bf_auto_choose's choice, but for exploration's raw windows. */
static int choose_pick(const bf_auto *a, int cur, int flat)
{
    int pick = -1;
    if (a->force >= 0) {
        pick = a->force;
    } else if (flat) {
        pick = 0; /* none */
    } else {
        /* Each cost once: a decision at every file's first block (a hash join's many
           batches) made them most of what auto's bookkeeping cost there. */
        double cost[BF_AUTO_MAX];
        double fastest = -1;
        for (int k = 0; k < a->ncand; k++) {
            double c = cost[k] = bf_auto_cost(a, k);
            if (c >= 0 && (fastest < 0 || c < fastest))
                fastest = c;
        }
        if (fastest < 0) {
            /* Nothing measured yet: lz4 costs little and usually halves the bytes. */
            pick = a->ncand > 1 && a->cand[1].codec == BF_CODEC_LZ4 ? 1 : 0;
        } else {
            double limit = a->prefer_space ? fastest * (1 + a->slack) : fastest;
            for (int k = 0; k < a->ncand; k++) {
                double c = cost[k];
                if (c < 0 || c > limit)
                    continue;
                if (pick < 0 ||
                    (a->prefer_space ? a->cand[k].ratio < a->cand[pick].ratio : c < cost[pick]))
                    pick = k;
            }
            /* Hysteresis: the current candidate stays unless the pick clearly wins; but a
               codec that saves nothing over none (incompressible data) never stays by it. */
            double cc = cur >= 0 ? cost[cur] : -1;
            int saves = cur >= 0 && a->cand[cur].ratio < a->cand[0].ratio * 0.99;
            if (cc >= 0 && pick != cur && (cur == 0 || saves)) {
                int stays = a->prefer_space
                                ? cc <= limit && a->cand[cur].ratio <=
                                                     a->cand[pick].ratio * (1 + BF_AUTO_MARGIN)
                                : cost[pick] >= cc * (1 - BF_AUTO_MARGIN);
                if (stays)
                    pick = cur;
            }
        }
    }
    return pick;
}

int bf_auto_choose(const bf_auto *a, int cur, int flat, char *why, size_t len)
{
    int pick = exploring(a) ? 0 : choose_pick(a, cur, flat);
    if (why != NULL && len > 0)
        bf_auto_explain(a, pick, flat, why, len);
    return pick;
}

/* A figure in [0, max] (NaN fails both comparisons). */
static int figure(double v, double max)
{
    return v >= 0 && v <= max;
}

/*
 * What a space can measure: times per byte of the device and its pace are
 * a 64-bit ns clock's difference over at least one byte; a transfer that
 * did not wait took at most BF_AUTO_WAIT_NS + BF_AUTO_WAIT_NS_B per byte of
 * it (slower, it waited), and so does their average. A figure beyond, once
 * accepted, made bf_auto_note_untimed convert times no uint64_t holds (an
 * undefined conversion). Counts and since_wait are any a counter holds.
 */
int bf_auto_device_valid(const bf_auto_device *d)
{
    const double clock = 18446744073709551615.0; /* UINT64_MAX ns */
    return figure(d->device_ns, clock) && figure(d->pace_ns, clock) &&
           figure(d->read_device_ns, clock) &&
           figure(d->transfer_ns, BF_AUTO_WAIT_NS + BF_AUTO_WAIT_NS_B) &&
           figure(d->read_transfer_ns, BF_AUTO_WAIT_NS + BF_AUTO_WAIT_NS_B) &&
           figure(d->limited_share, 1) && d->read_limited_windows <= d->read_share_windows &&
           figure(d->request_ns, clock) && figure(d->read_overlap, clock) &&
           figure(d->moved_ns, clock) &&
           /* slopes are fits, below 0 at times: -2^64 .. 2^64 */
           figure(d->slope_ns + clock, 2 * clock) && figure(d->read_slope_ns + clock, 2 * clock);
}

int bf_auto_start(const bf_auto *a)
{
    return bf_auto_choose(a, -1, 0, NULL, 0);
}

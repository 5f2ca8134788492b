/*
 * auto.h - codec=auto: the space measures what spilling costs and each
 * file picks the codec that makes it cheapest.
 *
 * Cost model. The space times its transfers and keeps windows of about
 * 1 MiB of them. Per window it knows how long it took (W), how much of that
 * was spent in transfers and in the codecs, how many logical bytes were
 * written and read (L), and so what the caller did besides (its own work,
 * which overlaps the device: a write-back cache or a queue lets the caller
 * run ahead). For every candidate k it then predicts the time spilling
 * would have added in that window, had every block used k:
 *
 *   cpu_k    = L_write * comp_k + L_read * decomp_k + bytes_k * sys
 *   extra_k  = max(cpu_k, bytes_k * dev - other),  bytes_k = L * ratio_k
 *
 * sys is what a transfer costs when it does not wait (copying into the page
 * cache), not counted once the device has gone BF_AUTO_CHAIN bytes without
 * a wait and dev is 0 (see sys_of in auto.c); dev is the
 * device's time per byte when it is the bottleneck, for writes and for
 * reads apart (reads take the writes' until their own is timed),
 * measured over runs of transfers that had to wait, close together (over
 * such a run the device never ran dry, so its bytes took the device the
 * time from the end of the first wait to the end of the last; for writes,
 * less what each request took whatever its size, once runs of several
 * request sizes tell it: fit_run in auto.c); a device
 * never timed has dev 0 (until windows that waited give its pace: see
 * device_ns in auto.c), and after BF_AUTO_CHAIN bytes without a wait bytes
 * cost nothing: none is the choice.
 * Writes and reads are
 * predicted apart; a file's codec is the one whose extra for a block
 * written and read back once, averaged over windows, is lowest. Summing codec and I/O
 * time instead (no overlap) compresses too eagerly on a fast device;
 * counting only the waits compresses too little on a slow one, where the
 * waits are what is left after the caller's own work has hidden part of
 * the device.
 *
 * Estimates are exponentially weighted (recent data counts more; a time
 * sample far above its estimate is capped, since timing noise only ever
 * adds time), decided per file at its first block, every BF_AUTO_EVERY
 * blocks after and whenever the space's own choice changes, with
 * hysteresis: a file changes codec only when another is better by more
 * than BF_AUTO_MARGIN, so noise does not make it flap. A file whose blocks
 * stop shrinking under a compressing codec is "flat" and goes to none until
 * a probe of its own data shows it compresses again (each decision probes
 * it). A file on none because nothing the space measured shrinks checks its
 * own data with one compression pass, every decision at first and at least
 * every BF_AUTO_RECHECK decisions; if that shrinks, the ratios start again
 * from a probe of its block. So data that changes character is decided
 * anew within BF_AUTO_EVERY * BF_AUTO_RECHECK blocks (64), and within
 * 2 * BF_AUTO_EVERY when it stops shrinking.
 *
 * Codec figures come from the files' own packs and from probes
 * (auto_file.c): the space's first BF_AUTO_WARMUP blocks, then one in
 * probe_every, packed with every other candidate into side buffers, each
 * run twice with the second timed (a cold codec looks slower), once where
 * the block before was probed too (the warm-up: its tables are warm).
 * Where the device does not limit, the warm-up is most of what auto costs
 * over none: it is kept to the samples a time estimate needs (TIME_WARM).
 *
 * Everything that decides is a pure function of the estimates
 * (bf_auto_choose) and of the transfers' times, so tests drive it with
 * made-up devices, callers and codecs.
 */
#ifndef BF_AUTO_H
#define BF_AUTO_H

#include <stddef.h>
#include <stdint.h>

#include "buffile.h"

#define BF_AUTO_MAX                                                                                \
    (4 + BF_USER_CODECS_MAX)          /* candidates: none, lz4, zstd:1, zstd:3 (those              \
                                         built), and the caller's codecs it offers */
#define BF_AUTO_WARMUP 4              /* the space's first blocks are probed (bf_auto_warming) */
#define BF_AUTO_PROBE_EVERY 512       /* then one block in this many */
#define BF_AUTO_EVERY 16              /* a file decides again after this many blocks */
#define BF_AUTO_RECHECK 4             /* a file on none checks its data at least every this many
                                         decisions while nothing the space measured shrinks */
#define BF_AUTO_MARGIN 0.05           /* a change must win by more than this share */
#define BF_AUTO_IO_WINDOW (1u << 20)  /* bytes of I/O per measurement of its cost */
#define BF_AUTO_IO_FIRST (256u << 10) /* the first measurement's: the prior decides less */
#define BF_AUTO_WAIT_NS 1000000       /* a transfer longer than this ... */
#define BF_AUTO_WAIT_NS_B 1.0         /* ... plus this per byte waited for the device */
#define BF_AUTO_SPAN (2u << 20)       /* bytes of a run of waits that times the device, */
#define BF_AUTO_RUN_WAITS 16          /* or waits in it; a run cut short times it too */
#define BF_AUTO_RUN_MIN (512u << 10)  /* when two waits after its first span this many bytes */
#define BF_AUTO_CHAIN (4u << 20)      /* waits at most this far apart make a run */
#define BF_AUTO_LIMITED 20            /* a window that waited 1/20 of its time was limited */
#define BF_AUTO_LIMITED_SHARE 0.35    /* a device limits when this share of windows were, */
#define BF_AUTO_SHARE_MIN 16          /* out of at least this many (runs too: device_w) */
#define BF_AUTO_SHARE_EARLY 3         /* so many raw windows, every one waited: runs confirmed */
#define BF_AUTO_SPLIT_WINDOWS 4       /* raw windows a space writes to split its runs (fit_run) */
#define BF_AUTO_GAP 2000000u          /* ns without a transfer after which it may have idled */
#define BF_AUTO_TIME_EVERY 8          /* transfers timed, one in this many, while nothing waits */
#define BF_AUTO_PROBE_MAX                                                                          \
    4096 /* probes back off to one in this many on flat data, or a device not limiting */
/* While the device does not limit, probes come at the powers of two from BF_AUTO_PROBE_MAX,
   then one block in this many (bf_auto_probe_due). */
#define BF_AUTO_PROBE_IDLE 65536

typedef struct bf_auto_cand {
    bf_codec codec;
    int32_t level;
    const char *name; /* a caller's codec's (the space's copy); NULL: the built-in codec's */
    int stale;        /* the ratio is of other data: the next sample replaces it */
    double comp_ns;   /* per logical byte */
    double decomp_ns; /* per logical byte */
    double ratio;     /* stored bytes (header included) per logical byte */
    double extra_w;   /* predicted ns writing adds per logical byte (windows) */
    double extra_r;   /* predicted ns reading back adds per logical byte (windows) */
    uint32_t samples;
    uint32_t decomp_samples;
    uint32_t windows_w, windows_r; /* windows that wrote, that read */
} bf_auto_cand;

/* The window of transfers being measured (times on the space's I/O clock). */
typedef struct bf_auto_window {
    uint64_t start;                 /* end of the previous window's last transfer */
    uint64_t bytes, io_ns;          /* moved, and the time transfers took */
    uint64_t wait_ns;               /* time of the transfers that waited */
    uint64_t read_bytes, read_ns;   /* of those moved and that time, the reads' */
    uint64_t free_bytes[2];         /* the transfers that did not wait: [0] writes, [1] reads */
    uint64_t free_ns[2];
    /* and for the line through their sizes (x, bytes: free_bytes is their sum) and
       times (y, ns: free_ns): how many, and the sums of x * x and x * y */
    double fit[2][3];
    uint64_t write, read, codec_ns; /* logical bytes packed and loaded, codec time */
} bf_auto_window;

/*
 * A run of waits of one direction timing the device (time_device in auto.c).
 * Writes and reads are timed apart: a FUSE device serves a hash join's 8
 * KiB writes without a queue and holds its reads (larger, through the
 * kernel's read-ahead) to its rate, so a run mixing them times neither.
 */
typedef struct bf_auto_run {
    uint64_t start, bytes; /* the run's start (0: no run) and its bytes so far */
    uint64_t last, timed;  /* the run's last wait's end, and its bytes up to there */
    uint32_t waits;        /* waits in the run */
    uint32_t reqs, timed_reqs; /* its transfers so far, and up to its last wait */
    uint64_t cpu;          /* the thread's run delay since the run's last wait */
    uint64_t last_end;     /* end of the last transfer of this direction timed */
} bf_auto_run;

typedef struct bf_auto {
    bf_auto_cand cand[BF_AUTO_MAX];
    int ncand;
    int prefer_space;   /* choose the smallest output within slack of the fastest */
    double slack;       /* for prefer_space, e.g. 0.20 */
    bf_auto_device dev; /* what is known of the device: what another space can start from */
    double other_ns;    /* the caller's own time per logical byte moved (reason only) */
    uint32_t windows;   /* windows measured */
    double moved_fit[4];    /* windows while the device limits: running means of x, their
                               bytes moved per logical byte, y, the caller's work per logical
                               byte, x * x, x * y (fit_moved in auto.c) */
    uint32_t moved_windows; /* windows in those means */
    double moved_avg;       /* their slopes averaged as fitted, unclamped (fit_moved) */
    int moved_fitted;       /* moved_avg holds this space's fits (else: start from
                               dev.moved_ns, another space's) */
    bf_auto_window win;
    bf_auto_run run[2];            /* runs of waits timing the device: [0] writes, [1] reads */
    double run_fit[4];             /* this space's writes' runs: running means of x, their
                                      requests per byte, y, their ns per byte, x * x, x * y
                                      (fit_run in auto.c) */
    uint32_t run_fits;             /* runs in those means */
    double request_fit;            /* dev.request_ns as fitted, unclamped: noise below 0
                                      averages out instead of being cut (fit_run) */
    int request_fitted;            /* request_fit holds this space's fits (else: start from
                                      dev.request_ns, another space's) */
    uint32_t untimed;              /* transfers left to the next sampled one (0: not drawn) */
    uint32_t rng;                  /* xorshift32 state drawing those gaps (never 0) */
    int best;                      /* the space's choice for a file now, after each window */
    int explore;                   /* the window being measured is written raw: whether the
                                      writes' runs time the device or a stall (device_w), or
                                      to split them per request and per byte (fit_run) */
    uint32_t split_windows;        /* raw windows explored for the split so far */
    int priced;                    /* bit d: direction d's device was priced (> 0) at the last
                                      window, bit 2: the writes' runs were split (fit_run);
                                      when that changes, its averages start again */
    uint8_t epoch;                 /* changes with best: every file decides again at once */
    uint64_t blocks;               /* blocks packed by auto files: the probe schedule */
    uint32_t probe_every;          /* probe one block in this many (backs off on flat data) */
    int waited;                    /* a transfer waited: before the device is known, the prior
                                      (a 200 MB/s disk) holds only from then on (bf_auto_cost) */
    uint64_t probed;               /* `blocks` at the last probe (0: none yet): a probe of the
                                      next block finds the codecs warm and runs each once */
    unsigned char *probe_out, *probe_back;
    size_t probe_cap;  /* bytes of each probe buffer */
    uint64_t probe_ns; /* time spent probing */
    uint64_t switches; /* decisions that changed a file's codec */
    int force;         /* tests: >= 0 makes every decision this candidate */
    char reason[640];  /* the last decision that changed something, and why */
    int reason_k;      /* the candidate `reason` is for (-1: none yet), and whether flat: */
    int reason_flat;   /* a file's first decision that agrees is not formatted again */
} bf_auto;

/* What a file using codec=auto keeps (6 bytes in struct bf_file). */
typedef struct bf_file_auto {
    uint8_t on : 1;    /* the file chooses its codec */
    uint8_t flat : 1;  /* its data stopped shrinking: none until a probe says otherwise */
    uint8_t first : 1; /* its next block is its first: decide before packing it */
    /* Not auto's: a bit of the file's own (file.c: sub_block_bound), kept in this byte's
       spare bits because struct bf_file is at its 256-byte bound (file.h). It is set for
       every codec, auto or not. */
    uint8_t rewrites : 1;
    /* Not auto's either: set (never with `on`) for a file whose blocks all go out bare
       (codec none, unsealed): file.c sums its buffered block as it fills (fill_fold), its
       running CRC kept in the bytes below, which auto uses only with `on`. */
    uint8_t fill : 1;
    union {
        struct {
            uint8_t cand;  /* index of its current candidate */
            uint8_t since; /* blocks packed since its last decision (up to BF_AUTO_EVERY) */
            uint8_t raw;   /* of those, stored raw */
            uint8_t epoch; /* the space's epoch at its last decision */
            uint8_t check; /* on none while nothing shrinks: decisions to its next check of its
                              own data (low 4 bits) and checks in a row that found it does not
                              shrink (high 4) */
        };
        struct {                 /* with `fill`: */
            uint8_t fill_crc[4]; /* bf_extent_bare_crc of the buffer's first fill_units units */
            uint8_t fill_units;  /* units of block_size / 256 bytes; 0: nothing summed */
        };
    };
} bf_file_auto;

/* Fill the candidates with the codecs built in; estimates start unknown. */
void bf_auto_init(bf_auto *a, int prefer_space, uint32_t slack_pct);

/* Offer a caller's codec `codec` (named `name`, the space's copy) at `level` as a candidate. */
void bf_auto_add_user(bf_auto *a, bf_codec codec, int32_t level, const char *name);

/*
 * Whether the next transfer, of `bytes`, is to be timed. Every one is while
 * the device may limit; while it does not (it has not waited in the last
 * BF_AUTO_CHAIN bytes and is not taken for limiting), one in
 * BF_AUTO_TIME_EVERY on average (the gaps are drawn at random), and the one
 * that completes a window. A device that turns slow is seen at the first
 * wait timed, and then all are again.
 */
int bf_auto_times_io(bf_auto *a, uint64_t bytes);

/* What the device clock (devclock.h) says of one transfer, as auto takes it. */
typedef struct bf_auto_wait {
    uint64_t wait_ns; /* its wall time less the run delay it had: decides whether it waited */
    uint64_t late_ns; /* its end came this long after the device let it go (its own run
                         delay, known exactly): runs are timed to end - late_ns */
    uint64_t cpu_ns;  /* the thread's run delay before or in it: over BF_AUTO_GAP since the
                         run's last wait, it ends the run */
    int paused;       /* the thread waited over BF_AUTO_GAP for a CPU before or in it: ends a
                         run of waits */
    int unsure;       /* it had run delay, but whether in it or before is not known: no run
                         starts at its end */
} bf_auto_wait;

/*
 * Account one transfer of `bytes` from `start` to `end` (ns on the space's
 * I/O clock): a read if `read`, else a write.
 */
void bf_auto_note_transfer(bf_auto *a, int read, uint64_t bytes, uint64_t start, uint64_t end,
                           const bf_auto_wait *w);

/* A write with no run delay: all of its wall time counts (tests' made-up devices). */
void bf_auto_note_io(bf_auto *a, uint64_t bytes, uint64_t start, uint64_t end);

/* The same for a read. */
void bf_auto_note_read_io(bf_auto *a, uint64_t bytes, uint64_t start, uint64_t end);

/* Account one transfer of `bytes` (a read if `read`) that bf_auto_times_io did not time. */
void bf_auto_note_untimed(bf_auto *a, int read, uint64_t bytes);

/* Account a block really written (`write`) or loaded: `raw_len` logical bytes, `codec_ns`. */
void bf_auto_note_block(bf_auto *a, int write, uint32_t raw_len, uint64_t codec_ns);

/*
 * Whether the space warms up: its first BF_AUTO_WARMUP blocks are each
 * probed and decided on, until a probe finds that nothing shrinks them.
 */
int bf_auto_warming(const bf_auto *a);

/* Whether the block about to be packed (the space's a->blocks-th) is probed. */
int bf_auto_probe_due(const bf_auto *a);

/* A probe found the block compressible (`shrinks`) or not: probes back off on flat data. */
void bf_auto_note_probe(bf_auto *a, int shrinks);

/* 1 when some compressing candidate measured makes blocks shrink by a tenth or more. */
int bf_auto_shrinks(const bf_auto *a);

/*
 * A file's own data shrinks where the estimates say nothing does: they are
 * of other data, and the next sample of each candidate replaces its ratio.
 */
void bf_auto_note_change(bf_auto *a);

/* Account candidate `k` packing `raw_len` bytes into `stored` (header included) in `ns`. */
void bf_auto_note_pack(bf_auto *a, int k, uint32_t raw_len, uint32_t stored, uint64_t ns);

/* Account decompressing `raw_len` bytes of `codec` in `ns` (every candidate of that codec). */
void bf_auto_note_unpack(bf_auto *a, bf_codec codec, uint32_t raw_len, uint64_t ns);

/*
 * Expected ns spilling adds per logical byte moved with candidate k (from
 * the windows; before the first, codec time plus a 200 MB/s device); a
 * negative value when it is not known yet.
 */
double bf_auto_cost(const bf_auto *a, int k);

/*
 * The candidate a file now on `cur` should use: `flat` files get none. A
 * different one only when it beats `cur` by more than BF_AUTO_MARGIN (for
 * prefer_space: is smaller by that much, within the slack of the fastest).
 * Writes a one-line reason into why[len] when it is not NULL.
 */
int bf_auto_choose(const bf_auto *a, int cur, int flat, char *why, size_t len);

/* Write into why[len] the reason for choosing `k` (flat: the file's data does not shrink). */
void bf_auto_explain(const bf_auto *a, int k, int flat, char *why, size_t len);

/*
 * 1 if every figure of `d` is one a space could have measured: device_ns
 * and pace_ns in [0, 2^64] ns per byte, transfer_ns in [0, BF_AUTO_WAIT_NS +
 * BF_AUTO_WAIT_NS_B], limited_share in [0, 1] (NaN never).
 */
int bf_auto_device_valid(const bf_auto_device *d);

/* The candidate new files start with: the space's current best (lz4 before any estimate). */
int bf_auto_start(const bf_auto *a);

#endif

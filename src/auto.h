/*
 * auto.h - codec=auto: the space measures what spilling costs and each
 * file picks the codec that makes it cheapest.
 *
 * Cost model, per logical byte of a block that is written once and read
 * once (a hash-join batch, a sort run): compress + decompress time of the
 * candidate, plus its ratio times the I/O time of a physical byte, twice
 * (out and back in). I/O time is measured by the space around its own
 * transfers (so a throttled or slow device shows up as it is); codec time
 * and ratio come from every block a file packs with its current candidate
 * and from probes: now and then a block being written is also compressed
 * with the other candidates into a side buffer (and decompressed again),
 * which costs time that is counted and reported (probe_ns).
 *
 * Estimates are exponentially weighted (recent data counts more; a time
 * sample far above its estimate is capped, since timing noise only ever
 * adds time), decided
 * per file at its first block and every BF_AUTO_EVERY blocks after, with
 * hysteresis: a file changes codec only when another is better by more
 * than BF_AUTO_MARGIN, so noise does not make it flap. A file whose blocks
 * stop shrinking under a compressing codec is "flat" and goes to none until
 * a probe of its own data shows it compresses again.
 *
 * Everything that decides is a pure function of the estimates
 * (bf_auto_choose), so tests drive it with made-up devices and codecs.
 */
#ifndef BF_AUTO_H
#define BF_AUTO_H

#include <stddef.h>
#include <stdint.h>

#include "buffile.h"

#define BF_AUTO_MAX 4                 /* candidates: none, lz4, zstd:1, zstd:3 (those built) */
#define BF_AUTO_WARMUP 8              /* the space's first blocks are probed with every candidate */
#define BF_AUTO_PROBE_EVERY 256       /* then one block in this many */
#define BF_AUTO_EVERY 16              /* a file decides again after this many blocks */
#define BF_AUTO_MARGIN 0.05           /* a change must win by more than this share */
#define BF_AUTO_IO_WINDOW (1u << 20)  /* bytes of I/O per measurement of its cost */
#define BF_AUTO_IO_FIRST (256u << 10) /* the first measurement's: the prior decides less */

typedef struct bf_auto_cand {
    bf_codec codec;
    int32_t level;
    double comp_ns;   /* per logical byte */
    double decomp_ns; /* per logical byte */
    double ratio;     /* stored bytes (header included) per logical byte */
    uint32_t samples;
    uint32_t decomp_samples;
} bf_auto_cand;

typedef struct bf_auto {
    bf_auto_cand cand[BF_AUTO_MAX];
    int ncand;
    int prefer_space; /* choose the smallest output within slack of the fastest */
    double slack;     /* for prefer_space, e.g. 0.20 */
    double io_ns;     /* per physical byte moved (io_windows == 0: not measured yet) */
    uint32_t io_windows;
    uint64_t win_bytes, win_ns;
    uint64_t blocks; /* blocks packed by auto files: the probe schedule */
    unsigned char *probe_out, *probe_back;
    size_t probe_cap;  /* bytes of each probe buffer */
    uint64_t probe_ns; /* time spent probing */
    uint64_t switches; /* decisions that changed a file's codec */
    int force;         /* tests: >= 0 makes every decision this candidate */
    char reason[256];  /* the last decision that changed something, and why */
} bf_auto;

/* What a file using codec=auto keeps (8 bytes in struct bf_file). */
typedef struct bf_file_auto {
    uint8_t on;     /* the file chooses its codec */
    uint8_t cand;   /* index of its current candidate */
    uint8_t flat;   /* its data stopped shrinking: none until a probe says otherwise */
    uint8_t probe;  /* probe this file's next block (its first, or a flat file's check) */
    uint16_t since; /* blocks packed since its last decision */
    uint16_t raw;   /* of those, stored raw */
} bf_file_auto;

/* Fill the candidates with the codecs built in; estimates start unknown. */
void bf_auto_init(bf_auto *a, int prefer_space, uint32_t slack_pct);

/* Account one transfer of `bytes` that took `ns`. */
void bf_auto_note_io(bf_auto *a, uint64_t bytes, uint64_t ns);

/* Account candidate `k` packing `raw_len` bytes into `stored` (header included) in `ns`. */
void bf_auto_note_pack(bf_auto *a, int k, uint32_t raw_len, uint32_t stored, uint64_t ns);

/* Account decompressing `raw_len` bytes of `codec` in `ns` (every candidate of that codec). */
void bf_auto_note_unpack(bf_auto *a, bf_codec codec, uint32_t raw_len, uint64_t ns);

/* Expected ns per logical byte of candidate k; a negative value when it is not known yet. */
double bf_auto_cost(const bf_auto *a, int k);

/*
 * The candidate a file now on `cur` should use: `flat` files get none. A
 * different one only when it beats `cur` by more than BF_AUTO_MARGIN (for
 * prefer_space: is smaller by that much, within the slack of the fastest).
 * Writes a one-line reason into why[len] when it is not NULL.
 */
int bf_auto_choose(const bf_auto *a, int cur, int flat, char *why, size_t len);

/* The candidate new files start with: the space's current best (lz4 before any estimate). */
int bf_auto_start(const bf_auto *a);

#endif

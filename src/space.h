/*
 * space.h - the space's internal state, shared by the modules of src/.
 *
 * Invariants: `c` is the sum over all files ever opened in the space of
 * their counters, except the peaks, which are the space's own (peaks of
 * logical_now and physical_now, the sums over the open files the space
 * writes: read-only handles on other spaces' files are not counted). `codec_ctx[c]` is NULL until
 * codec c is first used. `scratch` holds at least BF_EXTENT_HDR + the largest block size of any
 * file created in the space.
 *
 * Threads: a space has one caller thread. With workers (bf_space_set_workers)
 * the compress-and-checksum step of full blocks runs on other threads, but
 * on the slots of `workers` only (workers.h): every field here, the files,
 * their maps, free lists and segments are touched by the caller's thread
 * alone, which commits what the workers packed (file.c's jobs_*).
 */
#ifndef BF_SPACE_H
#define BF_SPACE_H

#include <stdint.h>

#include "auto.h"
#include "buffile.h"
#include "clock.h"
#include "codec.h"
#include "devclock.h"
#include "error.h"
#include "io_stack.h"
#include "workers.h"

struct bf_file;
struct bf_segcache;

/* Sequential passes a space tracks at once (bf_space.streams): SQLite's sorter merges up to
   16 runs at a time (SORTER_MAX_MERGE_COUNT). */
#define BF_STREAMS 16

/* Counters kept per file and summed per space (the per-file struct stays small). */
typedef struct bf_counters {
    uint64_t logical_peak; /* may lag the logical figure, while it only grew: the peak is the
                              larger of the two (file.c: logical_append; bf_stats_fill) */
    uint64_t physical_peak;
    uint64_t logical_written;
    uint64_t logical_read;
    uint64_t physical_written;
    uint64_t physical_read;
    uint64_t blocks_compressed;
    uint64_t blocks_raw;
    uint64_t blocks_read;
    uint64_t compress_ns;
    uint64_t decompress_ns;
} bf_counters;

struct bf_space {
    char *dir;
    uint32_t block_size;
    bf_codec codec;
    int32_t level;
    uint64_t temp_limit;
    uint64_t segment_size;
    /* log2 of segment_size when it is a power of two (the default), else 0: an offset's
       segment and its offset in it are a shift and a mask, not a 64-bit division, on the
       paths every block takes (bf_space_segno) */
    uint32_t segment_shift;
    bf_allocator alloc;
    bf_iostack ios; /* the I/O stack (io_stack.c) */
    void *codec_ctx[4];
    /* the caller's codecs: copies of the structs and names, and their tables */
    bf_user_codec *user;
    char (*user_name)[16];
    bf_codec_ops *user_ops;
    uint32_t nuser;
    struct bf_seal *seal;      /* a key was given or encrypt set: seals the extents of files
                                  created sealed, opens those of sealed files; else NULL */
    int seal_default;          /* encrypt: files are sealed unless their options say not */
    unsigned char anon_id[12]; /* with seal: the identity of this space's anonymous files
                                  (a nonce drawn at creation), with the file's id after it */
    unsigned char *unsealed;   /* with seal: a sealed payload opened before decompression */
    size_t unsealed_size;
    unsigned char *scratch;
    size_t scratch_size;
    bf_counters c;
    uint64_t logical_now, physical_now, live_now; /* sums over counted open files */
    uint64_t index_now;                           /* of physical_now: named files' heads and
                                                     indexes */
    uint64_t files_created, files_open;
    uint32_t next_file_id;
    struct bf_file *files; /* open files, doubly linked */
    struct bf_segcache *segs; /* descriptor cache and read-ahead buffer (segment.c's) */
    /* The stream's (file.c): the sequential passes that loads through the stream API make,
       most recent first, so that a file read at several places in turn (SQLite's sorter
       merges up to 16 runs of one file, a page of each at a time) is seen as several passes
       (issue 49: one entry saw 14 of 66,903 loads of a CREATE INDEX as sequential, 16
       entries 64,061). An entry that no load continues falls off the end. 384 bytes. */
    struct bf_stream {
        const void *file;
        uint32_t next;  /* the block that continues the pass (block numbers fit 32 bits) */
        uint32_t run;   /* blocks the pass loaded in a row, no other load between them */
        uint32_t ahead; /* the last block ra_ahead tried to hand to the workers for it */
    } streams[BF_STREAMS];
    int seq_front;     /* the last stream load continued the most recent pass (extent_fetch's
                          read-ahead buffer serves that one only) */
    int seq_any;       /* ... continued one of the passes (the workers unpack ahead for it) */
    uint32_t ra_late;  /* blocks unpacked ahead that a read found not yet done, decaying
                          (file.c's ra_cheap: whether cheap codecs are handed over) */
    bf_auto *autoc;    /* codec=auto's measurements, from the first file that uses it */
    int auto_prefer;
    uint32_t auto_slack_pct;
    bf_auto_device auto_seed; /* what auto starts from (zero: nothing) */
    bf_devclock devclk;       /* auto's transfers' run delay (devclock.c; opened at the first
                                 timed one, closed with the space) */
    uint64_t blocks_by_codec[4];
    uint64_t blocks_user;            /* extents written with the caller's codecs */
    uint64_t blocks_sealed;          /* extents written sealed */
    bf_workers *workers;             /* NULL: blocks are packed on the caller's thread */
    /* With workers: the slots files own, holding blocks to store [0] and blocks unpacked
       ahead [1] (file.c's job_own, job_free); file.c's scans of the slots for a file's
       jobs of a kind skip when there are none (in bf_space, not bf_file: the file's struct
       stays under 256 bytes). */
    uint32_t njobs[2];
    /* Past the end of some anonymous file's segments, or in their clean free chunks, bytes
       may no longer read as zeros: a cut that gave back the bytes a failed write left past a
       file's physical end failed too, or a load found a block damaged (bytes changed under
       the library). file.c's holes_read_zero then stops relying on holes for every file of
       the space (in bf_space for bf_file's size; both are rare). */
    int holes_untrusted;
    uint64_t ra_hits, ra_misses;     /* blocks unpacked ahead on workers: taken by a read,
                                        thrown away (file.c) */
    bf_errstate err; /* the last failure (error.c) */
    /* the shared temp budget (budget.c's): the space's bytes in it, which a reservation may
       put ahead of physical_now while a write is under way */
    bf_budget *budget;
    uint64_t budget_held;
    /* cursors (cursor.c's): those open on the space's files, doubly linked, and the epoch
       that moves when a file's 16-bit write generation wraps (file.h: bf_file_modified) */
    struct bf_cursor *cursors;
    uint64_t wgen_epoch;
};

/* Record a failure in `space` (may be NULL: then nowhere) and return `status` (error.h). */
#define bf_fail(space, ...) bf_err_set(bf_space_err(space), __VA_ARGS__)
static inline bf_errstate *bf_space_err(struct bf_space *space)
{
    return space != NULL ? &space->err : NULL;
}

/* The segment `off` (a file's physical offset) is in, and its offset in that segment. */
static inline uint64_t bf_space_segno(const struct bf_space *space, uint64_t off)
{
    return space->segment_shift != 0 ? off >> space->segment_shift : off / space->segment_size;
}

static inline uint64_t bf_space_segoff(const struct bf_space *space, uint64_t off)
{
    return space->segment_shift != 0 ? off & (space->segment_size - 1) : off % space->segment_size;
}

/* The clock codec=auto times transfers with (codec time is always the monotonic clock). */
static inline uint64_t bf_space_io_now(const struct bf_space *space)
{
    return bf_iostack_now(&space->ios);
}

/*
 * Replace the clock of transfers (tests: a fake device keeps its own time).
 * Its transfers then have no run delay (the device clock is off) until
 * bf_space_set_schedstat gives them one.
 */
void bf_space_set_io_clock(struct bf_space *space, uint64_t (*clock)(void *ctx), void *ctx);

/*
 * Tests: read the thread's run delay from `path` (a file the test writes as
 * the kernel's schedstat, "cpu_ns run_delay_ns slices"; kept, not copied)
 * instead of /proc/thread-self/schedstat. A path that cannot be opened is
 * what a machine without schedstat gives: the wall clock alone.
 */
void bf_space_set_schedstat(struct bf_space *space, const char *path);

/* codec=auto's state, made on first use; BF_ENOMEM when it cannot be. */
int bf_space_auto(struct bf_space *space, bf_auto **out);

/* Fill the bf_stats fields that files and spaces share, from counters and current sizes. */
void bf_stats_fill(bf_stats *out, const bf_counters *c, uint64_t logical, uint64_t physical,
                   uint64_t dead);

/*
 * Make a buffer of the space's (*buf, of *size bytes) hold `need` bytes;
 * BF_ENOMEM, the message naming `op` and `what`, when it cannot (the
 * buffer stays as it was).
 */
int bf_space_grow(struct bf_space *space, unsigned char **buf, size_t *size, size_t need,
                  const char *op, const char *what);

/* Make sure the scratch buffer holds at least `size` bytes. */
int bf_space_reserve_scratch(struct bf_space *space, size_t size);

/* The space's context for codec `codec` (one it has), created on first use. */
int bf_space_codec_ctx(struct bf_space *space, bf_codec codec, void **ctx);

/* The table of codec `codec` in this space: built in, or the caller's; NULL if it has none. */
const bf_codec_ops *bf_space_codec_ops(const struct bf_space *space, bf_codec codec);

/*
 * Bytes an extent of a `block_size`-byte block may need in the scratch
 * buffer: the header, the largest room a codec of the space asks for (a
 * caller's may ask more than the block), and the seal.
 */
size_t bf_space_extent_room(const struct bf_space *space, uint32_t block_size);

/* Tell the caller's blocks hook, if any, of `n` logical blocks loaded or stored. */
static inline void bf_space_note_blocks(const struct bf_space *space, bf_io_op op, uint64_t n)
{
    bf_iostack_blocks(&space->ios, op, n);
}

/*
 * Free the space and its directory (any part may be missing: a creation
 * that failed half way); its files and segment cache are gone already
 * (api.c's bf_space_destroy).
 */
void bf_space_free(struct bf_space *space);

/* Copy the caller's codecs and their names into the space, with a table for each: BF_ENOMEM. */
int bf_space_set_user_codecs(struct bf_space *space, const bf_user_codec *u, uint32_t n);

/* The space's statistics but for its open files' memory, which api.c adds. */
void bf_space_stats_own(const struct bf_space *space, bf_stats *st);

/* Replace the I/O table (tests: fault injection). Only while no file is open. */
void bf_space_set_io(struct bf_space *space, const bf_io *io);

#endif

/*
 * support.h - shared helpers of the library's tests: a seeded random
 * generator, spill-like data, a counting allocator and a fault-injecting
 * I/O table.
 */
#ifndef BF_TEST_SUPPORT_H
#define BF_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "blockmap.h"
#include "buffile.h"
#include "io.h"

/* splitmix64: small, fast, good enough for test sequences. */
typedef struct t_rng {
    uint64_t s;
} t_rng;

uint64_t t_next(t_rng *r);
/* Uniform in [0, n). */
uint64_t t_below(t_rng *r, uint64_t n);

typedef enum t_data { T_DATA_RANDOM, T_DATA_TEXT, T_DATA_MIXED } t_data;
extern const char *const t_data_names[3];

/* Fill buf with data of the given kind (text: TPC-H-like rows; mixed: both, in runs). */
void t_fill(t_rng *r, t_data kind, unsigned char *buf, size_t len);

/*
 * A counting allocator; fail_at > 0 makes the fail_at-th allocation (from now) return NULL.
 * With `poison` set, freed memory (and the old block of a realloc, which then always moves)
 * is overwritten first, so a use after free misbehaves at once even without ASan.
 */
typedef struct t_counting {
    bf_allocator hooks;
    int64_t live_bytes;
    int64_t peak_bytes;
    uint64_t calls;
    uint64_t fail_at;
    int poison;
    /* When not 0: a request of more bytes fails (NULL), counted in `too_large`, the
       largest in `largest_refused`: a length read from disk that reached the allocator
       before it was bounded by the file's real size. */
    uint64_t max_request;
    uint64_t too_large;
    uint64_t largest_refused;
} t_counting;

void t_counting_init(t_counting *c);

/*
 * A fault-injecting I/O table around the POSIX one. When `fail_write_at`
 * is N > 0, the N-th pwritev from now fails: with `fail_errno` (ENOSPC,
 * EIO), or, when `short_write` is set, by writing half the bytes first
 * (the retry then fails with fail_errno). Likewise `fail_read_at` for
 * pread, and `fail_meta_at` for the calls that change or reach files
 * rather than bytes: open, ftruncate and unlink (counted in `metas`;
 * when `meta_mask` is not 0, only the kinds it names, T_META_*, are counted
 * and can fail). When `kill_at` is N > 0, the process SIGKILLs itself just
 * before its N-th pwritev or metadata call (counted in `calls`): a crash at
 * a chosen point.
 */
enum { T_META_OPEN = 1, T_META_FTRUNCATE = 2, T_META_UNLINK = 4 };

typedef struct t_faults {
    uint64_t writes, reads, metas;
    uint64_t fail_write_at, fail_read_at, fail_meta_at;
    int fail_errno;
    int short_write;
    int short_armed;
    unsigned meta_mask;
    uint64_t calls, kill_at;
    const char *fired; /* the metadata call an armed fault failed ("unlink", ...), or NULL */
} t_faults;

bf_io t_fault_io(t_faults *f);

/*
 * A device that takes `ns_per_byte` per byte moved, on its own clock `now`
 * (t_device_clock, for bf_space_set_io_clock): the POSIX table, with
 * `moved` (NULL: none) called after each transfer of `bytes` > 0 so that a
 * test can add to the clock (a preemption, a pause).
 */
typedef struct t_device {
    uint64_t now;
    double ns_per_byte;
    void (*moved)(struct t_device *d, ssize_t bytes);
} t_device;

bf_io t_device_io(t_device *d);

/*
 * The in-memory reference of a file for the model tests: `size` bytes at
 * `d` (zeros past what was written: holes), room for `cap`, a position for
 * the test's own use. All zero is empty; free `d` when done.
 */
typedef struct t_model {
    unsigned char *d;
    uint64_t size, cap, pos;
} t_model;

/* Room for `size` bytes (what lies past the size is zero). */
void t_model_reserve(t_model *m, uint64_t size);
/* Truncate or extend to `size` (bytes past the old size read as zeros). */
void t_model_resize(t_model *m, uint64_t size);
/* `len` bytes at `pos`, extending the size as a write does. */
void t_model_write(t_model *m, uint64_t pos, const unsigned char *src, size_t len);
uint64_t t_device_clock(void *ctx);

/* A fresh parent directory for spaces, under the build tree (removed by the caller). */
void t_temp_parent(char *buf, size_t len, const char *tag);

/* Number of entries (other than . and ..) in a directory, -1 if it does not exist. */
int t_dir_entries(const char *path);

/* Write `len` bytes to `path` (created 0600, truncated). 0 on success, -1 on failure. */
int t_write_file(const char *path, const void *data, size_t len);

/* Read a whole file into a malloc'ed buffer (the caller frees it); NULL if it cannot be read. */
unsigned char *t_read_file(const char *path, size_t *len);

/*
 * A named file's physical bytes, as the library lays them out: `prefix` is
 * "<set>/<name>", the bytes are its segments "<prefix>.<n>" of
 * `segment_size` bytes (BF_SEGMENT_SIZE_DEFAULT unless the space set
 * another). t_phys_read and t_phys_write move `len` bytes at physical offset
 * `off` across segment boundaries, creating segments a write reaches (0
 * on success, -1 on failure, short reads included).
 */
int t_phys_read(const char *prefix, uint64_t segment_size, uint64_t off, void *buf, size_t len);
int t_phys_write(const char *prefix, uint64_t segment_size, uint64_t off, const void *buf,
                 size_t len);

/*
 * The index the head of named file `prefix` names (its newest valid slot):
 * a malloc'ed copy, its length in *len and its physical offset in *off;
 * NULL when the head names none or the bytes cannot be read.
 */
unsigned char *t_index_read(const char *prefix, uint64_t segment_size, size_t *len, uint64_t *off);

/*
 * A caller's codec for tests (bf_user_codec), id T_RLE_ID, named "rle":
 * runs of equal bytes as (count, byte) pairs. It asks for 2 * len + 2
 * bytes of room, more than the block, as PostgreSQL's pglz asks for a
 * little more. `faults` (may be NULL) makes it misbehave as a caller's
 * codec could: fail, claim more bytes than its room, or decompress to a
 * shorter length; it counts its calls.
 */
#define T_RLE_ID 70
typedef struct t_rle_faults {
    int fail_compress;    /* compress returns -1 */
    int over_cap;         /* compress returns its room + 1 */
    int short_decompress; /* decompress returns one byte less than asked */
    uint64_t compresses, decompresses;
} t_rle_faults;
bf_user_codec t_rle_codec(t_rle_faults *faults, int auto_candidate);

/* Remove a directory tree made by a test (regular files and empty dirs only). */
void t_rm_rf(const char *path);

/*
 * Workers from the environment: BF_TEST_WORKERS=n gives spaces n workers
 * (bf_space_set_workers), BF_TEST_RUNNER=thread|inline through a task
 * runner (a thread per task, or the task at once) instead of the space's
 * threads. t_space_opts applies them; tests that create spaces themselves
 * call t_workers_apply.
 */
int t_workers_env(void);
void t_workers_apply(bf_space *sp);
void t_runner_thread(void *ctx, void (*task)(void *), void *arg);
void t_runner_inline(void *ctx, void (*task)(void *), void *arg);

/* Create a space from options; fails the test (with the library's message) on error. */
bf_space *t_space_opts(const bf_space_options *o);

/*
 * The per-program parent directory of the test's spaces: defines `parent`,
 * `set` (the path "<parent>/set" for a file set; not created) and cmocka
 * group setup/teardown that create the parent fresh and remove it.
 */
#define T_PARENT_FIXTURE(tag)                                                                      \
    static char parent[512], set[600] __attribute__((unused));                                     \
    static int setup(void **state)                                                                 \
    {                                                                                              \
        (void)state;                                                                               \
        t_temp_parent(parent, sizeof(parent), tag);                                                \
        snprintf(set, sizeof(set), "%s/set", parent);                                              \
        return 0;                                                                                  \
    }                                                                                              \
    static int teardown(void **state)                                                              \
    {                                                                                              \
        (void)state;                                                                               \
        t_rm_rf(parent);                                                                           \
        return 0;                                                                                  \
    }

/* Create a space in parent with the codec/block size; asserts success. */
bf_space *t_space(const char *parent, bf_codec codec, uint32_t block_size,
                  const bf_allocator *alloc);

/*
 * The expected contents of a file under failures: the bytes plus, per
 * byte, whether it is known. A write that failed makes its range unknown
 * (the API allows it to be partly in the file); everything else written
 * or zeroed is known and must read back exactly.
 */
typedef struct t_image {
    unsigned char *d, *known;
    uint64_t size, cap;
} t_image;

/* Record an acknowledged write (grows the image like the file). */
void t_image_write(t_image *m, uint64_t pos, const void *src, size_t len);
/* Forget [pos, pos + len) below the image's size: a failed write may or may not be there. */
void t_image_forget(t_image *m, uint64_t pos, size_t len);
/* Set the size: shrinking drops bytes, growing adds known zeros (a hole). */
void t_image_resize(t_image *m, uint64_t size);
void t_image_free(t_image *m);
/* Read the whole file and fail the test unless its size and every known byte match. */
void t_image_check(bf_file *f, const t_image *m, const char *what);

/* Blocks of a block map that hold an extent. */
uint64_t t_map_used(const bf_blockmap *m);

/*
 * The most heap the block map of a file may hold by include/buffile.h, for
 * `used` blocks holding data out of the `nblocks` it covers.
 */
uint64_t t_map_bound(uint64_t used, uint64_t nblocks);

/* 1 if include/buffile.h says a space could have measured `d` (bf_space_create takes it). */
int t_device_measurable(const bf_auto_device *d);

#endif

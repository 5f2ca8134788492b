/*
 * segment.h - the physical bytes of one file: a row of segment files.
 *
 * A file's physical address space is split into segments of
 * space->segment_size bytes, stored as "<prefix>.<segno>", where the prefix
 * is "<space dir>/<id>" for an anonymous temp file and "<set dir>/<name>"
 * for a named file of a file set. Segments are
 * created in order on first write; an extent never straddles two
 * segments (the allocator above guarantees it). At most one descriptor per
 * file is open, and the space caps descriptors over all files (LRU), so
 * 100,000 open files do not need 100,000 descriptors.
 */
#ifndef BF_SEGMENT_H
#define BF_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "buffile.h"

struct bf_space;

/* Bytes read ahead at most in one pread when a file is read sequentially. */
#define BF_READAHEAD (256u * 1024u)

/* Descriptors pinned for reads on the space's workers at once, at most (bf_seg_pin). */
#define BF_SEG_PINS 16

/*
 * The space's part that segment.c owns: its descriptor cache (segments with
 * an open descriptor, most recently used first) and the read-ahead buffer
 * (consecutive extents of one segment row read with one pread).
 */
typedef struct bf_segcache {
    struct bf_seg *lru_head, *lru_tail;
    uint32_t fds_open, fds_max;
    unsigned char *ra;
    const struct bf_seg *ra_seg; /* whose bytes ra holds; NULL: none */
    uint64_t ra_off;             /* physical offset of ra[0] */
    size_t ra_len;
    /* Descriptors with reads handed to the space's workers and not yet finished (file.c's
       read-ahead gives a worker a descriptor and an offset; readahead.c reads there): an
       entry is free when its count is 0. Only the caller's thread takes an entry or raises
       its count; the worker that finishes a read lowers it. Here, not in bf_seg: a file's
       struct stays within its 256 bytes. */
    struct bf_seg_pin {
        int fd;
        _Atomic uint32_t n;
    } pins[BF_SEG_PINS];
} bf_segcache;

typedef struct bf_seg {
    struct bf_space *space;
    const char *prefix; /* NULL: "<space dir>/<id>"; else owned by the caller */
    struct bf_seg *lru_prev, *lru_next;
    uint32_t id;    /* anonymous file id within the space */
    int fd;         /* -1 when closed */
    uint32_t segno; /* segment `fd` refers to */
    uint32_t nsegs; /* segments 0..nsegs-1 exist on disk */
} bf_seg;

/* An anonymous segment row named by `id`, or a named one when prefix != NULL. */
void bf_seg_init(bf_seg *seg, struct bf_space *space, uint32_t id, const char *prefix);

/* Format the path of segment `segno` into buf. */
void bf_seg_path(const bf_seg *seg, uint32_t segno, char *buf, size_t len);

/* Most iovecs one bf_seg_write takes (a batch of 32 raw extents needs 64). */
#define BF_SEG_IOV_MAX 64

/* Write all bytes of `iov` at physical offset `off` (within one segment: else BF_EINVAL). */
int bf_seg_write(bf_seg *seg, uint64_t off, const struct iovec *iov, int iovcnt, size_t total);

/* Read exactly `len` bytes at physical offset `off`; a short read is BF_ECORRUPT. */
int bf_seg_read(bf_seg *seg, uint64_t off, void *buf, size_t len);

/*
 * Pin seg's open descriptor (seg->fd >= 0) for one read a worker makes on
 * it: the count the worker lowers once that read is done, or NULL when
 * every entry is held by other descriptors. While pinned, the descriptor is
 * neither closed nor moved to another row (bf_seg_close and bf_seg_move
 * wait for the count to fall to 0).
 */
_Atomic uint32_t *bf_seg_pin(bf_seg *seg);

/*
 * Make the physical bytes end at `end`: later segments removed (from the
 * last; nsegs stops at the first that cannot be), the last one cut or
 * extended. A named row keeps segment 0, which holds its name.
 */
int bf_seg_resize(bf_seg *seg, uint64_t end);

/*
 * Read up to `len` bytes at the start of segment 0 of a named row opened
 * by name (its segment count not known yet): *got is how many it holds,
 * fewer at its end. Afterwards the row counts segment 0, with its
 * descriptor open for the reads that follow. BF_ENOENT when segment 0 does
 * not exist.
 */
int bf_seg_read_head(bf_seg *seg, void *buf, size_t len, size_t *got);

/* Hand `from`'s segment count and open descriptor to `to` (same space); `from` ends closed. */
void bf_seg_move(bf_seg *to, bf_seg *from);

/* Create segment 0 now (O_EXCL), so a name is taken at once; BF_EEXIST if it exists. */
int bf_seg_reserve(bf_seg *seg);

/*
 * Close the descriptor and delete every segment file, segment 0 of a named
 * row too, from the last down. Returns the first failure (the files that
 * stay are the caller's to report). An anonymous row tries them all (its
 * space directory takes the rest); a named row stops at the first that
 * cannot be removed, so that segments 0..nsegs-1 stay and nsegs says so.
 */
int bf_seg_remove(bf_seg *seg);

/* Close the descriptor, if open (keeps the files). */
void bf_seg_close(bf_seg *seg);

/* The bytes [off, off + len) of `seg` if the read-ahead buffer holds them, else NULL. */
const unsigned char *bf_seg_cached(const bf_seg *seg, uint64_t off, size_t len);

/*
 * Read [off, end) of `seg` (within one segment, end - off <= BF_READAHEAD)
 * into the read-ahead buffer: BF_OK and *out, or a status with nothing
 * kept (the caller reads less instead).
 */
int bf_seg_read_ahead(bf_seg *seg, uint64_t off, uint64_t end, const unsigned char **out);

/* Forget what the read-ahead buffer holds (it serves one sequential pass). */
void bf_seg_forget_ahead(struct bf_space *space);

/* A space's segment cache, keeping at most `fds_max` descriptors open (NULL: out of memory). */
bf_segcache *bf_segcache_new(const bf_allocator *a, uint32_t fds_max);

/* Memory the cache holds (itself and its read-ahead buffer), and its freeing (NULL: nothing). */
size_t bf_segcache_memory(const bf_segcache *c);
void bf_segcache_free(const bf_allocator *a, bf_segcache *c);

/*
 * Open `path` as one of the space's descriptors (open(2)'s flags, mode,
 * result and errno): the caller's fd_acquire hook is asked first, and while
 * it refuses the least recently used segment descriptor is closed; a
 * failed open is released again, so every acquire meets one release.
 */
int bf_fd_open(struct bf_space *space, const char *path, int flags, mode_t mode);

/* Close a descriptor bf_fd_open gave (the caller's fd_release hook is told). */
void bf_fd_close(struct bf_space *space, int fd);

#endif

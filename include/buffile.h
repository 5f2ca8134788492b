/*
 * buffile.h - compressed temporary files for query executors.
 *
 * A *space* owns a private temp directory, the codec contexts, one scratch
 * buffer, the temp limit and the statistics. A *file* is a logical byte
 * stream stored as fixed-size logical blocks, each compressed on its own
 * and written as an *extent* (header + payload) into the file's segment
 * files. A block map from logical block number to physical extent makes
 * seek, tell, size, truncate and in-place rewrite exact on compressed data.
 *
 * An example comes first, then the floor plan: the sections in order, each
 * opening with a banner that says what it holds and which src/ files
 * implement it.
 */

/*
 * Example: spill a few bytes to a temporary file and read them back,
 * checking every status (tests/abi/example.sh compiles and runs it).
 * Build it with `cc app.c $(pkg-config --cflags --libs buffile)`.
 *
 *     #include <buffile.h>
 *     #include <stdio.h>
 *
 *     int main(void)
 *     {
 *         char err[256], buf[5];
 *         bf_space *sp;
 *         bf_file *f;
 *         if (bf_space_create(NULL, &sp, err, sizeof err) != BF_OK) { // NULL: default options
 *             fprintf(stderr, "buffile: %s\n", err);
 *             return 1;
 *         }
 *         int64_t rc = bf_file_create(sp, NULL, &f); // a status, or the bytes read
 *         if (rc == BF_OK) {
 *             if ((rc = bf_file_write(f, "hello", 5)) == BF_OK &&
 *                 (rc = bf_file_seek(f, 0, BF_SEEK_SET)) == BF_OK &&
 *                 (rc = bf_file_read(f, buf, sizeof buf)) >= 0) // short only at the end
 *                 printf("read back: %.*s\n", (int)rc, buf);
 *             int closed = bf_file_close(f); // deletes the file; can fail (BF_EIO)
 *             if (rc >= 0)
 *                 rc = closed;
 *         }
 *         if (rc < 0)
 *             fprintf(stderr, "buffile: %s\n", bf_space_errmsg(sp));
 *         bf_space_destroy(sp); // removes the space's directory
 *         return rc < 0;
 *     }
 */

/*
 * Floor plan (each section starts with a banner "== <n>. <title> ==")
 *
 *   1. Basics           the version; status codes and bf_strerror; the space (the codec
 *                       ids, options, create, destroy, errmsg/errno, directory, temp limit);
 *                       the temp budget several spaces share (bf_budget); the stream file
 *                       (options, create, close, abort, write, read, seek, tell, size,
 *                       truncate, flush, accessors); cursors (bf_cursor) and choosing how
 *                       to read
 *   2. Block API        whole blocks: seek_block, read_block, write_block, discard_block,
 *                       release_buffer
 *   3. File sets        named files other spaces and processes open: set create/destroy,
 *                       create, export, open, delete, append
 *   4. Codecs           names, parse, available; the caller's own codecs (bf_user_codec);
 *                       a space's codec names
 *   5. Tuning and       statistics (bf_stats, written, memory); codec=auto (its device,
 *      observation      its reason); I/O hooks; the allocator; sweeping what crashed
 *                       processes left (bf_sweep, bf_sweep_list)
 *   6. ABI rules        what a program built against this header may rely on
 */

/* The guard is the library's own: PostgreSQL's storage/buffile.h takes BUFFILE_H. */
#ifndef BF_BUFFILE_H
#define BF_BUFFILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions the shared library exports (see 6. ABI rules). */
#if defined(BF_BUILDING_LIBRARY) && defined(__GNUC__)
#define BF_API __attribute__((visibility("default")))
#else
#define BF_API
#endif

/*
 * Structs that section 1 points to before the section that defines them
 * (bf_space_options holds pointers to them).
 */
typedef struct bf_user_codec bf_user_codec;   /* 4. Codecs */
typedef struct bf_auto_device bf_auto_device; /* 5. Tuning and observation: codec=auto */
typedef struct bf_io_hooks bf_io_hooks;       /* 5. Tuning and observation: I/O hooks */
typedef struct bf_allocator bf_allocator;     /* 5. Tuning and observation: allocator */
typedef struct bf_budget bf_budget;           /* 1. Basics: the shared temp budget */

/*
 * == 1. Basics ==================================================================================
 *
 * The version, the status codes, the space and the stream file: what a
 * program needs to spill bytes and read them back.
 *
 * Implemented in: src/abi.c (bf_version_number); src/error.c
 * (bf_strerror, the last-error message); src/space.c (the space's options,
 * errmsg/errno, directory and temp limit); src/sweep.c (where a space's
 * directory goes, its name, the default temp limit); src/api.c
 * (bf_space_create, bf_space_destroy, bf_file_close, bf_file_abort: the
 * calls that span the layers); src/budget.c (the shared temp budget);
 * src/file.c (the stream file); src/cursor.c (cursors). A named file's
 * close and abort are src/fileset.c's.
 */

/* ---- The version ---------------------------------------------------------------------------- */

/*
 * The version, in this one place: CMakeLists.txt reads it from here, and
 * debian/changelog and NEWS.md are checked against it (tests/abi/version.sh).
 */
#define BF_VERSION_MAJOR 1
#define BF_VERSION_MINOR 1
#define BF_VERSION_PATCH 0
#define BF_VERSION_NUMBER (BF_VERSION_MAJOR * 10000 + BF_VERSION_MINOR * 100 + BF_VERSION_PATCH)

/*
 * The running library's BF_VERSION_NUMBER, which may be newer than that of
 * the header a program was built with (same major version: see 6. ABI rules).
 */
BF_API unsigned bf_version_number(void);

/* ---- Status codes --------------------------------------------------------------------------- */

/*
 * Errors: every function that can fail returns a status: 0 (BF_OK) or a
 * negative bf_status. The library never aborts, exits or prints; a message
 * naming the path, operation and errno of the last failure is kept by the
 * space (bf_space_errmsg). After an error the file stays consistent: data
 * acknowledged before the failing call still reads back, and each function
 * below says what its failure leaves (position, size, data, statistics).
 */

/* Status codes. 0 is success; all errors are negative. */
typedef enum bf_status {
    BF_OK = 0,
    BF_EINVAL = -1,    /* bad argument (size, offset, option, handle state) */
    BF_ENOMEM = -2,    /* an allocation failed */
    BF_EIO = -3,       /* the operating system reported an I/O error */
    BF_ENOSPC = -4,    /* the file system is full (ENOSPC/EDQUOT) */
    BF_ELIMIT = -5,    /* the space's temp limit on physical bytes, or its budget's, was reached
                          (the message names which) */
    BF_ECORRUPT = -6,  /* an extent failed its checks: CRC, header, length, block number */
    BF_ENOCODEC = -7,  /* the codec asked for was not built into this library */
    BF_ECODEC = -8,    /* the codec itself failed */
    BF_EREADONLY = -9, /* write to a file opened read-only */
    BF_ENOENT = -10,   /* a named file does not exist */
    BF_EEXIST = -11,   /* a named file already exists */
    BF_EBUSY = -12,    /* a named file was consumed by bf_file_append: read-only from then on */
    BF_EKEY = -13,     /* an encrypted file was sealed with another key, or this space has none;
                          or a space with a key met a file no space with its key wrote */
} bf_status;

/* A short static description of a status code ("corrupt extent", ...). */
BF_API const char *bf_strerror(int status);

/* ---- The space ------------------------------------------------------------------------------ */

/*
 * Threads: a space and its files are not thread-safe; use one space per
 * thread (many spaces in many threads are fine).
 */
typedef struct bf_space bf_space;
typedef struct bf_file bf_file;

/*
 * Codecs. Every block is compressed independently. The enum is here, not in
 * section 4 with the codecs' functions, because the space's and the files'
 * options hold it.
 */
typedef enum bf_codec {
    BF_CODEC_DEFAULT = -1, /* in file options: use the space's default */
    BF_CODEC_NONE = 0,
    BF_CODEC_LZ4 = 1,  /* level = acceleration, 1 (default) .. 65537; higher is faster */
    BF_CODEC_ZSTD = 2, /* level -7 .. 22, default 1; negative levels are faster */
    BF_CODEC_ZLIB = 3, /* level 1 .. 9, default 6 */
    /*
     * A policy, not a format: each file picks, as it grows, the codec and
     * level (none, lz4, zstd 1 or 3) that makes spilling cheapest on the
     * space's device, from what the space measures of the device's time
     * per byte, of how much of it the caller's own work hides, and of
     * each codec's time and ratio on the data being spilled
     * (see bf_space_options.auto_prefer and bf_space_auto_reason). Extents
     * name their codec, so one file mixes codecs; a file whose data changes
     * character (turns compressible, or stops) is decided anew within 64
     * blocks. Level must be default.
     */
    BF_CODEC_AUTO = 4,
    /* Ids a caller's own codecs take (bf_user_codec): extents and indexes record them. */
    BF_CODEC_USER_MIN = 64,
    BF_CODEC_USER_MAX = 127,
} bf_codec;

/* Level value meaning "the codec's default level". */
#define BF_LEVEL_DEFAULT INT32_MIN

/* Block sizes: powers of two in [BF_BLOCK_SIZE_MIN, BF_BLOCK_SIZE_MAX]. */
#define BF_BLOCK_SIZE_MIN 4096u
#define BF_BLOCK_SIZE_MAX (1024u * 1024u)
#define BF_BLOCK_SIZE_DEFAULT 8192u
#define BF_SEGMENT_SIZE_DEFAULT (1024ull * 1024ull * 1024ull)

/*
 * Options for a space. Initialise with bf_space_options_init, which sets
 * struct_size and the defaults, then set the fields wanted: a struct not
 * initialised so (struct_size 0) gives BF_EINVAL.
 */
typedef struct bf_space_options {
    uint32_t struct_size;              /* sizeof(bf_space_options) of the caller's header */
    const char *temp_dir;              /* parent directory; NULL: $TMPDIR, else /tmp */
    uint32_t block_size;               /* default logical block size of files */
    bf_codec codec;                    /* default codec of files */
    int32_t level;                     /* default level, BF_LEVEL_DEFAULT for the codec's own */
    uint64_t temp_limit;               /* limit on physical bytes of all files; 0 = none;
                                          BF_TEMP_LIMIT_AUTO (the default): 90% of the bytes
                                          free on the temp directory's file system when the
                                          space is made (bf_space_temp_limit says how many) */
    uint64_t segment_size;             /* bytes per segment file; 0: 1 GiB; a multiple of 4096
                                          with room for two blocks and their headers (tests use
                                          small segments to cross them often) */
    uint32_t max_open_fds;             /* segment descriptors the space keeps open at most;
                                          0 = auto (codec=auto keeps one more, on its thread's
                                          /proc/thread-self/schedstat, asked of fd_acquire) */
    const bf_allocator *allocator;     /* NULL: malloc/realloc/free; copied */
    uint64_t io_limit;                 /* model a slower disk: temp I/O bytes per second, reads and
                                          writes together (token bucket); 0 = unthrottled */
    int auto_prefer;                   /* codec=auto: BF_AUTO_TIME (default) or BF_AUTO_SPACE */
    uint32_t auto_slack_pct;           /* BF_AUTO_SPACE: the smallest output among codecs at most
                                          this many percent slower than the fastest (default 20) */
    const bf_auto_device *auto_device; /* codec=auto: start from what an earlier space learned
                                          of this device (copied; figures no space could have
                                          measured give BF_EINVAL); NULL: from nothing */
    const bf_io_hooks *io_hooks;       /* called around every transfer and descriptor of the
                                          space (see bf_io_hooks; copied); NULL: none */
    const bf_user_codec *user_codecs;  /* the caller's codecs (copied), n_user_codecs of them */
    uint32_t n_user_codecs;            /* at most BF_USER_CODECS_MAX */
    int encrypt;                       /* nonzero: files are sealed (every extent encrypted
                                          with AES-256-GCM after compression) unless their
                                          options say otherwise (BF_ENOCODEC when the library
                                          was built without libcrypto) */
    const unsigned char *key;          /* the 32-byte key (copied; never written anywhere),
                                          which every space that opens another's sealed named
                                          files must share (a space with a key opens only named
                                          files written under it); given without encrypt, files are
                                          sealed only when their options ask (bf_file_options.
                                          seal). NULL with encrypt: a random key drawn for this
                                          space alone (its files are unreadable once it is
                                          gone, as after a crash); NULL without: no sealing */
    bf_budget *budget;                 /* a temp budget this space shares with others (see
                                          bf_budget_create; not copied: it must outlive the
                                          space); NULL: none */
} bf_space_options;

/* Bytes of an encryption key. */
#define BF_KEY_BYTES 32

/*
 * Fill `opts` with defaults: 8 KiB blocks, lz4, default level, the default
 * temp limit (BF_TEMP_LIMIT_AUTO), auto prefers time; struct_size =
 * sizeof(*opts). A macro, so that the size is the caller's header's:
 * bf_space_options_init_sized writes `size` bytes, no more.
 */
#define bf_space_options_init(opts) bf_space_options_init_sized((opts), sizeof(*(opts)))
BF_API void bf_space_options_init_sized(bf_space_options *opts, size_t size);

/*
 * Create a space: validates the options and creates a private directory
 * (mode 0700, unguessable name "buffile-<pid>-XXXXXX") under opts->temp_dir.
 * `opts` may be NULL (the defaults); it is read up to its struct_size only.
 * On success *out owns the space; destroy it with bf_space_destroy.
 * Errors: BF_EINVAL (bad option, struct_size not set by
 * bf_space_options_init, or a field this library does not know set to
 * non-zero; the message says which), BF_ENOCODEC,
 * BF_ENOMEM, BF_EIO/BF_ENOSPC (directory creation). On failure *out is
 * NULL and, when `errbuf` is not NULL, a message is written there.
 */
BF_API int bf_space_create(const bf_space_options *opts, bf_space **out, char *errbuf,
                           size_t errbuf_len);

/*
 * Destroy a space: closes (and deletes) every file still open, removes the
 * space directory and frees everything. NULL is a no-op.
 */
BF_API void bf_space_destroy(bf_space *space);

/* Message of the last failure in this space ("" if none). Owned by the space. */
BF_API const char *bf_space_errmsg(const bf_space *space);

/*
 * The errno of the last failure in this space, 0 when that failure had
 * none (BF_ECORRUPT, BF_ELIMIT, BF_ENOMEM, ...): what a caller that
 * reports errors by errno (PostgreSQL's errcode_for_file_access) needs.
 */
BF_API int bf_space_errno(const bf_space *space);

/* The space's private directory. Owned by the space. */
BF_API const char *bf_space_dir(const bf_space *space);

/*
 * The default temp limit: 90% of the bytes free on the file system of the
 * space's directory when the space is made (or when it is set again), so
 * that a spill fails with BF_ELIMIT, naming the limit, before it fills
 * the disk that other files and processes share (as DuckDB's default
 * max_temp_directory_size does). Where the free space cannot be read
 * (statvfs fails) there is no limit.
 */
#define BF_TEMP_LIMIT_AUTO UINT64_MAX

/*
 * Change the temp limit (physical bytes of the files the space writes,
 * segments and indexes; 0 = none; BF_TEMP_LIMIT_AUTO: 90% of the free
 * bytes now). Lowering it below the current usage makes the next write
 * that grows the files fail with BF_ELIMIT.
 */
BF_API void bf_space_set_temp_limit(bf_space *space, uint64_t temp_limit);

/* The temp limit in force, in bytes (0: none): BF_TEMP_LIMIT_AUTO as resolved. */
BF_API uint64_t bf_space_temp_limit(const bf_space *space);

/* ---- The shared temp budget ----------------------------------------------------------------- */

/*
 * A temp budget: one limit on the physical bytes of several spaces, as an
 * engine that runs a space per thread sets one limit for the whole process
 * or instance (DuckDB's max_temp_directory_size, PostgreSQL's
 * temp_file_limit). It counts what each space's own temp limit counts
 * (segments and indexes of the files the space writes), and a space obeys
 * both: its own limit and its budget's. Thread-safe: spaces in any threads
 * charge one budget (atomics, no lock). A write that would take the sum past
 * the limit fails with BF_ELIMIT, the message naming the budget, with the
 * failure contract of the space's own limit (each call's failure says what
 * it leaves: data acknowledged before stays, the budget's use is what it
 * was). The sum never passes the limit through writes; a read-write open of
 * a named file charges that file's bytes unchecked, as a space's own limit
 * lets it, and lowering the limit below the sum makes the next write that
 * grows a file fail. Bytes go back when files shrink or close and when a
 * space is destroyed (its files are closed first).
 *
 * Lifetime: the budget must outlive every space that uses it: destroy or
 * detach (bf_space_set_budget(space, NULL)) those spaces first.
 * bf_budget_destroy refuses (BF_EBUSY) while any space still uses it.
 */

/*
 * Create a budget named `name` (1..63 bytes, copied; messages name it) of
 * `limit` physical bytes (0: no limit, counting only). `alloc` may be NULL
 * (malloc); it is copied. Errors: BF_EINVAL (name, allocator), BF_ENOMEM.
 */
BF_API int bf_budget_create(const char *name, uint64_t limit, const bf_allocator *alloc,
                            bf_budget **out);

/* Free a budget no space uses (BF_OK; NULL is a no-op), else BF_EBUSY and nothing changes. */
BF_API int bf_budget_destroy(bf_budget *budget);

/* Change the limit (0: none); any thread. Below the use, the next growing write fails. */
BF_API void bf_budget_set_limit(bf_budget *budget, uint64_t limit);

/* The limit, the bytes in use by its spaces now, the highest use so far, the name. */
BF_API uint64_t bf_budget_limit(const bf_budget *budget);
BF_API uint64_t bf_budget_used(const bf_budget *budget);
BF_API uint64_t bf_budget_peak(const bf_budget *budget);
BF_API const char *bf_budget_name(const bf_budget *budget);

/*
 * Make the space use `budget` (NULL: none) from now on, as
 * bf_space_options.budget does at creation. The bytes the space holds move
 * from its old budget to the new one. Called in the space's thread.
 * Errors: BF_ELIMIT when the new budget has no room for the space's bytes;
 * the space then keeps its old budget.
 */
BF_API int bf_space_set_budget(bf_space *space, bf_budget *budget);

/* The budget the space uses, or NULL. */
BF_API bf_budget *bf_space_budget(const bf_space *space);

/* The most workers bf_space_set_workers takes. */
#define BF_WORKERS_MAX 64

/*
 * Compression off the caller's thread (off by default: n = 0, which is
 * also how to turn it off again). With n workers, a full block of a file
 * that is stored (the buffer leaving a block, a whole block written from
 * the caller's memory, bf_file_write_block) is copied into one of the
 * space's in-flight slots and compressed and checksummed there by a
 * worker, while the caller goes on. When every slot is busy the call
 * waits, asleep, for the workers to finish half of them; it packs the
 * oldest queued block itself only when no worker is running (the space's
 * own threads; a caller's pool's tasks are left to it). When it needs
 * back a block no worker has taken yet (a rewrite of part of that block,
 * bf_file_flush) it packs the queued blocks up to it itself; a read of a
 * block whose newest copy is still in a slot copies it from there. A
 * file's blocks use up to 2 MiB of blocks' worth of slots a worker (at
 * least 2 slots, at most 512: 512 for 4 KiB blocks, 256 for 8 KiB, 32 for
 * 64 KiB, 2 for 1 MiB and up), so a burst of a few MB (a sorter's run, a
 * pager's evictions) is packed on the workers; each slot used holds a
 * block and the extent's room (about twice the block: 2 x 2 MiB a worker
 * at most, ~4.1 MiB), in memory_bytes as they are first used and kept
 * until the workers are set again or the space is destroyed; the space
 * has at most 512n slots, each ~0.4 KiB of bookkeeping allocated with the
 * workers (~200 KiB a worker). A call's bookkeeping does not grow with the
 * slots (free slots in a bitmap, each file's slots in a list in the order
 * it handed them over, a hash of the blocks in flight). Handing a block over
 * takes no lock and no system call: a worker with nothing to do spins for
 * the next block up to 200 us (CPU time on its own core, which spares the
 * caller the cost of waking it), then sleeps and is woken when half of its
 * share of the slots waits, or when the caller needs a slot or a block back.
 * Each slot has codec contexts of its own, made on the caller's thread
 * through the allocator hooks. The allocator hooks are only ever called on
 * the caller's thread: zstd and zlib allocate as they compress, so with
 * hooks of the caller's (bf_space_options.allocator) their blocks are
 * compressed on the caller's thread; lz4's and sealed none's (and with the
 * default allocator, every codec's) go to the workers. A block stored
 * raw and unsealed (codec none, or auto choosing none) is checksummed on
 * the caller's thread as without workers: cheaper than handing it over. The
 * write and the map's update stay on the caller's thread: a block handed
 * over is written at a call of the file that stores or loads a block once
 * half of the slots are taken (a file's blocks in a row with one write),
 * at bf_file_flush, bf_file_truncate, the statistics calls, a load of that
 * block, or when its slot is needed. Blocks of sealed files are sealed on the workers too
 * (each slot with a sealer of its own: a clone of the space's, its own
 * nonces); blocks of caller codecs are packed on the caller's thread. A block counts in the
 * physical figures (and the temp limit) once it is written: the stats
 * calls write what is done first, bf_file_written does not wait.
 *
 * `run` NULL: n threads of the space's own, started on the first block and
 * joined by bf_space_destroy. Else the caller's pool runs the work: each
 * run(run_ctx, task, arg) must call task(arg) once, on any thread, soon
 * (it may call it at once); n then bounds the slots only.
 *
 * Failures. A block handed over is acknowledged: the write returned
 * BF_OK, the size covers it, and its slot keeps it until its extent is
 * written. A failure of the work (the codec's, BF_ENOMEM) or of the write
 * (BF_ENOSPC, BF_EIO, BF_ELIMIT) is returned by the file's next call that
 * stores or loads a block (bf_file_write or bf_file_read beyond the
 * buffered block, the block calls), bf_file_flush or, for a named file,
 * bf_file_close and bf_file_export, with the message it would have had
 * on the caller's thread; that call did nothing else (position, size, data
 * and statistics as before it), and the block is tried again at the next
 * such call (a codec's failure is reported once, then the block is
 * compressed on the caller's thread). bf_file_truncate drops the blocks
 * on workers past its new end, takes the new last block from its slot and
 * leaves the others in flight: a shrink still writes nothing. Closing an anonymous file discards
 * its blocks on workers as it discards its data.
 *
 * Reads. A file read sequentially through bf_file_read (block b loaded
 * right after block b - 1) has the next blocks unpacked ahead on the
 * workers (checked, opened if sealed, decompressed): at least 4 and at most
 * 8 ahead, never more than half the slots, each extent read by the worker
 * with a pread of its own on the file's descriptor (held open until the
 * read is done) where the space's I/O is plain POSIX (no transfer hooks, no
 * io_limit), the workers are the space's threads and the file's codec is
 * not auto, else by the calling thread with one pread for several (into the
 * space's read-ahead buffer); a sleeping worker is woken once for them, and
 * the read of such a block copies it from its slot. The space follows up to
 * 16 such passes at once, over one file or several, read in turn (a merge
 * of runs of one file): 384 bytes of the space's struct. It uses the same
 * slots and their buffers (a slot of a sealed file's block grows its extent
 * buffer to twice the extent's room), no other memory, and a block to store
 * takes a slot back from a block unpacked ahead. A block taken is exactly
 * what the read would have loaded: a block stored again since is thrown
 * away, and so is one whose work failed, which is then loaded on the
 * caller's thread: a corrupt extent or an I/O error is reported by the read
 * of that block, with the message it has without workers. bf_stats'
 * readahead_hits and readahead_misses count them. Blocks stored bare (not
 * compressed, format 4) or raw, blocks of caller codecs and, with the
 * caller's allocator hooks, zstd's and zlib's are read on the caller's
 * thread; unsealed lz4 blocks too while the reads outrun the workers (they
 * find the blocks ahead not yet unpacked: lz4 costs about what its handoff
 * does, so it is handed over only while the worker keeps ahead). The block
 * calls and cursors do not read ahead.
 *
 * Only while the space has no open file: BF_EINVAL otherwise, or when n
 * exceeds BF_WORKERS_MAX; BF_ENOMEM.
 */
BF_API int bf_space_set_workers(bf_space *space, unsigned n,
                                void (*run)(void *run_ctx, void (*task)(void *arg), void *arg),
                                void *run_ctx);

/* ---- The stream file ------------------------------------------------------------------------ */

/*
 * Memory: per open file = one block buffer + the block map + the
 * free-extent list + a small struct. The block map holds at most 31 bytes
 * per logical block holding data (16 in runs of such blocks; about 4.5 in
 * runs of blocks stored raw one after another, as codec none writes them
 * and auto where I/O is cheap) and, for a
 * file of more than 4096 blocks, a directory of 12 bytes and a bit per
 * 4096 blocks of its size (up to an eighth more as it grows; at least 200
 * bytes): however sparse the data, a hole costs its share of the directory
 * and nothing else. Only an allocation that failed can leave more. Codec
 * contexts and the compression scratch buffer belong to the space. A
 * cursor on the file adds its handle and one block (see Cursors below).
 */

/* Per-file overrides. Initialise with bf_file_options_init (as bf_space_options). */
typedef struct bf_file_options {
    uint32_t struct_size; /* sizeof(bf_file_options) of the caller's header */
    bf_codec codec;       /* BF_CODEC_DEFAULT: the space's */
    int32_t level;        /* BF_LEVEL_DEFAULT: the space's level when the codec is the space's,
                             else the codec's default */
    uint32_t block_size;  /* 0: the space's */
    int32_t seal;         /* 0: the space's setting (encrypt); BF_SEAL_ON: seal this file
                             (the space must have a key: else BF_EKEY); BF_SEAL_OFF: do not */
    void *alloc_ctx;      /* NULL: the file's memory is the space's. Else the file's own
                             memory (its handle, block buffer, block map, free-extent list,
                             a named file's state: all of "per open file" above) goes
                             through the space's allocator hooks with this ctx in place of
                             bf_allocator.ctx, for as long as the file is open, so that a
                             caller charges it to the file's owner (PostgreSQL: the memory
                             context the file was created in). Codec contexts, the scratch
                             buffer, workers' slots, cursors and what a call frees before it
                             returns stay the space's. Meaningless with the default
                             allocator, which has no ctx. 1.1.0 */
} bf_file_options;

/* bf_file_options.seal: a file sealed or not whatever the space's default. */
#define BF_SEAL_ON 1
#define BF_SEAL_OFF (-1)

/* Fill `opts` with "the space's" for every field; struct_size = sizeof(*opts). */
#define bf_file_options_init(opts) bf_file_options_init_sized((opts), sizeof(*(opts)))
BF_API void bf_file_options_init_sized(bf_file_options *opts, size_t size);

/*
 * Create an empty temporary file in the space. `opts` may be NULL; it is
 * read up to its struct_size only (see bf_space_create).
 * Nothing touches the disk until the first block is written.
 * Errors: BF_EINVAL, BF_ENOCODEC, BF_ENOMEM, BF_EKEY (seal asked of a
 * space without a key).
 */
BF_API int bf_file_create(bf_space *space, const bf_file_options *opts, bf_file **out);

/*
 * Close a file and free the handle, whatever the status. NULL is a no-op.
 *
 * Anonymous file: its segment files are deleted; BF_EIO if one could not
 * be (it is removed with the space directory by bf_space_destroy).
 *
 * Named file (file sets): a read-only handle just goes. A writable one
 * persists the file's index first (as bf_file_export), so that the file
 * can be opened by name. If that fails (BF_ELIMIT, BF_ENOSPC, BF_EIO, ...)
 * the status is that failure's and the file is rolled back: it reads
 * exactly as at its last successful persist (export, or the close that
 * ended an earlier session), or, if it was never persisted, it is deleted
 * and its name is free again; sources appended since that persist are not
 * consumed any more (bf_file_append). If that deletion fails as well (a segment
 * file cannot be unlinked; the message then says so), segments 0..k of the
 * file stay, as after a writer that died before its first persist: no open
 * finds a file by that name (BF_ENOENT), but the name stays taken
 * (bf_file_create_named: BF_EEXIST) until bf_file_delete_named or
 * bf_fileset_destroy removes them. A caller that reuses the name calls
 * bf_file_delete_named after a failed close of a handle from
 * bf_file_create_named: it removes them, or says BF_ENOENT when nothing
 * stayed.
 */
BF_API int bf_file_close(bf_file *file);

/*
 * Close a file and free the handle, whatever the status, as a writer that
 * gives up (an aborted transaction): nothing is persisted. An anonymous
 * file is deleted as by bf_file_close. A named file opened read-only just
 * goes; a writable one is rolled back as a failed bf_file_close rolls it
 * back: it reads as at its last persist, or, never persisted, its
 * segments are removed and the name is free again; sources appended since
 * that persist are not consumed any more. Its set directory may
 * be gone already (removed under it): that is not an error. Returns BF_OK,
 * or the failure of a removal (BF_EIO; what stays goes with the space
 * directory or the set). NULL is a no-op.
 */
BF_API int bf_file_abort(bf_file *file);

/*
 * Write `len` bytes at the current position and advance it. Writing past
 * the end leaves a hole that reads as zeros. Partial writes into an
 * existing block read-modify-write it. Data is buffered in the block
 * buffer and written when the position leaves the block (or on flush).
 * Returns BF_OK when all bytes were accepted, or a negative status.
 * On error: the position is unchanged; each byte of [position, position +
 * len) reads as before or as written; the size is unchanged or grown only
 * to cover bytes of this call that were stored; nothing else changes.
 */
BF_API int bf_file_write(bf_file *file, const void *buf, size_t len);

/*
 * Read up to `len` bytes at the current position and advance it. Returns
 * the number of bytes read (less than `len` only at end of file, 0 at or
 * past it) or a negative status (BF_ECORRUPT when an extent fails its
 * checks, BF_EIO, ...). Moving the buffer to another block may write the
 * buffered block first, so a read can also fail with write errors
 * (BF_ENOSPC, BF_ELIMIT). On error the position and the file are
 * unchanged ("buf" holds garbage).
 */
BF_API int64_t bf_file_read(bf_file *file, void *buf, size_t len);

/*
 * Windows: bf_file_write and bf_file_read for callers that move many small
 * pieces (a 4-byte hash, then a tuple), without a call per piece. A window
 * is the part of the buffered block at the position that the caller may
 * fill or read in place; the caller copies its pieces itself and then
 * advances past what it copied, once per window. As zstd's streaming
 * buffers: the library says where and how much, the caller says how much
 * it used.
 *
 *     void *w;
 *     size_t room = bf_file_write_window(f, &w), used = 0;
 *     while (more && piece_len <= room - used) {   // each piece in place
 *         memcpy((char *)w + used, piece, piece_len);
 *         used += piece_len;
 *     }
 *     rc = bf_file_write_advance(f, used);         // now they are written
 *     // a piece that did not fit: bf_file_write(f, piece, piece_len), then
 *     // a new window
 *
 * A window never does I/O and never fails: 0 bytes (and NULL) when there
 * is none, and then bf_file_write/bf_file_read, which load or switch the
 * block, make the next one. A window holds until the next call on the
 * file (an advance included) other than the accessors of what a window
 * does not change (bf_file_path, bf_file_space, bf_file_block_size,
 * bf_file_codec, bf_file_level): the pointer may not be used after it, and
 * the bytes of a write window not covered by its advance are dropped.
 * bf_file_tell, bf_file_size and the statistics do not count bytes copied
 * through a window before its advance.
 *
 * Write window: only at the end of the data (position == size, a file not
 * read-only) within the buffered block: `*ptr` and up to the block's end.
 * Bytes put into it are no write until advanced (nothing reads them; the
 * size, the position and the statistics are as before). Advancing by `n`
 * is bf_file_write of those `n` bytes as put there: the position and the
 * size move by `n`, bf_stats' logical_written counts them, the block is
 * dirty. Errors: BF_EINVAL when `n` is more than the window the state of
 * the file allows at the time (no window, or beyond its end); then
 * nothing changes.
 *
 * Read window: the bytes readable in place at the position, within the
 * buffered block and below the size. Advancing by `n` is bf_file_read of
 * `n` bytes already copied: the position moves by `n`, logical_read
 * counts them. Errors: BF_EINVAL as for the write window; nothing changes.
 */
BF_API size_t bf_file_write_window(bf_file *file, void **ptr);
BF_API int bf_file_write_advance(bf_file *file, size_t n);
BF_API size_t bf_file_read_window(bf_file *file, const void **ptr);
BF_API int bf_file_read_advance(bf_file *file, size_t n);

#define BF_SEEK_SET 0
#define BF_SEEK_CUR 1
#define BF_SEEK_END 2

/*
 * Move the position to any logical offset (also past the end; a later
 * write there leaves a hole). Never writes: the buffered block stays until
 * a read or write needs another one.
 * Errors: BF_EINVAL (negative or overflowing offset, bad whence).
 */
BF_API int bf_file_seek(bf_file *file, int64_t offset, int whence);

/* Current logical position. */
BF_API uint64_t bf_file_tell(const bf_file *file);

/* Logical size (buffered bytes included). */
BF_API uint64_t bf_file_size(const bf_file *file);

/*
 * Set the logical size. Shrinking frees the extents of whole blocks past the
 * new end (their physical space is reused or, at the end, returned to the
 * file system); growing leaves a hole. The position is not changed.
 * Shrinking writes nothing unless a dirty buffered block before the new
 * last block must make room for it (a buffered block past the new end is
 * dropped), so it works at the temp limit. On error (BF_ENOMEM, read
 * errors of the new last block, write errors of that flush) nothing has
 * changed. Giving trailing space back to the file system is not an error
 * source: if that fails the call still succeeds and the bytes stay as free
 * space of the file (tried again at the next shrink, removed at close).
 */
BF_API int bf_file_truncate(bf_file *file, uint64_t size);

/* Write the buffered block, if modified. On error it stays buffered and dirty. */
BF_API int bf_file_flush(bf_file *file);

/* The file's logical block size, codec (BF_CODEC_AUTO for auto) and level (of the codec in use). */
BF_API uint32_t bf_file_block_size(const bf_file *file);
BF_API bf_codec bf_file_codec(const bf_file *file);
BF_API int32_t bf_file_level(const bf_file *file);

/* The space a file belongs to. */
BF_API bf_space *bf_file_space(const bf_file *file);

/*
 * Write into buf (len bytes, NUL-terminated, truncated like snprintf) the
 * path its segment files start with: "<space dir>/<id>" for an anonymous
 * file, "<set dir>/<name>" for a named one; segment n is that + ".<n>" (a
 * named file's index lies inside its segments). For log lines that name
 * the file, as
 * PostgreSQL's log_temp_files does. Returns the length of the whole path.
 */
BF_API int bf_file_path(const bf_file *file, char *buf, size_t len);

/* ---- Cursors, and choosing how to read ------------------------------------------------------ */

/*
 * Choosing how to read. A file has ONE block buffer, shared by its
 * position and its writes. What each way of reading costs:
 *  - bf_file_read at the position, sequentially: a copy while within the
 *    buffered block; loading the next block (one pread, often several
 *    blocks per pread: read-ahead, and a decompression) once per block.
 *  - bf_file_seek: nothing by itself. The read after it costs a block load
 *    (pread + decompression of a whole block) whenever the new position is
 *    in another block than the buffered one. So readers that take turns
 *    over one file with seek + read (a merge reading a row from each run
 *    of one file) load and decompress a whole block at EVERY switch:
 *    docs/results/cursors.md measured a merge of 64 runs reading one
 *    100-byte row per switch 11x (none), 25x (lz4) and 51x (zstd) slower
 *    than with a 64 KiB buffer per run.
 *  - a cursor (below): a read position with a block buffer of its own. A
 *    switch between cursors costs nothing; each cursor loads each block it
 *    reads once (one pread of that block's extent, no read-ahead, and a
 *    decompression). Its price is memory: one block per cursor. The merge
 *    above took 0.74x (lz4), 0.76x (zstd) and 1.05x (none) the time of the
 *    64 KiB buffers, with an eighth of their memory.
 *  - a buffer of the caller's per reader, filled by seek + a read of
 *    several blocks: as cheap as a cursor per byte, and its read-ahead
 *    takes fewer system calls, for a buffer of that size per reader.
 *
 * Cursors: several read positions over one file, each reading on from a
 * decompressed block of its own. Writes through the file (bf_file_write,
 * bf_file_truncate, bf_file_write_block, bf_file_discard_block, including
 * calls that failed) are seen by every cursor's next read: a cursor
 * compares the file's write generation and loads its block again when it
 * moved. A cursor never writes: a block the file holds modified in its
 * buffer is read from there, so cursor reads fail only as loads fail
 * (BF_ECORRUPT, BF_EIO, BF_ENOMEM, BF_ENOCODEC, BF_EKEY), never with
 * BF_ENOSPC or BF_ELIMIT, and they neither move the file's position nor
 * touch its buffer. A cursor belongs to its file's space: one thread.
 *
 * Memory: a cursor costs its handle (under 80 bytes) and, from its first
 * read that is not of whole aligned blocks, one buffer of the file's block
 * size (8 KiB by default): 64 cursors on a file of 8 KiB blocks hold about
 * 517 KiB. Counted in the space's bf_stats.memory_bytes and
 * bf_cursor_memory; allocated through the space's allocator.
 *
 * Lifetime: close a file's cursors before or after the file: once the file
 * is closed or aborted its cursors' calls fail with BF_EINVAL (close them
 * still). bf_space_destroy frees the cursors still open.
 */
typedef struct bf_cursor bf_cursor;

/*
 * Open a cursor on `file` at offset 0. Errors: BF_ENOMEM (*out is then
 * NULL). Any file: anonymous, named, read-only or writable.
 */
BF_API int bf_cursor_open(bf_file *file, bf_cursor **out);

/*
 * Read up to `len` bytes at the cursor's position and advance it, as
 * bf_file_read reads (holes and the bytes past the data read as zeros;
 * fewer than `len` only at the end of the file, 0 at or past it). Returns
 * the bytes read, or a negative status: BF_ECORRUPT, BF_EIO, BF_ENOMEM
 * (the cursor's buffer), BF_ENOCODEC, BF_EKEY; BF_EINVAL when the file was
 * closed. On error the cursor's position is unchanged, `buf` holds
 * garbage, and the file (position, buffer, size, data) is untouched.
 */
BF_API int64_t bf_cursor_read(bf_cursor *cursor, void *buf, size_t len);

/*
 * Move the cursor's position as bf_file_seek moves the file's (BF_SEEK_END:
 * from the file's size now). Loads nothing. Errors: BF_EINVAL (as
 * bf_file_seek; a closed file), the position then unchanged.
 */
BF_API int bf_cursor_seek(bf_cursor *cursor, int64_t offset, int whence);

/* The cursor's position. */
BF_API uint64_t bf_cursor_tell(const bf_cursor *cursor);

/* The heap the cursor holds: its handle and its block buffer if it has one. */
BF_API uint64_t bf_cursor_memory(const bf_cursor *cursor);

/* Close the cursor and free its memory. NULL is a no-op. */
BF_API void bf_cursor_close(bf_cursor *cursor);

/*
 * == 2. Block API ===============================================================================
 *
 * Whole-block I/O and buffer control for callers that think in blocks
 * (external-sort tapes that recycle blocks, files that wait to be read).
 *
 * Implemented in: src/file.c.
 */

/* Seek to the start of logical block `blkno` (same as seek to blkno * block size). */
BF_API int bf_file_seek_block(bf_file *file, uint64_t blkno);

/*
 * Whole-block I/O for callers that think in blocks (external-sort tapes).
 * bf_file_read_block fills `buf` (block-size bytes) with block `blkno`
 * (zeros for a hole or a block past the end; the bytes past end-of-file in
 * the last block are zeros). bf_file_write_block replaces block `blkno`
 * with `buf`, compressing straight from the caller's buffer, and extends
 * the file to cover the whole block if needed. Neither moves the position.
 * A rewrite is copy-on-write: the new copy needs room (and counts against
 * the temp limit) before the old one is freed; BF_ELIMIT says so. On error
 * the position, the size and the block's contents are unchanged.
 */
BF_API int bf_file_read_block(bf_file *file, uint64_t blkno, void *buf);
BF_API int bf_file_write_block(bf_file *file, uint64_t blkno, const void *buf);

/*
 * Tell the file that block `blkno` holds nothing of value any more (a
 * logtape-style caller that has consumed it): its extent is freed for
 * reuse and the block reads as zeros until written again. The logical size
 * is unchanged. Fails only on a read-only file (giving space back to the
 * file system is tried, not required, as in bf_file_truncate).
 */
BF_API int bf_file_discard_block(bf_file *file, uint64_t blkno);

/*
 * Write the buffered block if it was modified, and free the block buffer:
 * a file that only waits to be read back (a hash-join batch, an aggregate
 * partition, a frozen sort tape) then costs its struct and block map
 * alone. The next access allocates the buffer again. Errors: write errors
 * (the buffer is then kept).
 */
BF_API int bf_file_release_buffer(bf_file *file);

/*
 * == 3. File sets ===============================================================================
 *
 * Named files that other spaces and processes open: a set's directory,
 * and a named file's create, export, open, delete and append.
 *
 * Implemented in: src/fileset.c (the calls, a named file's close and abort,
 * read-write sessions); src/index.c (the head and the persisted block
 * index: docs/format.md).
 *
 * File sets: named files that several spaces - in other threads or other
 * processes - can open, as PostgreSQL's parallel hash join and parallel
 * sort hand spill files from workers to the leader. A set is a directory;
 * a named file is stored there as its segments "<name>.<segment>" alone
 * (one file-system object per segment, as PostgreSQL's own temporary files
 * are): once exported or closed, segment 0's head names an index inside
 * the file (docs/format.md) that holds the block map, so any opener seeks
 * at the same cost as the writer.
 *
 * Names are 1..128 characters from [A-Za-z0-9_.-], not starting with '.'.
 * A file is its set and its name, whatever handle or path reaches it. All
 * spaces using a set must have the same segment size. Closing a named file
 * does not delete it: bf_file_delete_named or bf_fileset_destroy do.
 * Coordination (who writes, when readers start) is the caller's, as with
 * PostgreSQL's SharedFileSet: a file must not be written by two handles at
 * once, nor opened while another handle writes it.
 *
 * Versions: a file is written in sessions (its creation, then each
 * read-write open), each ending with a persisted index (export or close).
 * While a session runs, nothing the last persisted index points at is
 * overwritten or cut off, so a crash or a failed close leaves that version
 * whole, and opening the file then gives it exactly. Every extent carries
 * the session that wrote it: a read-only handle that outlives later
 * sessions reads its own version while the first of them runs; once that
 * one has persisted (it gives back the bytes past its live end, and the
 * next sessions may reuse what it freed), reads of the blocks concerned
 * fail with BF_ECORRUPT ("reopen it") - never another version's bytes -
 * and bf_file_append refuses the handle as a source.
 */

/* Create the set directory `dir` (mode 0700), or accept an existing one owned by the caller. */
BF_API int bf_fileset_create(bf_space *space, const char *dir);

/*
 * Delete every file of the set and the directory itself. `space` only
 * receives the message of a failure and may be NULL (a process that never
 * opened a file of the set, such as the last of several workers to detach).
 */
BF_API int bf_fileset_destroy(bf_space *space, const char *dir);

/*
 * Create the named file `name` in set `dir`, empty and writable.
 * Errors: BF_EEXIST when the name is taken (by a file, a writer that has
 * not persisted yet, or the segments such a writer left: see
 * bf_file_close), BF_EINVAL for a bad name, as bf_file_create otherwise.
 */
BF_API int bf_file_create_named(bf_space *space, const char *dir, const char *name,
                                const bf_file_options *opts, bf_file **out);

/*
 * Flush a named file, persist its index, and make this handle read-only:
 * from now on other spaces may open it. Errors: BF_EINVAL for an
 * anonymous file, write errors, BF_ELIMIT (the index counts against the
 * temp limit like the segments). On error the handle stays writable and
 * the file as it was; export may be tried again.
 */
BF_API int bf_file_export(bf_file *file);

#define BF_OPEN_READONLY 0
#define BF_OPEN_READWRITE 1

/*
 * Open the named file `name` of set `dir` from its index: codec, level and
 * block size are the file's own. Read-write handles may write anywhere,
 * append at the end and truncate; closing one persists the new index (see
 * bf_file_close for a close that fails). A read-write handle counts the
 * file against this space's temp limit; a read-only one does not.
 * Errors: BF_ENOENT (no such file, or never exported/closed: its head
 * names no index), BF_ECORRUPT (head or index damaged, truncated, checksum
 * wrong, or not matching the segment files, as after a delete that failed
 * half way), BF_EINVAL (bad name or mode, a space whose segment size
 * differs from the file's, or a read-write open of a file whose index is
 * at the last generation, UINT32_MAX: no generation is left for another
 * session; read-only opens still work), BF_EBUSY (read-write open of a
 * file that was appended to another: see bf_file_append), BF_EIO (reading
 * the index, or, for a read-write open, removing segments or bytes past
 * the index that a failed or killed session left: the file's data stays
 * as its index says, and a retry removes the rest), BF_ENOMEM,
 * BF_ENOCODEC (the file's caller codec is not this space's: none of that
 * id, or another of that name), BF_EKEY (sealed with another key, or this
 * space has none; and in a space with a key, a file that no space with
 * its key wrote: a space with a key opens only what it can authenticate;
 * a space without one may read, not rewrite, an unsealed file written
 * under a key).
 */
BF_API int bf_file_open_named(bf_space *space, const char *dir, const char *name, int mode,
                              bf_file **out);

/*
 * bf_file_open_named with options: of `opts` (NULL: as bf_file_open_named)
 * only alloc_ctx is read, the file's memory; codec, level, block size and
 * sealing are the file's own. Errors: as bf_file_open_named; BF_EINVAL for
 * a struct_size no header gives. 1.1.0
 */
BF_API int bf_file_open_named_opts(bf_space *space, const char *dir, const char *name, int mode,
                                   const bf_file_options *opts, bf_file **out);

/*
 * Delete the named file's own segments, from the last down (also segments
 * without an index, left by a writer that died or whose close failed
 * before its first persist). Segments that other files spliced in with
 * bf_file_append stay until the set is destroyed.
 * Errors: BF_ENOENT when nothing by that name exists, BF_EBUSY for a file
 * that was appended to another (its bytes are that file's now), BF_EIO. A
 * failed delete may have removed the last segments already, the index's
 * end with them (the name then opens as BF_ECORRUPT but stays taken);
 * deleting again, or destroying the set, removes the rest.
 */
BF_API int bf_file_delete_named(bf_space *space, const char *dir, const char *name);

/*
 * Concatenate `source` (a read-only named file: exported, or opened
 * read-only) onto named file `target` of the same set, without copying or
 * recompressing: the target's block map takes the source's extents where
 * they are. The source's data starts at the first block boundary at or
 * after the target's logical size (the bytes in between read as zeros);
 * *start receives that logical offset, which callers add to offsets they
 * kept in terms of the source (PostgreSQL aligns to 1 GiB segments; block
 * alignment wastes less than one block). Both must have the same block
 * size.
 *
 * A writable target persists the splice, and the source is *consumed*, as
 * PostgreSQL's BufFileAppend consumes it: its bytes are the target's from
 * now on, so it can still be opened read-only but a read-write open or a
 * bf_file_delete_named of it fails with BF_EBUSY; it goes when the set is
 * destroyed. If the target's close fails instead and rolls the splice back
 * (bf_file_close), the consumption goes with it: the source can be written
 * and deleted again (unless its consumed marker cannot be removed: the
 * close's message then says so). A writer killed before it persisted leaves
 * its sources consumed until the set is destroyed. A read-only target
 * (PostgreSQL's parallel sort appends worker files onto one opened
 * read-only) gets a view for this handle alone: nothing is persisted and
 * the source is not consumed. The source handle stays valid and read-only
 * either way. The source must be its file's current version, and so must
 * its parts: the call reads their indexes to make sure.
 * Errors: BF_EINVAL (not both named in the same set, source not read-only,
 * block or segment sizes differ, the source is the target or holds it as a
 * part - a file cannot be appended to itself, through any handle - the
 * result would pass the largest file size, counting the source's holes, or
 * the source is outdated: a later read-write session of its file, or of
 * one of its parts, persisted since it was opened, or the file was deleted;
 * reopen it), BF_EIO or BF_ECORRUPT (reading those indexes), BF_ENOMEM,
 * I/O errors marking the source consumed. On error target and source are
 * unchanged.
 */
BF_API int bf_file_append(bf_file *target, bf_file *source, uint64_t *start);

/*
 * == 4. Codecs ==================================================================================
 *
 * The built-in codecs' names and availability, the caller's own codecs
 * and a space's view of both. The codec ids (bf_codec) and
 * BF_LEVEL_DEFAULT are in section 1, with the options that hold them.
 *
 * Implemented in: src/codec.c (the registry: names, parse, available,
 * levels); src/codec_none.c, src/codec_lz4.c, src/codec_zstd.c,
 * src/codec_zlib.c (the built-in codecs, each where it was built in);
 * src/codec_user.c (the caller's codecs: their check and the calls into
 * them); src/space.c (bf_space_codec_name, bf_space_codec_parse).
 */

/*
 * Name of a built-in codec ("none", "lz4", "zstd", "zlib", "auto"), or
 * NULL if unknown (a caller's codec: bf_space_codec_name).
 */
BF_API const char *bf_codec_name(bf_codec codec);
/* Parse a built-in codec's name; BF_EINVAL for any other (bf_space_codec_parse). */
BF_API int bf_codec_parse(const char *name, bf_codec *out);
/* 1 if the codec was built into this library (auto always is), 0 otherwise. */
BF_API int bf_codec_available(bf_codec codec);

/*
 * A codec of the caller's own (PostgreSQL's pglz, say), given to a space
 * in bf_space_options.user_codecs: usable wherever a built-in codec is -
 * by id or name in the space's and files' options, by codec=auto when
 * `auto_candidate` says so - and recorded by id in every extent, so a
 * space that opens a file set's file must have been given the same codec
 * (else BF_ENOCODEC, naming it). The library copies the struct and the
 * name; `ctx` and the functions must stay valid for the space's life.
 * Like a codec context, `ctx` is used by one space at a time: a ctx shared
 * by spaces in several threads must be thread-safe.
 * This struct never grows (as bf_allocator).
 */
struct bf_user_codec {
    int id;           /* BF_CODEC_USER_MIN .. BF_CODEC_USER_MAX, unique in the space */
    const char *name; /* 1..15 of [a-z0-9_-], not a built-in codec's name */
    int32_t default_level, min_level, max_level; /* what BF_LEVEL_DEFAULT means, the range */
    /* The most bytes compress may write for `len` bytes of input (its dst has that room:
       at least len - 1), at most 2 * len + 4096 for every block size (a larger bound is
       BF_EINVAL from bf_space_create). NULL: len - 1, and compress returns 0 when that does
       not hold the output. */
    size_t (*bound)(void *ctx, size_t len);
    /* Compress `len` bytes of `src` into `dst` (room: `cap` bytes): the compressed length,
       0 when the output would not be smaller than `len` (the block is stored raw), or a
       negative value on failure (BF_ECODEC; nothing is lost). A length over `cap` is a
       failure too. */
    int64_t (*compress)(void *ctx, int32_t level, const void *src, size_t len, void *dst,
                        size_t cap);
    /* Decompress `len` bytes of `src` into `dst`, which has `raw_len` bytes: the number of
       bytes produced, which must be `raw_len`, or a negative value for input it cannot
       decompress. Anything but `raw_len` fails the read (BF_ECODEC for a length that
       differs; BF_ECORRUPT for a refusal); the payload's CRC was checked before. */
    int64_t (*decompress)(void *ctx, const void *src, size_t len, void *dst, size_t raw_len);
    int auto_candidate; /* nonzero: codec=auto weighs it, at its default level, with its own */
    void *ctx;          /* passed back unchanged */
};

/* Most caller codecs one space takes. */
#define BF_USER_CODECS_MAX 16

/*
 * Name of codec `codec` in this space: a built-in codec's, or the caller's
 * codec's it was given (bf_user_codec); NULL if the space has no such codec.
 * Owned by the space.
 */
BF_API const char *bf_space_codec_name(const bf_space *space, bf_codec codec);

/* Parse a codec name as this space knows them, the caller's codecs included; BF_EINVAL if none. */
BF_API int bf_space_codec_parse(const bf_space *space, const char *name, bf_codec *out);

/*
 * == 5. Tuning and observation ==================================================================
 *
 * Statistics; codec=auto's device figures and decisions; I/O hooks for a
 * caller that accounts temp I/O itself; the allocator; the sweep of what
 * crashed processes left. Encryption is set in the options (section 1:
 * bf_space_options.encrypt and key, bf_file_options.seal).
 *
 * Implemented in: src/api.c (bf_space_stats_sized); src/file.c
 * (bf_file_stats_sized, bf_file_written, bf_file_memory, the `blocks`
 * hook); src/space.c (the space's statistics, bf_space_auto_reason,
 * bf_space_auto_device_sized); src/auto.c and src/auto_file.c (codec=auto's
 * estimates and choices); src/io_hooks.c (io_start/io_done around
 * transfers); src/segment.c (the descriptor hooks); src/io_throttle.c
 * (io_limit); src/alloc.c (the allocator); src/seal.c (AES-256-GCM
 * sealing); src/sweep.c (bf_sweep, bf_sweep_list).
 */

/* ---- Statistics ----------------------------------------------------------------------------- */

/*
 * Statistics of one file or of a space. A space's current sizes and their
 * peaks cover the files it writes: anonymous files, named files it created
 * and named files it opened read-write; a read-only handle on a named file
 * counts nothing against the space (its own bf_file_stats still shows the
 * file), as PostgreSQL's temp_file_limit counts what a backend writes.
 * Counters (written, read, blocks, times) sum over every file the space
 * ever opened. Peaks only ever record sizes a file had: a failed call does
 * not move them. Filled through bf_space_stats and bf_file_stats, which pass
 * the caller's sizeof: fields may be appended, and a library older than the
 * caller's header leaves the fields it does not count at 0.
 */
typedef struct bf_stats {
    uint64_t logical_bytes;      /* current logical size */
    uint64_t logical_peak;       /* peak of logical_bytes */
    uint64_t physical_bytes;     /* bytes the file holds on disk: the sizes of its segment files
                                    (dead bytes included; a named file's head and index lie
                                    inside them) */
    uint64_t physical_peak;      /* peak of physical_bytes */
    uint64_t dead_bytes;         /* of the segment bytes, those not holding a live extent */
    uint64_t logical_written;    /* bytes passed to write calls that succeeded */
    uint64_t logical_read;       /* bytes returned by read calls that succeeded */
    uint64_t physical_written;   /* extent bytes written to disk */
    uint64_t physical_read;      /* extent bytes read from disk */
    uint64_t blocks_compressed;  /* extents written compressed */
    uint64_t blocks_raw;         /* extents stored raw (did not shrink) */
    uint64_t blocks_read;        /* extents read and verified */
    uint64_t compress_ns;        /* codec time compressing (monotonic clock around the codec) */
    uint64_t decompress_ns;      /* codec time decompressing */
    uint64_t files_created;      /* space only: files created over its life (not opens) */
    uint64_t files_open;         /* space only: handles open now */
    uint64_t blocks_by_codec[4]; /* space only: extents written with none, lz4, zstd, zlib */
    uint64_t auto_probe_ns;      /* space only: time codec=auto spent probing other codecs */
    uint64_t auto_switches;      /* space only: codec changes codec=auto made in files */
    uint64_t memory_bytes;       /* heap held now: a file's struct, block buffer, block
                                    map and free list; for a space, that of its open
                                    files and cursors plus its scratch and read-ahead
                                    buffers (codec contexts are not included: count them
                                    with the allocator hooks) */
    uint64_t blocks_user_codec;  /* space only: extents written with the caller's codecs */
    uint64_t blocks_sealed;      /* space only: extents written sealed (encrypt) */
    uint64_t readahead_hits;     /* space only: blocks a sequential read took unpacked from a
                                    worker's slot (bf_space_set_workers) */
    uint64_t readahead_misses;   /* space only: blocks unpacked ahead and thrown away (the
                                    block changed, the work failed, the reader went elsewhere) */
} bf_stats;

/*
 * Statistics of the space: the sum over its files, open and closed (peaks
 * are the space's own). A macro passing sizeof(*out): bf_space_stats_sized
 * writes `size` bytes, no more. Its cost grows with the files open: their
 * memory is summed, a step per file and per 4096 blocks of its map.
 */
#define bf_space_stats(space, out) bf_space_stats_sized((space), (out), sizeof(*(out)))
BF_API void bf_space_stats_sized(const bf_space *space, bf_stats *out, size_t size);

/*
 * Statistics of this file (a macro passing sizeof(*out), as bf_space_stats).
 * Its dead_bytes are summed over the file's block map: the call costs time
 * in proportion to the blocks the file holds. To count what a file wrote
 * after every call, use bf_file_written.
 */
#define bf_file_stats(file, out) bf_file_stats_sized((file), (out), sizeof(*(out)))
BF_API void bf_file_stats_sized(const bf_file *file, bf_stats *out, size_t size);

/*
 * What the file has written so far, in constant time: *logical the bytes
 * passed to its write calls that succeeded, *physical the extent bytes it
 * wrote to disk (bf_stats' logical_written and physical_written). For a
 * caller that charges each call's bytes to whoever made it, as PostgreSQL's
 * EXPLAIN (BUFFERS) does per plan node. Either pointer may be NULL.
 */
BF_API void bf_file_written(const bf_file *file, uint64_t *logical, uint64_t *physical);

/*
 * The heap the file holds now, in bytes: its handle, its block buffer if it
 * has one, its block map and free list, and a named file's part list
 * (bf_stats' memory_bytes of the file).
 * A step per 4096 blocks of the map: for a caller that charges the file's
 * memory to its own budget after every block, as an executor's work_mem
 * accounting does, where bf_file_stats would also walk the map for its dead
 * bytes.
 */
BF_API uint64_t bf_file_memory(const bf_file *file);

/* ---- codec=auto ----------------------------------------------------------------------------- */

/* What codec=auto minimises: expected time per logical byte, or bytes within a time slack. */
#define BF_AUTO_TIME 0
#define BF_AUTO_SPACE 1

/*
 * What codec=auto has learned of its temp device. A space learns it from
 * its own transfers, and until it has, it takes the device for one that
 * does not limit: on a slow disk it writes its first few MiB uncompressed
 * (about 2.3 MiB at 50 MB/s). The device does not change from one space to
 * the next on the same temp directory, so a caller that makes spaces one
 * after another (one per query, say) reads these figures from the last one
 * (bf_space_auto_device) and starts the next from them
 * (bf_space_options.auto_device). The space goes on measuring: the figures
 * it starts from are estimates like its own, and new measurements move them.
 * Until 16 windows of uncompressed writes have said how often the device
 * makes them wait (share_windows), the runs that timed device_ns may have
 * timed a stall: while they make it compress, a space writes every other
 * window of 1 MiB uncompressed, unless its first 3 such windows all waited
 * (16 MiB at most, once per lineage of figures: share_windows carries).
 * Likewise, while the writes' runs price the device and no time per
 * request has been fitted in them (request_fits), up to 4 windows of a
 * space are written uncompressed, so that runs of requests of two sizes
 * tell the device's time per byte from its time per request.
 * Reads and writes are timed apart: a hash join's batch files are written
 * in small requests that a synchronous device (FUSE) serves without a
 * queue, and read back in large ones that wait for it, after every block
 * has been packed; what the last space's reads measured (read_device_ns)
 * is then what prices reading back the next space's blocks.
 * What a space can measure, and so what it takes: device_ns, pace_ns and
 * read_device_ns of 0 to 2^64 ns per byte (a 64-bit ns clock over at least
 * one byte), transfer_ns and read_transfer_ns of 0 to 1,000,001 (a transfer
 * slower than 1 ms plus 1 ns a byte waited for the device), limited_share
 * of 0 to 1; counts and since_wait of any value, but read_limited_windows
 * at most read_share_windows, request_ns, read_overlap and moved_ns of 0 to 2^64, slope_ns
 * and read_slope_ns of -2^64 to 2^64. Other figures (NaN, negative, larger) are
 * BF_EINVAL from bf_space_create.
 * struct_size is set by bf_space_auto_device; a caller that starts from
 * nothing learned initialises the struct with BF_AUTO_DEVICE_INIT.
 */
struct bf_auto_device {
    uint32_t struct_size;      /* sizeof(bf_auto_device) of the caller's header */
    double device_ns;          /* ns per byte while the device limits, timed by runs of
                                  transfers that waited for it */
    double pace_ns;            /* ns per byte of windows of transfers that waited (1.1.0:
                                  windows mostly of writes) */
    double limited_share;      /* of windows moving uncompressed bytes, the share that
                                  waited (0..1; 1.1.0: windows mostly of writes): at 0.35
                                  or more, of 16 windows or more, the pace stands for the
                                  device until it is timed; under, of as many, device_ns
                                  times stalls, not the device, and is not used */
    double transfer_ns;        /* ns per byte of a transfer that did not wait */
    uint64_t since_wait;       /* bytes moved since a transfer last waited */
    uint32_t device_runs;      /* runs that timed device_ns (0: not timed, unused) */
    uint32_t pace_windows;     /* windows that gave pace_ns (0: unused) */
    uint32_t share_windows;    /* windows limited_share is of */
    uint32_t transfer_windows; /* windows that timed transfer_ns (0: unused) */
    /* 1.1.0: reads timed apart from writes. device_ns and transfer_ns are then the
       writes' figures (a space of 1.0.0 timed both directions together), and reads take
       them until their own are timed. */
    double read_device_ns;          /* ns per byte while the device limits reads, timed by
                                       runs of reads that waited for it */
    double read_transfer_ns;        /* ns per byte of a read that did not wait */
    uint32_t read_runs;             /* runs that timed read_device_ns (0: not timed, unused) */
    uint32_t read_transfer_windows; /* windows that timed read_transfer_ns (0: unused) */
    uint32_t read_share_windows;    /* windows mostly of reads of uncompressed bytes */
    uint32_t read_limited_windows;  /* of those, the ones that waited a twentieth of their
                                       time: under 35% of 16 or more, read_device_ns times
                                       stalls, not the device, and is not used until
                                       read_overlap is known (1.1.0) */
    /* 1.1.0: the writes' runs as a time per request plus a time per byte. A FUSE request
       that waits for its daemon (descheduled on a busy machine) waits about as long
       whatever its size: priced per byte, compressed requests looked slower than raw ones,
       and the device the slower the more a space compressed. Once runs of several request
       sizes have fitted request_ns, device_ns is their time less it: per byte alone. */
    double request_ns;     /* ns each request in the writes' runs took whatever its size
                              (0: none found) */
    uint64_t request_fits; /* runs that fitted it (0: unused) */
    /* 1.1.0: what a transfer that did not wait saves per byte it does not move: the slope
       of such transfers' time over their size, fitted in windows whose sizes spread by a
       tenth and averaged as fitted (noise can take it below 0). A space whose blocks are
       all of one codec and of like sizes fits none, and until one is known the average
       per byte serves: a FUSE request's round trip over its bytes, 45-190 ns/B for 4 KiB
       requests on a busy machine, where the slope is near 0. */
    double slope_ns;             /* writes' (0 windows: unknown) */
    double read_slope_ns;        /* reads' */
    uint32_t slope_windows;      /* windows that fitted slope_ns */
    uint32_t read_slope_windows; /* windows that fitted read_slope_ns */
    /* 1.1.0: how much of the reads' device time the caller's work hides (the kernel's
       read-ahead runs the device behind it): the device's time on raw reads less what
       their transfers took, over the caller's own time in those windows, averaged over
       windows mostly of raw reads once the reads were timed. Until known, 1: all of it.
       Once known, reads that wait in under 35% of the windows are priced with it, not
       left at 0: through PostgreSQL on slowfs at 200 MB/s a quarter of the windows
       waited, and the device held raw reads 2.7 s a hash join (lz4's 0.6). */
    double read_overlap;           /* a multiple of the caller's time (0 windows: unknown) */
    uint64_t read_overlap_windows; /* windows that gave it */
    /* 1.1.0: how much the caller's own work grows with the bytes the device moves: the
       slope of the caller's time per logical byte over the bytes moved per logical byte,
       fitted over windows of uncompressed and of compressed blocks while the device
       limits, and priced only there. Through PostgreSQL on slowfs at 200 MB/s the
       executor's own code ran 2 ns per logical byte slower while its blocks went raw. */
    double moved_ns;     /* ns of the caller's work per byte moved (0 fits: unknown) */
    uint64_t moved_fits; /* windows that fitted it */
};

/* A bf_auto_device that holds nothing learned: `bf_auto_device d = BF_AUTO_DEVICE_INIT;` */
/* clang-format off */
#define BF_AUTO_DEVICE_INIT {.struct_size = sizeof(bf_auto_device)}
/* clang-format on */

/*
 * The last decision codec=auto made in this space that set a file's codec
 * (a change, or a new file's first where it chose otherwise than the
 * decision before: one that agrees leaves it, figures and all) and why:
 * the codec chosen, each
 * candidate's expected ns per logical byte moved and ratio,
 * the device's measured ns per byte, the transfers' own and the caller's
 * ("" if no file uses auto). Owned by the space.
 */
BF_API const char *bf_space_auto_reason(const bf_space *space);

/*
 * Fill *out with what codec=auto in this space has learned of its device:
 * the figures it started from (bf_space_options.auto_device) moved by its
 * own measurements since, and struct_size. All figures zero when it started
 * from nothing and no file has used auto. Never fails. A macro passing
 * sizeof(*out): bf_space_auto_device_sized writes `size` bytes, no more.
 */
#define bf_space_auto_device(space, out) bf_space_auto_device_sized((space), (out), sizeof(*(out)))
BF_API void bf_space_auto_device_sized(const bf_space *space, bf_auto_device *out, size_t size);

/* ---- I/O hooks ------------------------------------------------------------------------------ */

/*
 * I/O hooks: how a caller that accounts temp I/O of its own (PostgreSQL's
 * wait events, track_io_timing, temp_blks_read/written, its budget of file
 * descriptors) sees every transfer and descriptor of a space. Any hook may
 * be NULL; a space without hooks (bf_space_options.io_hooks NULL) pays
 * nothing for them. Hooks must not fail or leave by longjmp; they run in
 * the middle of library calls and must not call into the space. Like
 * bf_allocator, this struct never grows: a hook added later would be a new
 * field of bf_space_options.
 */
typedef enum bf_io_op {
    BF_IO_READ = 0,     /* pread of segment or index bytes */
    BF_IO_WRITE = 1,    /* pwritev of segment or index bytes */
    BF_IO_TRUNCATE = 2, /* ftruncate of a segment (shrink, or extend over a gap) */
} bf_io_op;

struct bf_io_hooks {
    /* Called right before each system call that moves or cuts bytes, and right after it
       (whatever its outcome): a wait event or a timer goes from io_start to io_done. */
    void (*io_start)(void *ctx, bf_io_op op);
    void (*io_done)(void *ctx, bf_io_op op);
    /* `n` logical blocks were loaded from disk (BF_IO_READ: extents read and verified;
       holes and blocks served from the file's buffer are not counted) or stored to disk
       (BF_IO_WRITE: extents written, rewrites included), however many system calls
       carried them. A caller that counts blocks as BufFile does counts these. */
    void (*blocks)(void *ctx, bf_io_op op, uint64_t n);
    /* Called before the space opens a descriptor, with `must` = 1 when the space holds no
       descriptor it could close: return nonzero to let the open go on (always, when
       `must`). When it returns 0 the space closes its least recently used descriptor
       (fd_release is called for it) and asks again. */
    int (*fd_acquire)(void *ctx, int must);
    /* Called after the space closed a descriptor, or after an open that fd_acquire let
       go on failed: every acquire is matched by one release. */
    void (*fd_release)(void *ctx);
    void *ctx; /* passed back unchanged */
};

/* ---- Allocator ------------------------------------------------------------------------------ */

/*
 * Allocator hooks. All memory the library allocates (including codec
 * contexts where the codec accepts custom allocators: zlib, zstd) goes
 * through them. `ctx` is passed back unchanged. This struct never grows (as
 * zstd's ZSTD_customMem): a hook added later would be a new field of
 * bf_space_options.
 */
struct bf_allocator {
    void *(*malloc_fn)(void *ctx, size_t size);
    void *(*realloc_fn)(void *ctx, void *ptr, size_t size);
    void (*free_fn)(void *ctx, void *ptr);
    void *ctx;
};

/* ---- Sweep ---------------------------------------------------------------------------------- */

/*
 * Remove leftover space directories ("buffile-*") under `parent` (NULL:
 * $TMPDIR or /tmp) whose owning process no longer runs, as left by a crash.
 * Returns the number of directories removed, or a negative status
 * (BF_ENOENT: no such parent).
 */
BF_API int bf_sweep(const char *parent);

/*
 * A space directory under a temp parent, as bf_sweep_list reports it. The
 * library fills it; fields are only ever appended (struct_size: the
 * library's sizeof), so read it through the pointer, never copy it by a
 * sizeof of your own.
 */
typedef struct bf_leftover {
    uint32_t struct_size; /* sizeof(bf_leftover) of the library */
    const char *path;     /* the directory (valid during the callback) */
    int64_t pid;          /* the process that made it, from its name */
    int alive;            /* that process runs (or cannot be signalled: EPERM): not a leftover */
    uint64_t bytes;       /* bytes of the regular files in it */
    uint64_t files;       /* how many */
    int64_t age_seconds;  /* since the directory last changed */
} bf_leftover;

/*
 * Call `each` for every space directory ("buffile-<pid>-*", a real
 * directory of the calling user) under `parent` (NULL: $TMPDIR or /tmp),
 * live owner or not; `each` returns 0 to go on, anything else to stop.
 * Returns the number of directories reported, or a negative status
 * (BF_ENOENT: no such parent; BF_EIO).
 */
BF_API int bf_sweep_list(const char *parent, int (*each)(void *ctx, const bf_leftover *dir),
                         void *ctx);

/*
 * == 6. ABI rules ===============================================================================
 *
 * What a program built against this header may rely on.
 *
 * Implemented in: src/abi.c (bf_abi_read and bf_abi_write, which read and
 * write a caller's growable struct up to its struct_size; BF_ENDS_AT, which
 * keeps each growable struct ending at its last field); src/buffile.map (the
 * exports: the bf_* functions, in version node BUFFILE_<major>);
 * src/CMakeLists.txt (the soname, hidden visibility). scripts/abi-check
 * (ctest abi_baseline) holds the library to the record in abi/; how to add
 * a field or a function: abi/README.md.
 *
 * ABI: the shared library is libbuffile.so.<BF_VERSION_MAJOR>. Within one
 * major version a program keeps working with any later library:
 *  - functions, status codes, codecs and macros are added, never removed
 *    or changed; a caller treats an unknown negative status as an error;
 *  - the structs that start with struct_size (bf_space_options,
 *    bf_file_options, bf_auto_device) and bf_stats only grow, at their end,
 *    and a new field's 0 means what the library did before it existed. The
 *    caller's header tells the library its struct's size (the init macros
 *    and the stats macros pass sizeof), and the library reads and writes
 *    no byte past it: fields the caller's header did not have take their
 *    defaults. A program built against a newer header also runs with an
 *    older library of the same major version, as long as it leaves the
 *    fields that library does not know at 0 (else BF_EINVAL says so);
 *  - bf_allocator and the values of the enums never change.
 * Anything else (a field removed, moved or retyped, a function's signature
 * or meaning changed) takes a new major version and so a new soname.
 * bf_user_codec and bf_io_hooks never grow either (as bf_allocator);
 * bf_leftover, which the library fills, grows at its end behind its
 * struct_size (section 5: read it through the pointer).
 *
 * BF_API marks the exported functions: the library is built with hidden
 * visibility and BF_BUILDING_LIBRARY, so that only they are visible; for a
 * caller it expands to nothing.
 */

#ifdef __cplusplus
}
#endif

#endif /* BF_BUFFILE_H */

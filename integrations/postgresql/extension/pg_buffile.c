/*-------------------------------------------------------------------------
 *
 * pg_buffile.c
 *	  Compressed (and optionally encrypted) temporary files for PostgreSQL,
 *	  stored through libbuffile behind the BufFile storage hook.
 *
 * Loaded with shared_preload_libraries, this module sets
 * buffile_storage_hook (see storage/buffile.h, added by the hook patch of
 * integrations/postgresql/hook/).  A BufFile created while
 * pg_buffile.method is not "off" (or pg_buffile.encryption is on) is then
 * stored by libbuffile as independently compressed BLCKSZ blocks with a
 * block map, so that seek, tell, size, append and truncate stay exact on
 * compressed data; otherwise the file is PostgreSQL's own.  A file keeps
 * the way it was created until it is closed.
 *
 * Invariants kept here:
 *
 * - Where files live is where stock puts them.  A private file is a named
 *   file of the library in the temporary directory of the tablespace stock
 *   would choose (temp_tablespaces through GetNextTempTableSpace, else the
 *   database's), named like stock's "pgsql_tmp<pid>.<n>", so pg_ls_tmpdir()
 *   lists it and startup after a crash removes it; it never has an index:
 *   closing it removes it.  A file "name" of a FileSet is the library's
 *   named file "name.bf" in the FileSet's directory for that name, stored
 *   as its segments "name.bf.0", "name.bf.1"...  Segment 0 is the marker:
 *   FileSetCreate() of that name is how we learn the directory, through
 *   fileset.h alone (the empty file it makes is removed at once, and the
 *   library creates the segment in its place), and FileSetOpen() of it how
 *   any process knows that the file is ours (open_fileset and
 *   delete_fileset).  Removing the FileSet removes the segments.
 *
 * - One library space per process, created at the first compressed file
 *   and destroyed at the end of the transaction once no file is open, so
 *   that nothing of ours stays in memory after a query.  Its temp limit is
 *   temp_file_limit in physical bytes.  Its own memory (codec contexts,
 *   scratch) comes from the "pg_buffile" memory context; a file's (our
 *   struct, the library's handle, block buffer and block map) from a child
 *   "pg_buffile files" of the context that was current when it was created
 *   or opened, where stock's BufFile would be (a hash join's spill context,
 *   say), through the library's per-file allocator ctx.  Never longjmp'ing
 *   out of the library: an allocation that fails is a NULL the library
 *   reports.  Its I/O is seen by PostgreSQL as stock's is: wait events
 *   BufFileRead, BufFileWrite and BufFileTruncate around each system call,
 *   track_io_timing's temp read and write times, temp_blks_read and
 *   temp_blks_written counted in logical BLCKSZ blocks.  Its descriptors
 *   are acquired from fd.c's external-FD budget.
 *
 * - Small reads and writes are copies through the library's window at
 *   the position (buffile.h), held per handle: the window is ended
 *   (advanced over what was copied) before any other call of the library
 *   on that handle, so that the library's position, size and counts are
 *   exact whenever anything else looks at them.
 *
 * - Positions as callers see them are (fileno, offset) pairs over segments
 *   of 1GB, as stock's; they map one to one onto the library's logical
 *   offsets.  Library blocks are BLCKSZ, so block numbers are stock's.
 *
 * - Every open file is remembered by its resource owner (ResourceOwnerDesc)
 *   and on the list of its memory context (a FileContext, owned by a reset
 *   callback of the child context that holds the file).  A file still
 *   open is dropped, without persisting anything, by whichever comes
 *   first: the reset or deletion of its context (which deletes the child,
 *   whose callback runs before the memory goes; at abort,
 *   AtAbort_Portals deletes executor memory before resource owners are
 *   released), or the release of its resource owner; either forgets it in
 *   the other.  Files of no resource owner (interXact) are dropped before
 *   shared memory goes at exit.
 *
 * - A private file's usage is reported once per handle that wrote it (at
 *   close or drop): pg_stat_database's temp_files and temp_bytes in
 *   physical bytes and, under log_temp_files, a log line naming its method.
 *   A FileSet file's usage is reported as stock reports its own, when it is
 *   deleted, once per segment at its size on disk: by stock's code when the
 *   FileSet goes (its walk of the directory finds our segments and nothing
 *   else of ours), by delete_fileset otherwise.  So neither the handles
 *   that wrote it nor the processes that reopened it count it again.
 *
 * - The cumulative view pg_buffile_stats (the extension's SQL script) reads
 *   counters in shared memory, per database and method: the files written,
 *   the bytes written into them and stored on disk, the codecs' time.  A
 *   process adds what its handles did when it closes, exports or drops
 *   them (every handle, so that a reader's decompression time counts), the
 *   bytes as count_written() counts them for EXPLAIN, the codec time once
 *   per handle, at its close or drop.  The counters live until the server
 *   stops or pg_buffile_stats_reset().
 *
 * - Under log_temp_files, a space that used auto logs when it goes what
 *   auto chose: the blocks written per codec, its last decision, and whether
 *   it started from the figures of earlier processes (shared memory).
 *
 * This code was moved here from src/buffile_compress.c, the adapter of the
 * whole-file patch series, which is retired (../README.md, "Retired").
 *
 * IDENTIFICATION
 *	  integrations/postgresql/extension/pg_buffile.c
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <buffile.h>

#include "access/xact.h"
#include "catalog/pg_tablespace_d.h"
#include "commands/explain.h"
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#include "commands/tablespace.h"
#include "commands/defrem.h"
#include "common/file_utils.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/buffile.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "storage/fileset.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"

PG_MODULE_MAGIC;

#if PG_VERSION_NUM < 180000
#error "pg_buffile needs PostgreSQL 18 or later with the BufFile storage hook"
#endif

/* Positions are (fileno, offset) over segments of this many bytes. */
#define SEGMENT_SIZE	((int64) 0x40000000)

/*
 * The suffix of our files in a FileSet, and that of their first segment,
 * the marker that the file is ours
 */
#define FILESET_SUFFIX	".bf"
#define FILESET_MARKER_SUFFIX	".bf.0"

/* ---- settings ---- */

typedef enum PgBufFileMethod
{
	METHOD_OFF,
	METHOD_NONE,
	METHOD_LZ4,
	METHOD_ZSTD,
	METHOD_GZIP,
	METHOD_AUTO,
} PgBufFileMethod;

static const struct config_enum_entry method_options[] = {
	{"off", METHOD_OFF, false},
	{"none", METHOD_NONE, false},
	{"lz4", METHOD_LZ4, false},
	{"zstd", METHOD_ZSTD, false},
	{"gzip", METHOD_GZIP, false},
	{"auto", METHOD_AUTO, false},
	{NULL, 0, false}
};

/* The library's codec of each method, and the levels it accepts. */
static const struct
{
	bf_codec	codec;
	int			min_level;
	int			max_level;
}			method_codecs[] = {
	[METHOD_OFF] = {BF_CODEC_NONE, 0, 0},
	[METHOD_NONE] = {BF_CODEC_NONE, 0, 0},
	[METHOD_LZ4] = {BF_CODEC_LZ4, 0, 0},
	[METHOD_ZSTD] = {BF_CODEC_ZSTD, -7, 22},
	[METHOD_GZIP] = {BF_CODEC_ZLIB, 1, 9},
	[METHOD_AUTO] = {BF_CODEC_AUTO, 0, 0},
};

static int	buffile_method = METHOD_OFF;
static int	buffile_level = 0;
static bool buffile_encryption = false;

/* ---- state ---- */

/*
 * A file.  A hash join may hold a hundred thousand: besides the library's
 * block buffer and its own struct, this is all it costs.
 */
typedef struct FileContext FileContext;

typedef struct PgBufFile
{
	dlist_node	node;			/* in its memory context's FileContext */
	bf_file    *bf;				/* the library's handle */
	ResourceOwner resowner;		/* NULL for an interXact file */
	uint64		logical_counted;	/* its bytes written and stored, as */
	uint64		physical_counted;	/* counted in method_usage so far */

	/*
	 * The library's window at the position (buffile.h), while one is open:
	 * small reads and writes (a hash join's 4-byte hash, then its tuple) are
	 * copies into or out of it here, not a call of the library each, and
	 * win_used of its win_room bytes are not advanced over yet.  Ended
	 * (window_end) before any other call of the library on the handle.  A
	 * window lies within one block, so its sizes fit in 16 bits.
	 */
	char	   *win;
	uint16		win_room;
	uint16		win_used;
	uint8		win_mode;		/* WIN_NONE, WIN_WRITE or WIN_READ */
	uint8		method;			/* PgBufFileMethod it was created with */

	/*
	 * Bit-fields: the struct is 64 bytes, one cache line, which the copies
	 * through the window touch beside the window itself.
	 */
	bool		named:1;		/* a FileSet's file (else private) */
	bool		readOnly:1;		/* opened read-only, or exported */
	bool		wrote:1;		/* report usage when done */
	bool		sealed:1;		/* created with pg_buffile.encryption on */
} PgBufFile;

StaticAssertDecl(BLCKSZ <= PG_UINT16_MAX,
				 "a window's sizes must fit in PgBufFile's 16-bit fields");
StaticAssertDecl(sizeof(PgBufFile) <= 64,
				 "PgBufFile must stay within a cache line");

#define WIN_NONE 0
#define WIN_WRITE 1
#define WIN_READ 2

/*
 * What this process wrote into our files, per method: the bytes written
 * and the bytes their blocks took on disk.  EXPLAIN (ANALYZE) shows the
 * difference over a query (see pg_buffile_explain_per_plan).
 */
typedef struct MethodUsage
{
	uint64		logical;
	uint64		physical;
} MethodUsage;

#define NUM_METHODS (METHOD_AUTO + 1)
static MethodUsage method_usage[NUM_METHODS];
static MethodUsage usage_at_start[NUM_METHODS];
static bool usage_started = false;

/* Set when the library stored blocks: see count_written(). */
static bool blocks_stored = false;

/*
 * The counters of pg_buffile_stats for one method: handles that wrote a
 * file, bytes written into them, bytes their blocks took on disk, and the
 * codec's time compressing and decompressing (bf_stats' figures).
 */
typedef struct MethodCounters
{
	uint64		files;
	uint64		logical;
	uint64		stored;
	uint64		compress_ns;
	uint64		decompress_ns;
} MethodCounters;

/*
 * The counters of a database.  The last of the slots (STATS_DATABASES) is
 * for processes of no database and for databases beyond the first
 * STATS_DATABASES seen since the last reset: the view shows it with no
 * database.
 */
#define STATS_DATABASES 64

typedef struct DatabaseStats
{
	Oid			dbid;			/* InvalidOid in a free slot */
	MethodCounters methods[NUM_METHODS];
} DatabaseStats;

/*
 * What this process's handles did since it last added to shared memory:
 * count_written() adds the bytes, stats_flush() moves them.
 */
static MethodCounters stats_pending[NUM_METHODS];

/*
 * What codec=auto learned of the temporary device, and the encryption key,
 * in shared memory: a process starts its space from the figures, and writes
 * back what its space learned when it destroys it.
 */
typedef struct PgBufFileShared
{
	slock_t		mutex;			/* protects device */
	bf_auto_device device;
	uint8		key[BF_KEY_BYTES];	/* drawn at server start */
	slock_t		stats_mutex;	/* protects stats_reset and stats */
	TimestampTz stats_reset;	/* server start or the last reset */
	DatabaseStats stats[STATS_DATABASES + 1];
} PgBufFileShared;

static PgBufFileShared *shared = NULL;

static bf_space *space = NULL;

/*
 * A memory context that files of ours were created in, and the child of it
 * that holds everything of theirs: the PgBufFile and the library's part of
 * each (its handle, block buffer and block map: the library's alloc_ctx).
 * The child's reset callback drops the files still open when it is deleted,
 * which happens, before its memory goes, when the parent is reset or
 * deleted.  Once registered a callback cannot be taken back (18 has no
 * MemoryContextUnregisterResetCallback), so the child lives as long as the
 * parent, not a file: it stays, with no file, when its last file is closed,
 * for the next one.
 *
 * The child is a generation context rather than a part of the parent: a
 * file's block map grows by reallocation, and in an aset.c context every
 * size it grows through stays on a free list that no later request of its
 * size takes, while a hash join's batch files all grow in step (a 2 MB
 * batch file left 8 kB of such chunks, besides its 4.6 kB map rounded up to
 * an 8 kB chunk).  A generation context gives a block back as soon as the
 * chunks carved from it are all freed, and rounds no request up to a power
 * of two.  Its blocks stay small (FILES_MAX_BLOCK), so that what is over
 * 512 bytes (a block buffer, a map past 32 blocks) is a block of its own,
 * given back when it is freed: with blocks of 64 kB, maps of up to 4 kB
 * shared blocks that any file still open kept, and the context kept two
 * empty blocks of 64 kB (docs/results/pg-memory.md).
 */
struct FileContext
{
	MemoryContextCallback callback;
	MemoryContext cxt;			/* the context the files were created in */
	MemoryContext mem;			/* its child "pg_buffile files" */
	dlist_head	files;			/* its open files */
	dlist_node	node;			/* in file_contexts */
};

#define FILES_MAX_BLOCK (8 * 1024)

static MemoryContext PgBufFileContext = NULL;
static dlist_head file_contexts = DLIST_STATIC_INIT(file_contexts);
static FileContext *last_fcxt = NULL;	/* the last one used, to find it fast */
static int64 open_files = 0;
static uint32 private_file_counter = 0;
static char space_parent[MAXPGPATH];	/* pgsql_tmp<pid>.buffile */
static bool exit_registered = false;
static bool used_auto = false;
static bool started_shared = false; /* the space started from shared figures */

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static explain_per_plan_hook_type prev_explain_per_plan = NULL;

/* EXPLAIN (TEMP_COMPRESSION): its state in an ExplainState */
static int	explain_extension_id;

/* For the I/O hooks: when the current transfer started, if timed. */
static bool io_timed = false;
static instr_time io_start_time;

static void PgBufFileDrop(PgBufFile *file);
static inline void window_end(PgBufFile *file);
static void pg_buffile_forget(PgBufFile *file);
static void ResOwnerReleasePgBufFile(Datum res);
static char *ResOwnerPrintPgBufFile(Datum res);

static const ResourceOwnerDesc pg_buffile_resowner_desc = {
	.name = "pg_buffile file",
	.release_phase = RESOURCE_RELEASE_AFTER_LOCKS,
	.release_priority = RELEASE_PRIO_FILES,
	.ReleaseResource = ResOwnerReleasePgBufFile,
	.DebugPrint = ResOwnerPrintPgBufFile,
};

/* ---- the library's allocations, in our memory context ---- */

#define ALLOC_FLAGS		(MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM)

/*
 * aset.c's ALLOC_CHUNK_LIMIT (private to it): the largest request it carves
 * from a context's blocks; a larger one is a malloc'd block of its own,
 * given back to malloc when freed.
 */
#define ASET_CHUNK_LIMIT	8192

/*
 * A request of a whole block, as the library's block buffers are, is made a
 * chunk of its own, as stock's BufFile is (its struct holds its buffer).
 * Carved from a hash join's spill context instead, the buffers of the files
 * a batch opens come from that context's blocks, which double (to 1 MB and
 * more, above glibc's mmap threshold) and outlive the buffers: nothing of
 * ours then lies in the heap above the batch's hash table, and glibc gives
 * the table's memory back to the kernel (trims) at every batch's reset, to
 * fault it in again for the next one.  Stock's buffers, malloc'd one by one
 * as the outer batch files open during the first batch, keep the top of the
 * heap in use.  XXX: this relies on aset.c's limit; a bigger BLCKSZ makes
 * the buffers chunks of their own anyway.
 */
static inline size_t
space_request(size_t size)
{
	return size >= BLCKSZ && size <= ASET_CHUNK_LIMIT ? ASET_CHUNK_LIMIT + 1 : size;
}

static void *
space_malloc(void *ctx, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) ctx, space_request(size),
									  ALLOC_FLAGS);
}

static void
space_free(void *ctx, void *ptr)
{
	if (ptr != NULL)
		pfree(ptr);
}

static void *
space_realloc(void *ctx, void *ptr, size_t size)
{
	if (ptr == NULL)
		return space_malloc(ctx, size);
	return repalloc_extended(ptr, space_request(size), ALLOC_FLAGS);
}

/* ---- the library's I/O, seen as stock's ---- */

static const uint32 io_wait_events[] = {
	[BF_IO_READ] = WAIT_EVENT_BUFFILE_READ,
	[BF_IO_WRITE] = WAIT_EVENT_BUFFILE_WRITE,
	[BF_IO_TRUNCATE] = WAIT_EVENT_BUFFILE_TRUNCATE,
};

static void
space_io_start(void *ctx, bf_io_op op)
{
	pgstat_report_wait_start(io_wait_events[op]);
	io_timed = track_io_timing && op != BF_IO_TRUNCATE;
	if (io_timed)
		INSTR_TIME_SET_CURRENT(io_start_time);
}

static void
space_io_done(void *ctx, bf_io_op op)
{
	pgstat_report_wait_end();
	if (io_timed)
	{
		instr_time	io_time;

		INSTR_TIME_SET_CURRENT(io_time);
		INSTR_TIME_SUBTRACT(io_time, io_start_time);
		if (op == BF_IO_READ)
			INSTR_TIME_ADD(pgBufferUsage.temp_blk_read_time, io_time);
		else
			INSTR_TIME_ADD(pgBufferUsage.temp_blk_write_time, io_time);
		io_timed = false;
	}
}

static void
space_blocks(void *ctx, bf_io_op op, uint64_t n)
{
	if (op == BF_IO_READ)
		pgBufferUsage.temp_blks_read += n;
	else
	{
		pgBufferUsage.temp_blks_written += n;
		blocks_stored = true;
	}
}

/*
 * After a library call on "file" that stored blocks, count the bytes
 * written into the file since the last count and the bytes they took on
 * disk, when blocks go to disk, as temp_blks_written is counted.
 */
static void
count_written(PgBufFile *file)
{
	uint64		logical;
	uint64		physical;

	if (!blocks_stored)
		return;
	blocks_stored = false;
	bf_file_written(file->bf, &logical, &physical);
	method_usage[file->method].logical += logical - file->logical_counted;
	method_usage[file->method].physical += physical - file->physical_counted;
	stats_pending[file->method].logical += logical - file->logical_counted;
	stats_pending[file->method].stored += physical - file->physical_counted;
	file->logical_counted = logical;
	file->physical_counted = physical;
}

/*
 * The library asks before it opens a descriptor: within fd.c's budget for
 * external descriptors, or, when it holds none it could close, beyond it.
 */
static int
space_fd_acquire(void *ctx, int must)
{
	if (AcquireExternalFD())
		return 1;
	if (must)
	{
		ReserveExternalFD();
		return 1;
	}
	return 0;
}

static void
space_fd_release(void *ctx)
{
	ReleaseExternalFD();
}

/* ---- errors ---- */

/*
 * Report a negative library status as an ERROR.  "msg" is a translatable
 * message about the file at "path", with %m for the errno of the failure
 * (marked with gettext_noop() by the caller), used for the failures
 * errcode_for_file_access() classifies; the others have messages of their
 * own.  The library's message is the detail.
 */
static void
pg_buffile_failure(int status, const char *path, const char *msg)
{
	const char *detail = space ? bf_space_errmsg(space) : "";
	int			save_errno;

	switch (status)
	{
		case BF_ELIMIT:
			/* fd.c's message */
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("temporary file size exceeds \"temp_file_limit\" (%dkB)",
							temp_file_limit)));
			break;
		case BF_ENOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail_internal("%s", detail)));
			break;
		case BF_ECORRUPT:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("temporary file \"%s\" is corrupted", path),
					 errdetail_internal("%s", detail)));
			break;
		case BF_EKEY:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("could not encrypt or decrypt temporary file \"%s\"",
							path),
					 errdetail_internal("%s", detail)));
			break;
		case BF_ECODEC:
		case BF_ENOCODEC:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not compress or decompress temporary file \"%s\"",
							path),
					 errdetail_internal("%s", detail)));
			break;
		case BF_EIO:
		case BF_ENOSPC:
		case BF_ENOENT:
			save_errno = space ? bf_space_errno(space) : 0;
			if (save_errno == 0)
				save_errno = (status == BF_ENOSPC) ? ENOSPC :
					(status == BF_ENOENT) ? ENOENT : EIO;
			errno = save_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg(msg, path),
					 errdetail_internal("%s", detail)));
			break;
		default:
			/* a bad argument or state: a bug of ours */
			elog(ERROR, "unexpected failure on temporary file \"%s\": %s",
				 path, detail);
	}
	pg_unreachable();
}

/* ---- shared memory ---- */

static void
pg_buffile_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(PgBufFileShared)));
}

static void
pg_buffile_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("pg_buffile", sizeof(PgBufFileShared), &found);
	if (!found)
	{
		bf_auto_device nothing = BF_AUTO_DEVICE_INIT;

		SpinLockInit(&shared->mutex);
		shared->device = nothing;
		SpinLockInit(&shared->stats_mutex);
		shared->stats_reset = GetCurrentTimestamp();
		memset(shared->stats, 0, sizeof(shared->stats));

		/*
		 * One key per server start, in shared memory only: the processes of a
		 * parallel query open each other's files, and the files a crash
		 * leaves behind cannot be read by anyone.
		 */
		if (!pg_strong_random(shared->key, sizeof(shared->key)))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate a key for encrypting temporary files")));
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Whether "device" holds anything codec=auto measured. */
static bool
auto_device_learned(const bf_auto_device *device)
{
	return device->device_runs > 0 || device->pace_windows > 0 ||
		device->share_windows > 0 || device->transfer_windows > 0 ||
		device->read_runs > 0 || device->read_transfer_windows > 0 ||
		device->read_share_windows > 0;
}

/* ---- the space ---- */

/*
 * Destroy the space and everything it holds in memory: at the end of a
 * transaction when no file is open, and at exit.  What auto learned of the
 * device goes to shared memory first.
 */
static void
pg_buffile_space_destroy(void)
{
	if (space == NULL)
		return;

	/*
	 * Under log_temp_files, say what auto chose in this space (the blocks it
	 * wrote per codec, its last decision, and whether it started from what
	 * other processes had learned), as the whole-file series said at exit; a
	 * space here lasts until the end of a transaction with no file open.
	 */
	if (used_auto && log_temp_files >= 0)
	{
		bf_stats	st;

		bf_space_stats(space, &st);
		ereport(LOG,
				(errmsg("temporary file compression auto: blocks written none %llu, lz4 %llu, zstd %llu, gzip %llu, probing %.1f ms",
						(unsigned long long) st.blocks_by_codec[0],
						(unsigned long long) st.blocks_by_codec[1],
						(unsigned long long) st.blocks_by_codec[2],
						(unsigned long long) st.blocks_by_codec[3],
						st.auto_probe_ns / 1e6),
				 errdetail_internal("Last decision: %s. Started from %s.",
									bf_space_auto_reason(space),
									started_shared ?
									"the device figures of earlier processes" :
									"nothing learned of the device")));
	}
	if (used_auto && shared != NULL)
	{
		bf_auto_device device;

		bf_space_auto_device(space, &device);
		if (auto_device_learned(&device))
		{
			SpinLockAcquire(&shared->mutex);
			shared->device = device;
			SpinLockRelease(&shared->mutex);
		}
	}
	used_auto = false;
	bf_space_destroy(space);
	space = NULL;
	if (rmdir(space_parent) < 0 && errno != ENOENT)
		elog(LOG, "could not remove directory \"%s\": %m", space_parent);
	MemoryContextReset(PgBufFileContext);
}

/*
 * Drop every file still open, before statistics and shared memory go.  A
 * process that exits inside a transaction (a FATAL error, a parallel worker
 * terminated while its leader is cancelled) runs this before
 * ShutdownPostgres aborts the transaction, as this callback was registered
 * later: each file is forgotten by its resource owner first, whose release
 * would otherwise drop it again from freed memory.
 */
static void
pg_buffile_before_shmem_exit(int code, Datum arg)
{
	dlist_iter	iter;

	dlist_foreach(iter, &file_contexts)
	{
		FileContext *fcxt = dlist_container(FileContext, node, iter.cur);

		while (!dlist_is_empty(&fcxt->files))
		{
			PgBufFile  *file = dlist_container(PgBufFile, node,
											   dlist_head_node(&fcxt->files));

			pg_buffile_forget(file);
			PgBufFileDrop(file);
		}
	}
	pg_buffile_space_destroy();
}

/* At the end of a top-level transaction, nothing stays when nothing is open. */
static void
pg_buffile_xact_callback(XactEvent event, void *arg)
{
	if ((event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		 event == XACT_EVENT_PARALLEL_COMMIT ||
		 event == XACT_EVENT_PARALLEL_ABORT) &&
		space != NULL && open_files == 0)
		pg_buffile_space_destroy();
}

static bf_space *
pg_buffile_space(void)
{
	bf_space_options opts;
	bf_io_hooks hooks = {
		.io_start = space_io_start,
		.io_done = space_io_done,
		.blocks = space_blocks,
		.fd_acquire = space_fd_acquire,
		.fd_release = space_fd_release,
	};
	bf_allocator allocator;
	bf_auto_device device = BF_AUTO_DEVICE_INIT;
	char		tempdir[MAXPGPATH];
	char		errbuf[256];
	int			status;

	if (space != NULL)
	{
		/* temp_file_limit may have changed since (it is PGC_SUSET) */
		bf_space_set_temp_limit(space, temp_file_limit < 0 ? 0 :
								(uint64) temp_file_limit * 1024);
		return space;
	}

	/*
	 * The space's own memory (codec contexts, scratch), never a file's: see
	 * current_file_context.  Blocks of at most 1 MB, so that the context
	 * holds at most 1 MB beyond its chunks.
	 */
	if (PgBufFileContext == NULL)
		PgBufFileContext = AllocSetContextCreate(TopMemoryContext,
												 "pg_buffile",
												 ALLOCSET_DEFAULT_MINSIZE,
												 ALLOCSET_DEFAULT_INITSIZE,
												 1024 * 1024);
	allocator.malloc_fn = space_malloc;
	allocator.realloc_fn = space_realloc;
	allocator.free_fn = space_free;
	allocator.ctx = PgBufFileContext;

	/*
	 * The library keeps a directory per space, which holds nothing of ours
	 * (every file we make is named), under a parent named like this process's
	 * temporary files, so that startup after a crash removes it.
	 */
	TempTablespacePath(tempdir, MyDatabaseTableSpace ? MyDatabaseTableSpace :
					   DEFAULTTABLESPACE_OID);
	snprintf(space_parent, sizeof(space_parent), "%s/%s%d.buffile",
			 tempdir, PG_TEMP_FILE_PREFIX, MyProcPid);
	PathNameCreateTemporaryDir(tempdir, space_parent);

	bf_space_options_init(&opts);
	opts.temp_dir = space_parent;
	opts.block_size = BLCKSZ;
	opts.codec = BF_CODEC_NONE;
	opts.temp_limit = temp_file_limit < 0 ? 0 : (uint64) temp_file_limit * 1024;
	opts.allocator = &allocator;
	opts.io_hooks = &hooks;
	if (shared != NULL)
	{
		SpinLockAcquire(&shared->mutex);
		device = shared->device;
		SpinLockRelease(&shared->mutex);
		started_shared = auto_device_learned(&device);
		/* files are sealed only when they ask (pg_buffile.encryption) */
		opts.key = shared->key;
	}
	opts.auto_device = &device;

	status = bf_space_create(&opts, &space, errbuf, sizeof(errbuf));

	/*
	 * A libbuffile built without libcrypto takes no key: compression works
	 * without it, and a file that asks to be sealed fails with BF_EKEY.
	 */
	if (status == BF_ENOCODEC && opts.key != NULL)
	{
		opts.key = NULL;
		status = bf_space_create(&opts, &space, errbuf, sizeof(errbuf));
	}
	if (status != BF_OK)
		ereport(ERROR,
				(status == BF_ENOMEM ? errcode(ERRCODE_OUT_OF_MEMORY) :
				 errcode(ERRCODE_IO_ERROR),
				 errmsg("could not set up compression of temporary files in \"%s\"",
						space_parent),
				 errdetail_internal("%s", errbuf)));

	if (!exit_registered)
	{
		before_shmem_exit(pg_buffile_before_shmem_exit, 0);
		RegisterXactCallback(pg_buffile_xact_callback, NULL);
		exit_registered = true;
	}
	return space;
}

/* Whether files created now are ours. */
static bool
pg_buffile_wanted(void)
{
	return buffile_method != METHOD_OFF || buffile_encryption;
}

/* The file options the settings ask for. */
static void
pg_buffile_options(bf_file_options *opts)
{
	int			method = buffile_method;

	bf_file_options_init(opts);
	/* pg_buffile.encryption alone: sealed, not compressed */
	if (method == METHOD_OFF)
		method = METHOD_NONE;
	opts->codec = method_codecs[method].codec;
	opts->level = BF_LEVEL_DEFAULT;
	if (buffile_level != 0)
	{
		if (buffile_level < method_codecs[method].min_level ||
			buffile_level > method_codecs[method].max_level)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"pg_buffile.level\" %d is not valid for method \"%s\"",
							buffile_level, method_options[method].name),
					 method_codecs[method].min_level == 0 &&
					 method_codecs[method].max_level == 0 ?
					 errdetail("Method \"%s\" accepts only level 0, its default.",
							   method_options[method].name) :
					 errdetail("Method \"%s\" accepts levels %d to %d, or 0 for its default.",
							   method_options[method].name,
							   method_codecs[method].min_level,
							   method_codecs[method].max_level)));
		opts->level = buffile_level;
	}
	opts->seal = buffile_encryption ? BF_SEAL_ON : BF_SEAL_OFF;
	opts->block_size = BLCKSZ;
	if (opts->codec == BF_CODEC_AUTO)
		used_auto = true;
}

/* ---- our files ---- */

/*
 * Reset callback of the child context that holds files of ours: drop those
 * still open, before their memory goes, and forget them in their resource
 * owners, whose release (later, at abort) would drop them again from freed
 * memory.
 */
static void
file_context_reset(void *arg)
{
	FileContext *fcxt = (FileContext *) arg;

	dlist_delete(&fcxt->node);
	if (last_fcxt == fcxt)
		last_fcxt = NULL;
	while (!dlist_is_empty(&fcxt->files))
	{
		PgBufFile  *file = dlist_container(PgBufFile, node,
										   dlist_head_node(&fcxt->files));

		pg_buffile_forget(file);
		PgBufFileDrop(file);
	}
}

/*
 * The FileContext of the current memory context, made (its child created
 * and the callback registered) at its first file.  Called before the
 * library's handle exists, so that an error here strands nothing.  Contexts
 * holding files are few (a query's spill contexts, a cursor's portal): the
 * last one used is found at once, the others by a walk of the list.
 */
static FileContext *
current_file_context(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext mem;
	FileContext *fcxt;
	dlist_iter	iter;

	if (last_fcxt != NULL && last_fcxt->cxt == cxt)
		return last_fcxt;
	dlist_foreach(iter, &file_contexts)
	{
		fcxt = dlist_container(FileContext, node, iter.cur);
		if (fcxt->cxt == cxt)
			return last_fcxt = fcxt;
	}
	mem = GenerationContextCreate(cxt, "pg_buffile files", 0,
								  ALLOCSET_SMALL_INITSIZE, FILES_MAX_BLOCK);
	fcxt = MemoryContextAlloc(mem, sizeof(FileContext));
	fcxt->cxt = cxt;
	fcxt->mem = mem;
	dlist_init(&fcxt->files);
	fcxt->callback.func = file_context_reset;
	fcxt->callback.arg = fcxt;
	MemoryContextRegisterResetCallback(mem, &fcxt->callback);
	dlist_push_head(&file_contexts, &fcxt->node);
	return last_fcxt = fcxt;
}

/*
 * Before a file is created or opened: room in the current resource owner,
 * and the file's memory where stock's would be, in the child of the
 * current memory context (current_file_context).  Either may raise an
 * error, which strands nothing yet.
 */
static FileContext *
file_prepare(bool interXact, bf_file_options *opts)
{
	FileContext *fcxt;

	if (!interXact)
		ResourceOwnerEnlarge(CurrentResourceOwner);
	fcxt = current_file_context();
	opts->alloc_ctx = fcxt->mem;
	return fcxt;
}

/*
 * Make the struct of a new library handle, in fcxt's child beside the
 * handle's memory (file_prepare), remember it in the current resource owner
 * (which has room) and on fcxt's list.  Allocated without raising an
 * error, so that running out of memory cannot strand the handle.
 */
static PgBufFile *
pg_buffile_remember(bf_file *bf, FileContext *fcxt, bool interXact,
					bool named)
{
	PgBufFile  *file;

	file = MemoryContextAllocExtended(fcxt->mem, sizeof(PgBufFile),
									  MCXT_ALLOC_NO_OOM | MCXT_ALLOC_ZERO);
	if (file == NULL)
	{
		(void) bf_file_abort(bf);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	}
	file->bf = bf;
	file->named = named;
	if (!interXact)
	{
		file->resowner = CurrentResourceOwner;
		ResourceOwnerRemember(file->resowner, PointerGetDatum(file),
							  &pg_buffile_resowner_desc);
	}
	dlist_push_head(&fcxt->files, &file->node);
	open_files++;
	return file;
}

/* The path a file's segment files start with, into buf (MAXPGPATH bytes). */
static char *
file_path(PgBufFile *file, char *buf)
{
	bf_file_path(file->bf, buf, MAXPGPATH);
	return buf;
}

/* Report a failure on "file" (see pg_buffile_failure). */
static void
file_failure(PgBufFile *file, int status, const char *msg)
{
	char		path[MAXPGPATH];

	pg_buffile_failure(status, file_path(file, path), msg);
}

/* Take a file off its context's list and free it: it is closed or dropped. */
static void
pg_buffile_free(PgBufFile *file)
{
	dlist_delete(&file->node);
	open_files--;
	pfree(file);
}

/*
 * Add what this process's handles did to the counters of pg_buffile_stats
 * in shared memory, under this process's database, and clear them.
 */
static void
stats_flush(void)
{
	DatabaseStats *db = NULL;
	bool		any = false;

	for (int m = 0; m < NUM_METHODS; m++)
	{
		if (stats_pending[m].files != 0 || stats_pending[m].logical != 0 ||
			stats_pending[m].stored != 0 || stats_pending[m].compress_ns != 0 ||
			stats_pending[m].decompress_ns != 0)
			any = true;
	}
	if (!any || shared == NULL)
		return;

	SpinLockAcquire(&shared->stats_mutex);
	if (OidIsValid(MyDatabaseId))
	{
		for (int i = 0; i < STATS_DATABASES; i++)
		{
			if (shared->stats[i].dbid == MyDatabaseId)
			{
				db = &shared->stats[i];
				break;
			}
			if (!OidIsValid(shared->stats[i].dbid))
			{
				db = &shared->stats[i];
				db->dbid = MyDatabaseId;
				break;
			}
		}
	}
	if (db == NULL)
		db = &shared->stats[STATS_DATABASES];
	for (int m = 0; m < NUM_METHODS; m++)
	{
		db->methods[m].files += stats_pending[m].files;
		db->methods[m].logical += stats_pending[m].logical;
		db->methods[m].stored += stats_pending[m].stored;
		db->methods[m].compress_ns += stats_pending[m].compress_ns;
		db->methods[m].decompress_ns += stats_pending[m].decompress_ns;
	}
	SpinLockRelease(&shared->stats_mutex);
	memset(stats_pending, 0, sizeof(stats_pending));
}

/*
 * Report a handle's usage to pg_buffile_stats: what it wrote since the last
 * report and, when it is the handle's "last" (close or drop, not export),
 * its codec time, a reader's too.  The time is added once, as the handle's
 * total, so that a file's struct keeps no count of it: with a hundred
 * thousand files open, 16 bytes more would take it into allocation
 * chunks twice the size.  For a written private file, pg_stat_database's
 * temp_files and temp_bytes and, under log_temp_files, the log line, in
 * physical bytes; a FileSet file is reported when it is deleted (see the
 * head of this file).
 */
static void
pg_buffile_report_usage(PgBufFile *file, bool last)
{
	bf_stats	st;
	bool		have_stats = false;
	MethodCounters *pending = &stats_pending[file->method];

	if (last)
	{
		bf_file_stats(file->bf, &st);
		have_stats = true;
		pending->compress_ns += st.compress_ns;
		pending->decompress_ns += st.decompress_ns;
	}
	if (file->wrote)
		pending->files++;
	stats_flush();

	/*
	 * Under DEBUG1, what the handle wrote and what that took on disk, with
	 * the memory context it was created in: the hook is not told which
	 * BufFile user made a file, the context says it (a hash join's
	 * HashSpillContext, a sort's TupleSort main, a tuplestore's caller's), so
	 * that bytes stored beyond those written can be traced to a user.  The
	 * file's sizes at the end (logical, on disk) beside them tell rewrites.
	 */
	if (last && message_level_is_interesting(DEBUG1))
	{
		uint64		logical;
		uint64		physical;
		char		path[MAXPGPATH];

		bf_file_written(file->bf, &logical, &physical);
		if (logical != 0 || physical != 0)
			elog(DEBUG1, "pg_buffile: file \"%s\" (%s, context \"%s\"): written %llu, stored %llu, size %llu, on disk %llu",
				 file_path(file, path), file->named ? "fileset" : "private",
				 GetMemoryChunkContext(file)->name,
				 (unsigned long long) logical, (unsigned long long) physical,
				 (unsigned long long) st.logical_bytes,
				 (unsigned long long) st.physical_bytes);
	}

	if (!file->wrote)
		return;
	file->wrote = false;
	if (file->named)
		return;
	if (!have_stats)
		bf_file_stats(file->bf, &st);
	pgstat_report_tempfile((size_t) st.physical_bytes);
	if (log_temp_files >= 0 &&
		st.physical_bytes / 1024 >= (uint64) log_temp_files)
	{
		char		path[MAXPGPATH];

		ereport(LOG,
				(errmsg("temporary file: path \"%s\", size %llu, logical size %llu, method %s%s",
						file_path(file, path),
						(unsigned long long) st.physical_bytes,
						(unsigned long long) st.logical_bytes,
						bf_space_codec_name(space, bf_file_codec(file->bf)),
						file->sealed ? ", encrypted" : "")));
	}
}

/*
 * Drop a file without persisting anything: for aborts, contexts that go
 * with the file open, and exit, where a FileSet's directory may be gone
 * already.  Never raises an error.  The caller forgets it in its resource
 * owner.
 */
static void
PgBufFileDrop(PgBufFile *file)
{
	/*
	 * What went through the window counts in the usage reported; an advance
	 * that fails is no error here.
	 */
	if (file->win_mode == WIN_WRITE)
		(void) bf_file_write_advance(file->bf, file->win_used);
	else if (file->win_mode == WIN_READ)
		(void) bf_file_read_advance(file->bf, file->win_used);
	file->win_mode = WIN_NONE;
	pg_buffile_report_usage(file, true);
	(void) bf_file_abort(file->bf);
	pg_buffile_free(file);
}

/*
 * Resource-owner callback: drop a file of the owner being released, as fd.c
 * closes its temporary files at abort; once no file is left, the space.
 */
static void
ResOwnerReleasePgBufFile(Datum res)
{
	PgBufFileDrop((PgBufFile *) DatumGetPointer(res));
	if (open_files == 0)
		pg_buffile_space_destroy();
}

static char *
ResOwnerPrintPgBufFile(Datum res)
{
	PgBufFile  *file = (PgBufFile *) DatumGetPointer(res);
	char		path[MAXPGPATH];

	return psprintf("pg_buffile file \"%s\"", file_path(file, path));
}

/* Forget a file in its resource owner: it is closed or appended. */
static void
pg_buffile_forget(PgBufFile *file)
{
	if (file->resowner != NULL)
		ResourceOwnerForget(file->resowner, PointerGetDatum(file),
							&pg_buffile_resowner_desc);
	file->resowner = NULL;
}

/*
 * Create the named file "name" in "dir", replacing an older file of that
 * name (an orphan of an earlier process), as stock's O_TRUNC does.
 */
static int
create_named(bf_space *sp, const char *dir, const char *name,
			 const bf_file_options *opts, bf_file **bf)
{
	int			status = bf_file_create_named(sp, dir, name, opts, bf);

	if (status == BF_EEXIST && bf_file_delete_named(sp, dir, name) == BF_OK)
		status = bf_file_create_named(sp, dir, name, opts, bf);
	return status;
}

/* Remember the file created in "dir", or report why it could not be. */
static PgBufFile *
finish_create(int status, bf_file *bf, FileContext *fcxt, char *dir,
			  const char *name, bool interXact, bool named)
{
	PgBufFile  *file;

	if (status != BF_OK)
	{
		snprintf(dir + strlen(dir), MAXPGPATH - strlen(dir), "/%s", name);
		pg_buffile_failure(status, dir,
						   gettext_noop("could not create temporary file \"%s\": %m"));
	}
	file = pg_buffile_remember(bf, fcxt, interXact, named);
	file->wrote = true;
	file->sealed = buffile_encryption;
	file->method = buffile_method == METHOD_OFF ? METHOD_NONE : buffile_method;
	return file;
}

/*
 * The directory of the FileSet for "name", from the marker of ours, the
 * first segment of our file: created when "create", else opened.  Returns
 * false when there is no marker to open (the file is not ours).
 *
 * The empty file FileSetCreate() made is removed here, so that the library
 * creates its segment in its place (with O_EXCL), and without fd.c's
 * PathNameDeleteTemporaryFile(), which would count it as a temporary file.
 *
 * fd.c remembers the marker's File in the current resource owner while it
 * is open.  BufFileDeleteFileSet() may be called with none: the apply
 * worker of logical replication deletes a streamed transaction's files
 * after its commit, between transactions.  A resource owner of ours then
 * holds the File for the moment it is open.
 */
static bool
fileset_directory(FileSet *fileset, const char *name, char *dir, bool create)
{
	char		marker[MAXPGPATH];
	File		file;
	char	   *slash;
	ResourceOwner saved_owner = CurrentResourceOwner;
	ResourceOwner owner = NULL;

	snprintf(marker, sizeof(marker), "%s%s", name, FILESET_MARKER_SUFFIX);
	if (CurrentResourceOwner == NULL)
	{
		owner = ResourceOwnerCreate(NULL, "pg_buffile marker");
		CurrentResourceOwner = owner;
	}
	PG_TRY();
	{
		if (create)
			file = FileSetCreate(fileset, marker);
		else
			file = FileSetOpen(fileset, marker, O_RDONLY);
		if (file > 0)
		{
			strlcpy(dir, FilePathName(file), MAXPGPATH);
			FileClose(file);
			if (create && unlink(dir) < 0 && errno != ENOENT)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not delete file \"%s\": %m", dir)));
		}
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = saved_owner;
		if (owner != NULL)
		{
			/* closes the marker if an error left it open */
			ResourceOwnerRelease(owner, RESOURCE_RELEASE_BEFORE_LOCKS,
								 false, true);
			ResourceOwnerRelease(owner, RESOURCE_RELEASE_LOCKS, false, true);
			ResourceOwnerRelease(owner, RESOURCE_RELEASE_AFTER_LOCKS,
								 false, true);
			ResourceOwnerDelete(owner);
		}
	}
	PG_END_TRY();
	if (file <= 0)
		return false;
	slash = strrchr(dir, '/');
	Assert(slash != NULL);
	*slash = '\0';
	return true;
}

/* ---- the callbacks of buffile_storage_hook ---- */

/*
 * Create a private temporary file, deleted at close.  Its tablespace is
 * chosen as OpenTemporaryFile chooses it; a missing temporary directory is
 * created, and a temp tablespace that does not work falls back to the
 * database's, as stock does.
 */
static void *
pg_buffile_create_temp(bool interXact)
{
	bf_space   *sp;
	bf_file_options opts;
	Oid			tblspc = InvalidOid;
	Oid			deftblspc = MyDatabaseTableSpace ? MyDatabaseTableSpace :
		DEFAULTTABLESPACE_OID;
	char		dir[MAXPGPATH];
	char		name[64];
	bf_file    *bf = NULL;
	FileContext *fcxt;
	int			status;

	if (!pg_buffile_wanted())
		return NULL;
	pg_buffile_options(&opts);
	fcxt = file_prepare(interXact, &opts);
	sp = pg_buffile_space();
	if (!interXact)
		tblspc = GetNextTempTableSpace();
	if (!OidIsValid(tblspc))
		tblspc = deftblspc;
	snprintf(name, sizeof(name), "%s%d.%u", PG_TEMP_FILE_PREFIX, MyProcPid,
			 private_file_counter++);

	for (;;)
	{
		TempTablespacePath(dir, tblspc);
		status = create_named(sp, dir, name, &opts, &bf);
		if (status == BF_ENOENT)
		{
			/* the tablespace's temporary directory is missing */
			(void) MakePGDirectory(dir);
			status = create_named(sp, dir, name, &opts, &bf);
		}
		if (status == BF_OK || tblspc == deftblspc)
			break;
		tblspc = deftblspc;
	}
	return finish_create(status, bf, fcxt, dir, name, interXact, false);
}

/*
 * Create a file of a FileSet, which other backends open by name once it is
 * exported or closed.  An older file of the same name is replaced, as stock
 * truncates it.
 */
static void *
pg_buffile_create_fileset(FileSet *fileset, const char *name)
{
	bf_space   *sp;
	char		dir[MAXPGPATH];
	char		bfname[MAXPGPATH];
	bf_file_options opts;
	bf_file    *bf = NULL;
	FileContext *fcxt;
	int			status;

	if (!pg_buffile_wanted())
		return NULL;
	pg_buffile_options(&opts);
	fcxt = file_prepare(false, &opts);
	sp = pg_buffile_space();
	fileset_directory(fileset, name, dir, true);
	snprintf(bfname, sizeof(bfname), "%s%s", name, FILESET_SUFFIX);
	status = create_named(sp, dir, bfname, &opts, &bf);
	return finish_create(status, bf, fcxt, dir, bfname, false, true);
}

/* Open a file of a FileSet, if it is ours.  mode is O_RDONLY or O_RDWR. */
static void *
pg_buffile_open_fileset(FileSet *fileset, const char *name, int mode)
{
	bf_space   *sp;
	char		dir[MAXPGPATH];
	char		bfname[MAXPGPATH];
	bool		readOnly = ((mode & O_ACCMODE) == O_RDONLY);
	bf_file_options opts;
	PgBufFile  *file;
	FileContext *fcxt;
	bf_file    *bf = NULL;
	int			status;

	if (!fileset_directory(fileset, name, dir, false))
		return NULL;
	sp = pg_buffile_space();
	snprintf(bfname, sizeof(bfname), "%s%s", name, FILESET_SUFFIX);
	bf_file_options_init(&opts);
	fcxt = file_prepare(false, &opts);
	status = bf_file_open_named_opts(sp, dir, bfname,
									 readOnly ? BF_OPEN_READONLY : BF_OPEN_READWRITE,
									 &opts, &bf);
	if (status != BF_OK)
	{
		snprintf(dir + strlen(dir), MAXPGPATH - strlen(dir), "/%s", bfname);
		pg_buffile_failure(status, dir,
						   gettext_noop("could not open temporary file \"%s\": %m"));
	}
	file = pg_buffile_remember(bf, fcxt, false, true);
	file->readOnly = readOnly;
	file->wrote = !readOnly;
	for (int m = METHOD_NONE; m < NUM_METHODS; m++)
	{
		if (method_codecs[m].codec == bf_file_codec(bf))
			file->method = m;
	}
	if (!readOnly)
		bf_file_written(bf, &file->logical_counted, &file->physical_counted);
	return file;
}

/*
 * Delete a file of a FileSet, if it is ours.  Its segments are reported as
 * stock's BufFileDeleteFileSet() reports its own (fd.c's
 * ReportTemporaryFileUsage()): each one, at its size on disk, in
 * pg_stat_database and under log_temp_files with fd.c's message.  Their
 * sizes are taken before the library deletes them, so that a file it
 * refuses to delete (one appended onto another) is not counted.
 */
static bool
pg_buffile_delete_fileset(FileSet *fileset, const char *name)
{
	bf_space   *sp;
	char		dir[MAXPGPATH];
	char		bfname[MAXPGPATH];
	char		path[MAXPGPATH];
	off_t	   *sizes;
	int			nsegments = 0;
	int			capacity = 4;
	int			status;

	if (!fileset_directory(fileset, name, dir, false))
		return false;
	sp = pg_buffile_space();
	snprintf(bfname, sizeof(bfname), "%s%s", name, FILESET_SUFFIX);
	sizes = palloc(sizeof(off_t) * capacity);
	for (;;)
	{
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s.%d", dir, bfname, nsegments);
		if (stat(path, &st) < 0)
			break;
		if (nsegments == capacity)
		{
			capacity *= 2;
			sizes = repalloc(sizes, sizeof(off_t) * capacity);
		}
		sizes[nsegments++] = st.st_size;
	}
	status = bf_file_delete_named(sp, dir, bfname);
	if (status != BF_OK && status != BF_ENOENT)
	{
		snprintf(path, sizeof(path), "%s/%s", dir, bfname);
		pg_buffile_failure(status, path,
						   gettext_noop("could not delete temporary file \"%s\": %m"));
	}
	for (int segment = 0; segment < nsegments; segment++)
	{
		snprintf(path, sizeof(path), "%s/%s.%d", dir, bfname, segment);
		pgstat_report_tempfile(sizes[segment]);
		if (log_temp_files >= 0 && sizes[segment] / 1024 >= log_temp_files)
			ereport(LOG,
					(errmsg("temporary file: path \"%s\", size %lu",
							path, (unsigned long) sizes[segment])));
	}
	pfree(sizes);
	return true;
}

static void
pg_buffile_export_fileset(void *state)
{
	PgBufFile  *file = state;
	int			status;

	Assert(file->named);
	Assert(!file->readOnly);

	window_end(file);
	status = bf_file_flush(file->bf);
	count_written(file);
	if (status == BF_OK)
	{
		pg_buffile_report_usage(file, false);
		status = bf_file_export(file->bf);
	}
	if (status != BF_OK)
		file_failure(file, status,
					 gettext_noop("could not write to temporary file \"%s\": %m"));
	file->readOnly = true;
}

/*
 * Close a file: a private one is removed, a FileSet one persists its index
 * if it was written through this handle, and stays.  The buffered block is
 * written first in both cases, as stock's BufFileClose flushes.
 */
static void
pg_buffile_close(void *state)
{
	PgBufFile  *file = state;
	int			status = BF_OK;
	char		path[MAXPGPATH];
	bool		named = file->named;

	window_end(file);
	if (!file->readOnly)
		status = bf_file_flush(file->bf);
	count_written(file);
	if (status != BF_OK)
		file_failure(file, status,
					 gettext_noop("could not write to temporary file \"%s\": %m"));
	pg_buffile_report_usage(file, true);
	pg_buffile_forget(file);
	file_path(file, path);		/* for a message after the handle is gone */
	if (named)
		status = bf_file_close(file->bf);
	else
		status = bf_file_abort(file->bf);
	pg_buffile_free(file);
	if (status != BF_OK)
	{
		/*
		 * A FileSet file that could not persist its index is rolled back by
		 * the library: its writer must hear of it.  A private file that could
		 * not be removed is only logged, as fd.c does.
		 */
		if (named)
			pg_buffile_failure(status, path,
							   gettext_noop("could not write to temporary file \"%s\": %m"));
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not delete temporary file \"%s\"", path),
				 errdetail_internal("%s", bf_space_errmsg(space))));
	}
}

/*
 * Advance the library over what was copied through the window, and close
 * it.  An advance within the window the library gave cannot fail; if it
 * did, the bytes are lost to the file, which is an error of the write (or
 * read) that put them there.
 */
static void
window_settle(PgBufFile *file)
{
	uint8		mode = file->win_mode;
	size_t		used = file->win_used;
	int			status = BF_OK;

	file->win_mode = WIN_NONE;
	file->win = NULL;
	file->win_room = 0;
	file->win_used = 0;
	if (used == 0)
		return;
	if (mode == WIN_WRITE)
		status = bf_file_write_advance(file->bf, used);
	else
		status = bf_file_read_advance(file->bf, used);
	if (status != BF_OK)
		file_failure(file, status, mode == WIN_WRITE ?
					 gettext_noop("could not write to temporary file \"%s\": %m") :
					 gettext_noop("could not read from temporary file \"%s\": %m"));
}

/* Before any call of the library on the handle but the windows' copies. */
static inline void
window_end(PgBufFile *file)
{
	if (file->win_mode != WIN_NONE)
		window_settle(file);
}

/*
 * A read or write that does not fit in the window (or finds none) ends it,
 * goes to the library, and opens the next one at the new position: the
 * library offers one within the block it buffers now, if any.
 */
static void
window_open(PgBufFile *file, uint8 mode)
{
	if (mode == WIN_WRITE)
	{
		void	   *w;

		file->win_room = bf_file_write_window(file->bf, &w);
		file->win = w;
	}
	else
	{
		const void *r;

		file->win_room = bf_file_read_window(file->bf, &r);
		file->win = (char *) r; /* only read through, as WIN_READ */
	}
	file->win_used = 0;
	file->win_mode = file->win_room > 0 ? mode : WIN_NONE;
}

/*
 * The reads and writes that go to the library, apart from the copies
 * through the window (pg_buffile_read, pg_buffile_write), so that those
 * save no registers for them.
 */
static pg_noinline size_t
pg_buffile_read_call(PgBufFile *file, void *ptr, size_t size)
{
	int64		nread;

	window_end(file);
	nread = bf_file_read(file->bf, ptr, size);
	count_written(file);
	if (nread < 0)
		file_failure(file, (int) nread,
					 gettext_noop("could not read from temporary file \"%s\": %m"));
	window_open(file, WIN_READ);
	return (size_t) nread;
}

static pg_noinline void
pg_buffile_write_call(PgBufFile *file, const void *ptr, size_t size)
{
	int			status;

	window_end(file);
	status = bf_file_write(file->bf, ptr, size);
	count_written(file);
	if (status != BF_OK)
		file_failure(file, status,
					 gettext_noop("could not write to temporary file \"%s\": %m"));
	window_open(file, WIN_WRITE);
}

static size_t
pg_buffile_read(void *state, void *ptr, size_t size)
{
	PgBufFile  *file = state;
	size_t		used = file->win_used;

	if (likely(file->win_mode == WIN_READ && size <= file->win_room - used))
	{
		file->win_used = used + size;
		memcpy(ptr, file->win + used, size);
		return size;
	}
	return pg_buffile_read_call(file, ptr, size);
}

static void
pg_buffile_write(void *state, const void *ptr, size_t size)
{
	PgBufFile  *file = state;
	size_t		used = file->win_used;

	Assert(!file->readOnly);
	if (likely(file->win_mode == WIN_WRITE && size <= file->win_room - used))
	{
		file->win_used = used + size;
		memcpy(file->win + used, ptr, size);
		return;
	}
	pg_buffile_write_call(file, ptr, size);
}

/*
 * Like stock's BufFileSeek: SEEK_SET to (fileno, offset), SEEK_CUR by offset
 * (fileno ignored), SEEK_END to the end.  Returns EOF, leaving the position,
 * for what stock refuses: before the start, or past the segment that holds
 * the end of the file.
 */
static int
pg_buffile_seek(void *state, int fileno, pgoff_t offset, int whence)
{
	PgBufFile  *file = state;
	int64		size;
	int64		pos;
	int64		nsegs;
	int64		target;
	int			status;

	window_end(file);
	size = (int64) bf_file_size(file->bf);
	pos = (int64) bf_file_tell(file->bf);
	switch (whence)
	{
		case SEEK_SET:
			if (fileno < 0)
				return EOF;
			target = (int64) fileno * SEGMENT_SIZE + offset;
			break;
		case SEEK_CUR:
			target = pos + offset;
			break;
		case SEEK_END:
			target = size;
			break;
		default:
			elog(ERROR, "invalid whence: %d", whence);
			return EOF;
	}

	/* The segments stock would have for this size: at least one. */
	nsegs = Max((size + SEGMENT_SIZE - 1) / SEGMENT_SIZE, 1);
	if (target < 0 || target > nsegs * SEGMENT_SIZE)
		return EOF;

	/*
	 * Leaving the block the position is in: write out and drop the buffered
	 * block, as stock writes out its buffer, so that the next access of that
	 * block loads it and is counted as stock's is.
	 */
	status = BF_OK;
	if (target / BLCKSZ != pos / BLCKSZ)
		status = bf_file_release_buffer(file->bf);
	if (status == BF_OK)
		status = bf_file_seek(file->bf, target, BF_SEEK_SET);
	count_written(file);
	if (status != BF_OK)
		file_failure(file, status,
					 gettext_noop("could not write to temporary file \"%s\": %m"));
	return 0;
}

static void
pg_buffile_tell(void *state, int *fileno, pgoff_t *offset)
{
	PgBufFile  *file = state;
	uint64		pos;

	window_end(file);
	pos = bf_file_tell(file->bf);
	*fileno = (int) (pos / SEGMENT_SIZE);
	*offset = (pgoff_t) (pos % SEGMENT_SIZE);
}

static int64
pg_buffile_size(void *state)
{
	PgBufFile  *file = state;

	window_end(file);
	return (int64) bf_file_size(file->bf);
}

/*
 * Append "source", a read-only file of the target's FileSet, without
 * copying: its data start at the first block boundary at or after the
 * target's end, whose block number is returned.  The source's handle is
 * closed at once: the target reads the source's data through its own (the
 * library's parts), so that nothing of the source is left to outlive its
 * memory context.
 */
static int64
pg_buffile_append(void *target_state, void *source_state)
{
	PgBufFile  *target = target_state;
	PgBufFile  *source = source_state;
	uint64		start;
	int			status;

	Assert(target->named);
	Assert(source->named);
	Assert(source->readOnly);

	if (target->resowner != source->resowner)
		elog(ERROR, "could not append BufFile with non-matching resource owner");

	window_end(target);
	window_end(source);
	status = bf_file_append(target->bf, source->bf, &start);
	count_written(target);
	if (status != BF_OK)
		file_failure(target, status,
					 gettext_noop("could not write to temporary file \"%s\": %m"));

	pg_buffile_report_usage(source, true);
	pg_buffile_forget(source);
	(void) bf_file_close(source->bf);	/* read-only: nothing to lose */
	pg_buffile_free(source);

	Assert(start % BLCKSZ == 0);
	return (int64) (start / BLCKSZ);
}

/*
 * Truncate a FileSet file to (fileno, offset).  A position past the new end
 * moves to the end; one before it stays.
 */
static void
pg_buffile_truncate_fileset(void *state, int fileno, pgoff_t offset)
{
	PgBufFile  *file = state;
	uint64		newsize = (uint64) fileno * SEGMENT_SIZE + offset;
	int			status;

	Assert(file->named);

	window_end(file);
	status = bf_file_truncate(file->bf, newsize);
	if (status == BF_OK && bf_file_tell(file->bf) > newsize)
		status = bf_file_seek(file->bf, (int64) newsize, BF_SEEK_SET);
	count_written(file);
	if (status != BF_OK)
		file_failure(file, status,
					 gettext_noop("could not truncate file \"%s\": %m"));
}

static const BufFileStorageMethods pg_buffile_methods = {
	.create_temp = pg_buffile_create_temp,
	.create_fileset = pg_buffile_create_fileset,
	.open_fileset = pg_buffile_open_fileset,
	.delete_fileset = pg_buffile_delete_fileset,
	.close = pg_buffile_close,
	.read = pg_buffile_read,
	.write = pg_buffile_write,
	.seek = pg_buffile_seek,
	.tell = pg_buffile_tell,
	.size = pg_buffile_size,
	.append = pg_buffile_append,
	.export_fileset = pg_buffile_export_fileset,
	.truncate_fileset = pg_buffile_truncate_fileset,
};

/* ---- EXPLAIN ---- */

/*
 * At the start of a top-level query run under EXPLAIN (ANALYZE), remember
 * what this process has written so far.
 */
static void
pg_buffile_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	if (queryDesc->instrument_options != 0 &&
		!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
	{
		memcpy(usage_at_start, method_usage, sizeof(method_usage));
		usage_started = true;
	}
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/* The option TEMP_COMPRESSION of EXPLAIN: a boolean, remembered in "es". */
static void
pg_buffile_explain_option(ExplainState *es, DefElem *opt, ParseState *pstate)
{
	bool	   *enabled = GetExplainExtensionState(es, explain_extension_id);

	if (enabled == NULL)
	{
		enabled = palloc(sizeof(bool));
		SetExplainExtensionState(es, explain_extension_id, enabled);
	}
	*enabled = defGetBoolean(opt);
}

/*
 * EXPLAIN (ANALYZE, TEMP_COMPRESSION): what the query wrote into our files
 * in this process (a parallel worker's files are not counted), per method:
 * bytes written and bytes stored on disk.  In text, "Temp Compression: lz4
 * written=...kB stored=...kB" when anything was written, as "Buffers:"
 * shows what is non-zero; in the structured formats every method with its
 * fixed keys, zero or not.
 */
static void
pg_buffile_explain_per_plan(PlannedStmt *plannedstmt, IntoClause *into,
							ExplainState *es, const char *queryString,
							ParamListInfo params, QueryEnvironment *queryEnv)
{
	bool	   *enabled;

	if (prev_explain_per_plan)
		prev_explain_per_plan(plannedstmt, into, es, queryString, params,
							  queryEnv);
	enabled = GetExplainExtensionState(es, explain_extension_id);
	if (enabled == NULL || !*enabled || !es->analyze || !usage_started)
		return;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		bool		first = true;

		for (int m = METHOD_NONE; m < NUM_METHODS; m++)
		{
			uint64		logical = method_usage[m].logical - usage_at_start[m].logical;
			uint64		physical = method_usage[m].physical - usage_at_start[m].physical;

			if (logical == 0 && physical == 0)
				continue;
			if (first)
			{
				ExplainIndentText(es);
				appendStringInfoString(es->str, "Temp Compression:");
				first = false;
			}
			else
				appendStringInfoChar(es->str, ',');
			appendStringInfo(es->str, " %s written=%llukB stored=%llukB",
							 method_options[m].name,
							 (unsigned long long) ((logical + 1023) / 1024),
							 (unsigned long long) ((physical + 1023) / 1024));
		}
		if (!first)
			appendStringInfoChar(es->str, '\n');
	}
	else
	{
		ExplainOpenGroup("Temp Compression", "Temp Compression", true, es);
		for (int m = METHOD_NONE; m < NUM_METHODS; m++)
		{
			ExplainOpenGroup(method_options[m].name, method_options[m].name,
							 true, es);
			ExplainPropertyUInteger("Written", "kB",
									(method_usage[m].logical - usage_at_start[m].logical + 1023) / 1024,
									es);
			ExplainPropertyUInteger("Stored", "kB",
									(method_usage[m].physical - usage_at_start[m].physical + 1023) / 1024,
									es);
			ExplainCloseGroup(method_options[m].name, method_options[m].name,
							  true, es);
		}
		ExplainCloseGroup("Temp Compression", "Temp Compression", true, es);
	}
}

/* ---- the cumulative view ---- */

PG_FUNCTION_INFO_V1(pg_buffile_stats);
PG_FUNCTION_INFO_V1(pg_buffile_stats_reset);

/*
 * pg_buffile_stats(): a row per database and method that has counted
 * anything since the last reset, for the view of the same name.  Times in
 * milliseconds, as pg_stat_database's.  The counters are copied under the
 * lock first: the rows are made without holding it.
 */
Datum
pg_buffile_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DatabaseStats *copy;
	TimestampTz reset;

	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_buffile must be loaded via \"shared_preload_libraries\"")));
	InitMaterializedSRF(fcinfo, 0);

	/* what this process has not added yet, for its own queries' sake */
	stats_flush();
	copy = palloc(sizeof(shared->stats));
	SpinLockAcquire(&shared->stats_mutex);
	memcpy(copy, shared->stats, sizeof(shared->stats));
	reset = shared->stats_reset;
	SpinLockRelease(&shared->stats_mutex);

	for (int i = 0; i <= STATS_DATABASES; i++)
	{
		for (int m = METHOD_NONE; m < NUM_METHODS; m++)
		{
			MethodCounters *c = &copy[i].methods[m];
			Datum		values[8];
			bool		nulls[8] = {0};

			if (c->files == 0 && c->logical == 0 && c->stored == 0 &&
				c->compress_ns == 0 && c->decompress_ns == 0)
				continue;
			if (OidIsValid(copy[i].dbid))
				values[0] = ObjectIdGetDatum(copy[i].dbid);
			else
				nulls[0] = true;
			values[1] = CStringGetTextDatum(method_options[m].name);
			values[2] = Int64GetDatum((int64) c->files);
			values[3] = Int64GetDatum((int64) c->logical);
			values[4] = Int64GetDatum((int64) c->stored);
			values[5] = Float8GetDatum((double) c->compress_ns / 1000000.0);
			values[6] = Float8GetDatum((double) c->decompress_ns / 1000000.0);
			values[7] = TimestampTzGetDatum(reset);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 values, nulls);
		}
	}
	pfree(copy);
	return (Datum) 0;
}

/* pg_buffile_stats_reset(): zero every counter; returns the reset's time. */
Datum
pg_buffile_stats_reset(PG_FUNCTION_ARGS)
{
	TimestampTz now = GetCurrentTimestamp();

	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_buffile must be loaded via \"shared_preload_libraries\"")));
	SpinLockAcquire(&shared->stats_mutex);
	memset(shared->stats, 0, sizeof(shared->stats));
	shared->stats_reset = now;
	SpinLockRelease(&shared->stats_mutex);
	PG_RETURN_TIMESTAMPTZ(now);
}

/* ---- settings' checks ---- */

static bool
check_method(int *newval, void **extra, GucSource source)
{
	bf_codec	codec = method_codecs[*newval].codec;

	if (*newval != METHOD_OFF && codec != BF_CODEC_AUTO &&
		!bf_codec_available(codec))
	{
		GUC_check_errdetail("Compression method \"%s\" is not supported by this build of libbuffile.",
							method_options[*newval].name);
		return false;
	}
	return true;
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_buffile must be loaded via \"shared_preload_libraries\"")));

	DefineCustomEnumVariable("pg_buffile.method",
							 "Sets the compression method of new temporary files.",
							 "\"off\" leaves them to PostgreSQL; \"none\" stores them through libbuffile uncompressed; "
							 "\"auto\" lets each file choose among none, lz4 and zstd as it grows, from what it measures of the device and the data.",
							 &buffile_method,
							 METHOD_OFF,
							 method_options,
							 PGC_USERSET,
							 0,
							 check_method, NULL, NULL);
	DefineCustomIntVariable("pg_buffile.level",
							"Sets the compression level of new temporary files.",
							"0 is the method's default; zstd accepts -7 to 22, gzip 1 to 9, lz4 only 0.",
							&buffile_level,
							0, -7, 22,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_buffile.encryption",
							 "Encrypts new temporary files with a key drawn at server start.",
							 NULL,
							 &buffile_encryption,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("pg_buffile");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = pg_buffile_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pg_buffile_shmem_startup;

	explain_extension_id = GetExplainExtensionId("pg_buffile");
#if PG_VERSION_NUM >= 190000
	RegisterExtensionExplainOption("temp_compression",
								   pg_buffile_explain_option,
								   GUCCheckBooleanExplainOption);
#else
	RegisterExtensionExplainOption("temp_compression",
								   pg_buffile_explain_option);
#endif
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = pg_buffile_ExecutorStart;
	prev_explain_per_plan = explain_per_plan_hook;
	explain_per_plan_hook = pg_buffile_explain_per_plan;

	if (buffile_storage_hook != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("another module already stores BufFiles")));
	buffile_storage_hook = &pg_buffile_methods;
}

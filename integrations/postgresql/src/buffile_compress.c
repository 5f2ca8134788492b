/*-------------------------------------------------------------------------
 *
 * buffile_compress.c
 *	  BufFiles stored through libbuffile, as independently compressed
 *	  BLCKSZ blocks with a block map.
 *
 * buffile.c hands a file over to this module when temp_file_compression
 * was not "off" or temp_file_encryption was on at its creation; otherwise
 * (the default) nothing here runs, and BufFiles are PostgreSQL's own.  A
 * file keeps the mode it was created in.  The library keeps each file as
 * compressed blocks plus a block map, so that seek, tell, size, truncate
 * and rewrites stay exact on compressed data; "none" stores the blocks
 * uncompressed (with checksums), "auto" lets the library pick per file, as
 * it grows, among none, lz4 and zstd from what it measures of the device
 * and of each codec on the data; "pglz" is PostgreSQL's own, given to the
 * library as a codec of its caller's.  temp_file_encryption seals each
 * block after compression (AES-256-GCM) with a key drawn at server start
 * and kept in shared memory only.
 *
 * Invariants kept here:
 *
 * - Where files live is where stock puts them.  A private file is a named
 *   file of the library directly in the temporary directory of the
 *   tablespace stock would choose (temp_tablespaces through
 *   GetNextTempTableSpace, else the database's), named like stock's
 *   "pgsql_tmp<pid>.<n>", so pg_ls_tmpdir() lists it and startup after a
 *   crash removes it; its segments are "<name>.0", "<name>.1", ... and it
 *   never has an index: closing it removes it.  A file of a FileSet lives
 *   in the "compressed" subdirectory of the FileSet's directory for its
 *   name, as the library's named file (its segments, which hold its index);
 *   that subdirectory is how other backends know the file is ours, and removing
 *   the FileSet removes it.  A missing temporary directory is re-created,
 *   as stock does.
 *
 * - One library space per process, created at the first compressed file.
 *   Its temp limit is temp_file_limit in physical bytes.  Its memory comes
 *   from the "BufFile compression" memory context, never longjmp'ing out of
 *   the library: an allocation that fails is a NULL the library reports.
 *   Its I/O is seen by PostgreSQL as stock's is: wait events BufFileRead,
 *   BufFileWrite and BufFileTruncate around each system call,
 *   track_io_timing's temp read and write times, and temp_blks_read and
 *   temp_blks_written counted in logical BLCKSZ blocks, as stock counts its
 *   buffer loads and dumps (so the counts do not depend on the codec).  Its
 *   descriptors are acquired from fd.c's external-FD budget when the
 *   library opens them and released when it closes them.
 *
 * - Positions as callers see them are (fileno, offset) pairs over segments
 *   of MAX_PHYSICAL_FILESIZE bytes, as stock's; they map one to one onto
 *   the library's logical offsets.  Library blocks are BLCKSZ, so block
 *   numbers are the same as stock's.  A seek that leaves the block the
 *   position is in writes the buffered block out and drops it, as stock's
 *   BufFileSeek flushes its buffer: the block counts match stock's.
 *
 * - Every open file is on one list.  At the release of its resource
 *   owner a file still open is dropped without persisting anything (an
 *   abort never writes an index; a FileSet directory already removed at
 *   DSM detach is no error); files of no resource owner are dropped before
 *   shared memory goes at exit.  The structs live in our memory context,
 *   since executor memory may be gone before the resource owner is
 *   released.
 *
 * - A file's usage is reported once per handle that wrote it (at close,
 *   export or drop): pg_stat_database's temp_files and temp_bytes in
 *   physical bytes, and under log_temp_files the path, physical size,
 *   logical size and codec.
 *
 * Portions Copyright (c) 1996-2022, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  src/backend/storage/file/buffile_compress.c
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/buffile_compress.h"

#ifdef USE_BUFFILE
#include <buffile.h>
#endif

#include "catalog/pg_tablespace_d.h"
#include "common/file_utils.h"
#include "common/pg_lzcompress.h"
#include "executor/instrument.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#if PG_VERSION_NUM >= 160000
#include "utils/guc_hooks.h"
#endif
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/wait_event.h"

/* GUC variable */
char	   *temp_file_compression = NULL;

/* What temp_file_compression says, parsed by its check hook. */
typedef struct TempFileCompressionSpec
{
	bool		enabled;		/* false: "off" */
	int			codec;			/* bf_codec */
	int			level;			/* BF_LEVEL_DEFAULT or a level of the codec */
} TempFileCompressionSpec;

static TempFileCompressionSpec compression_spec = {false, 0, 0};

/* GUC variable */
bool		temp_file_encryption = false;

bool
CompressedBufFileWanted(void)
{
	return compression_spec.enabled || temp_file_encryption;
}

/*
 * GUC check hook for temp_file_encryption: only a server built with
 * libbuffile can encrypt.  (A libbuffile built without libcrypto is found
 * out when a file asks for sealing; see CompressedBufFileSpace().)
 */
bool
check_temp_file_encryption(bool *newval, void **extra, GucSource source)
{
#ifndef USE_BUFFILE
	if (*newval)
	{
		GUC_check_errdetail("This build does not support encryption of temporary files.");
		return false;
	}
#endif
	return true;
}

#ifdef USE_BUFFILE

/*
 * PostgreSQL's own pglz, given to the library as a codec of the caller's:
 * extents record this id, so every process's space registers it.
 */
#define PGLZ_CODEC_ID		BF_CODEC_USER_MIN

/* The methods this build offers, and their levels (see <buffile.h>). */
typedef struct TempFileCompressionMethod
{
	const char *name;
	bf_codec	codec;
	int			min_level;		/* both 0: no level */
	int			max_level;
} TempFileCompressionMethod;

static const TempFileCompressionMethod compression_methods[] = {
	{"none", BF_CODEC_NONE, 0, 0},
#ifdef USE_LZ4
	{"lz4", BF_CODEC_LZ4, 1, 65537},
#endif
#ifdef USE_ZSTD
	{"zstd", BF_CODEC_ZSTD, -7, 22},
#endif
#ifdef HAVE_LIBZ
	{"zlib", BF_CODEC_ZLIB, 1, 9},
#endif
	{"auto", BF_CODEC_AUTO, 0, 0},
	{"pglz", PGLZ_CODEC_ID, 0, 0},
};

#endif							/* USE_BUFFILE */

/*
 * GUC check hook for temp_file_compression: "off", or a method this build
 * offers, optionally followed by ":level=N" (or ":N") within the method's
 * range, as in common/compression.h's specifications.
 */
bool
check_temp_file_compression(char **newval, void **extra, GucSource source)
{
	TempFileCompressionSpec spec = {false, 0, 0};
	TempFileCompressionSpec *result;

	if (pg_strcasecmp(*newval, "off") != 0)
	{
#ifdef USE_BUFFILE
		const char *value = *newval;
		const char *colon = strchr(value, ':');
		size_t		namelen = colon ? (size_t) (colon - value) : strlen(value);
		const TempFileCompressionMethod *method = NULL;

		for (int i = 0; i < lengthof(compression_methods); i++)
		{
			if (strlen(compression_methods[i].name) == namelen &&
				pg_strncasecmp(compression_methods[i].name, value, namelen) == 0)
				method = &compression_methods[i];
		}
		if (method == NULL ||
			(method->codec < BF_CODEC_USER_MIN &&
			 !bf_codec_available(method->codec)))
		{
			GUC_check_errdetail("Compression method \"%.*s\" is not supported by this build.",
								(int) namelen, value);
			return false;
		}
		spec.enabled = true;
		spec.codec = method->codec;
		spec.level = BF_LEVEL_DEFAULT;
		if (colon != NULL)
		{
			const char *lv = colon + 1;
			char	   *end;
			long		level;

			if (pg_strncasecmp(lv, "level=", 6) == 0)
				lv += 6;
			errno = 0;
			level = strtol(lv, &end, 10);
			if (method->min_level == 0 && method->max_level == 0)
			{
				GUC_check_errdetail("Compression method \"%s\" does not accept a level.",
									method->name);
				return false;
			}
			if (*lv == '\0' || *end != '\0' || errno != 0 ||
				level < method->min_level || level > method->max_level)
			{
				GUC_check_errdetail("The level of compression method \"%s\" must be an integer from %d to %d.",
									method->name, method->min_level,
									method->max_level);
				return false;
			}
			spec.level = (int) level;
		}
#else
		GUC_check_errdetail("This build does not support compression of temporary files.");
		return false;
#endif
	}

#if PG_VERSION_NUM >= 160000
	result = (TempFileCompressionSpec *) guc_malloc(LOG, sizeof(spec));
#else
	result = (TempFileCompressionSpec *) malloc(sizeof(spec));
#endif
	if (result == NULL)
		return false;
	*result = spec;
	*extra = result;
	return true;
}

void
assign_temp_file_compression(const char *newval, void *extra)
{
	compression_spec = *(TempFileCompressionSpec *) extra;
}

#ifdef USE_BUFFILE

/*
 * Positions are (fileno, offset) over segments of this many bytes, as in
 * stock BufFiles (where each segment is one physical file).
 */
#define MAX_PHYSICAL_FILESIZE	0x40000000

/* The subdirectory of a FileSet directory that holds our files. */
#define COMPRESSED_SUBDIR		"compressed"

/*
 * A file.  A hash join may hold a hundred thousand, each costing this
 * besides the library's block buffer and its own struct: it is kept
 * within 64 bytes (an allocation's size class), its path is asked of the
 * library when a message needs it.
 */
struct CompressedBufFile
{
	dlist_node	node;			/* in open_files, unless appended */
	bf_file    *bf;				/* the library's handle */
	ResourceOwner resowner;		/* drops us at its release; NULL for an
								 * interXact file */
	List	   *appended;		/* files appended onto this one */
	uint64		logical_counted;	/* its bytes written and stored on disk */
	uint64		physical_counted;	/* so far, as counted in pgBufferUsage */
	bool		named;			/* a FileSet's file (else private) */
	bool		readOnly;		/* opened read-only, or exported */
	bool		wrote;			/* created or opened for writing: report usage
								 * when done */
	bool		sealed;			/* created with temp_file_encryption on */
	uint8		usage_slot;		/* its method's counter in BufferUsage */
};

/*
 * What codec=auto learned of the temporary device, in shared memory: a
 * process starts its space from it, rather than from nothing (which on a
 * slow device means writing its first MiB uncompressed), and writes back
 * what its space knows at the end of each transaction that used auto and
 * at exit.  The last writer wins: every writer started from the shared
 * figures and moved them with its own measurements.
 */
typedef struct CompressedBufFileShared
{
	slock_t		mutex;			/* protects device */
	bf_auto_device device;
	/* temp_file_encryption's key: drawn at server start, never changed */
	uint8		key[BF_KEY_BYTES];
} CompressedBufFileShared;

static CompressedBufFileShared *shared = NULL;

/*
 * BufferUsage counts the bytes of every built-in bf_codec, auto included,
 * then pglz's.
 */
#define PGLZ_USAGE_SLOT		(BF_CODEC_AUTO + 1)
StaticAssertDecl(PGLZ_USAGE_SLOT + 1 == NUM_TEMP_COMPRESSION_METHODS,
				 "BufferUsage has a counter per method");

static bf_space *space = NULL;
static MemoryContext CompressedBufFileContext = NULL;
static dlist_head open_files = DLIST_STATIC_INIT(open_files);
static uint32 private_file_counter = 0;
static char space_parent[MAXPGPATH];	/* pgsql_tmp<pid>.buffile */
static bool used_auto = false;	/* a file was created with "auto" */
static bool auto_unshared = false;	/* ... since the space's figures were last
									 * written to shared memory */
static bool started_shared = false; /* the space started from shared figures */

/* Set when the library stored blocks: see countWritten(). */
static bool blocks_stored = false;

/* For the I/O hooks: when the current transfer started, if timed. */
static bool io_timed = false;
static instr_time io_start_time;

static void CompressedBufFileResourceRelease(ResourceReleasePhase phase,
											 bool isCommit,
											 bool isTopLevel, void *arg);
static void CompressedBufFileBeforeShmemExit(int code, Datum arg);
static void CompressedBufFileProcExit(int code, Datum arg);

/* ---- the library's allocations, in our memory context ---- */

/*
 * Nothing may raise an error inside the library.  From 16 on,
 * repalloc_extended() resizes a chunk without raising one, and the
 * library's allocations are plain chunks (a block buffer is then BLCKSZ
 * exactly, which counts with many files open).  Before 16, realloc is
 * alloc, copy and free, and each allocation carries its size in front for
 * the copy.
 */
#if PG_VERSION_NUM >= 160000
#define ALLOC_HEADER	0
#else
#define ALLOC_HEADER	MAXALIGN(sizeof(Size))
#endif
#define ALLOC_FLAGS		(MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM)

static void *
space_malloc(void *ctx, size_t size)
{
	char	   *p;

	p = MemoryContextAllocExtended((MemoryContext) ctx, size + ALLOC_HEADER,
								   ALLOC_FLAGS);
	if (p == NULL)
		return NULL;
#if PG_VERSION_NUM < 160000
	*(Size *) p = size;
#endif
	return p + ALLOC_HEADER;
}

static void
space_free(void *ctx, void *ptr)
{
	if (ptr != NULL)
		pfree((char *) ptr - ALLOC_HEADER);
}

static void *
space_realloc(void *ctx, void *ptr, size_t size)
{
	void	   *p;

	if (ptr == NULL)
		return space_malloc(ctx, size);
#if PG_VERSION_NUM >= 160000
	p = repalloc_extended(ptr, size, ALLOC_FLAGS);
#else
	p = space_malloc(ctx, size);
	if (p == NULL)
		return NULL;			/* the old block stays, as realloc's does */
	memcpy(p, ptr, Min(size, *(Size *) ((char *) ptr - ALLOC_HEADER)));
	space_free(ctx, ptr);
#endif
	return p;
}

/* ---- pglz, as a codec of the library's caller ---- */

static size_t
pglz_codec_bound(void *ctx, size_t len)
{
	return PGLZ_MAX_OUTPUT(len);
}

/* pglz's default strategy declines data it saves little on: stored raw */
static int64_t
pglz_codec_compress(void *ctx, int32_t level, const void *src, size_t len,
					void *dst, size_t cap)
{
	int32		n = pglz_compress(src, (int32) len, dst, PGLZ_strategy_default);

	return n < 0 ? 0 : n;
}

static int64_t
pglz_codec_decompress(void *ctx, const void *src, size_t len, void *dst,
					  size_t raw_len)
{
	return pglz_decompress(src, (int32) len, dst, (int32) raw_len, true);
}

static const bf_user_codec pglz_codec = {
	.id = PGLZ_CODEC_ID,
	.name = "pglz",
	.bound = pglz_codec_bound,
	.compress = pglz_codec_compress,
	.decompress = pglz_codec_decompress,
};

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
 * After a library call on "file" that stored blocks, count in pgBufferUsage
 * the bytes written into the file since the last count and the bytes they
 * took on disk, by method, for EXPLAIN (BUFFERS).  Both are counted when
 * blocks go to disk, as temp_blks_written is, so that a plan node is
 * charged with the bytes whose blocks it wrote out.  (The hook itself may
 * not call into the library, and the space's own counters would charge
 * one file's blocks to another's method.)  bf_file_written costs the same
 * whatever the file's size; bf_file_stats walks the file's block map.
 */
static void
countWritten(CompressedBufFile *file)
{
	uint64		logical;
	uint64		physical;

	if (!blocks_stored)
		return;
	blocks_stored = false;
	bf_file_written(file->bf, &logical, &physical);
	pgBufferUsage.temp_compressed_logical += logical - file->logical_counted;
	pgBufferUsage.temp_compressed_written[file->usage_slot] +=
		physical - file->physical_counted;
	file->logical_counted = logical;
	file->physical_counted = physical;
}

/*
 * The library asks before it opens a descriptor: within fd.c's budget for
 * external descriptors, or, when it holds none it could close, beyond it
 * (ReserveExternalFD closes fd.c's own least recently used ones).
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
 * errcode_for_file_access() classifies; the others have messages of
 * their own.  The library's message (operation, path, errno text) is the
 * detail.
 */
static void
CompressedBufFileFailure(int status, const char *path, const char *msg)
{
	const char *detail = space ? bf_space_errmsg(space) : "";
	int			save_errno;

	switch (status)
	{
		case BF_ELIMIT:
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("temporary file size exceeds temp_file_limit (%dkB)",
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

/* ---- the space ---- */

/*
 * The shared memory of codec=auto and of the key: its size, and its
 * creation or attach.
 */
Size
CompressedBufFileShmemSize(void)
{
	return sizeof(CompressedBufFileShared);
}

void
CompressedBufFileShmemInit(void)
{
	bool		found;

	shared = ShmemInitStruct("BufFile compression",
							 sizeof(CompressedBufFileShared), &found);
	if (!found)
	{
		bf_auto_device nothing = BF_AUTO_DEVICE_INIT;

		SpinLockInit(&shared->mutex);
		shared->device = nothing;

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
}

/* Whether "device" holds anything codec=auto measured. */
static bool
autoDeviceLearned(const bf_auto_device *device)
{
	return device->device_runs > 0 || device->pace_windows > 0 ||
		device->share_windows > 0 || device->transfer_windows > 0;
}

/* Write what this process's space learned of the device to shared memory. */
static void
shareAutoDevice(void)
{
	bf_auto_device device;

	if (space == NULL || shared == NULL || !auto_unshared)
		return;
	auto_unshared = false;
	bf_space_auto_device(space, &device);
	if (!autoDeviceLearned(&device))
		return;
	SpinLockAcquire(&shared->mutex);
	shared->device = device;
	SpinLockRelease(&shared->mutex);
}

static bf_space *
CompressedBufFileSpace(void)
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
	 * Blocks of at most 1 MB (the default is 8 MB): with a hundred thousand
	 * files open, the context then holds at most 1 MB beyond its chunks.
	 */
	if (CompressedBufFileContext == NULL)
		CompressedBufFileContext = AllocSetContextCreate(TopMemoryContext,
														 "BufFile compression",
														 ALLOCSET_DEFAULT_MINSIZE,
														 ALLOCSET_DEFAULT_INITSIZE,
														 1024 * 1024);
	allocator.malloc_fn = space_malloc;
	allocator.realloc_fn = space_realloc;
	allocator.free_fn = space_free;
	allocator.ctx = CompressedBufFileContext;

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
	opts.user_codecs = &pglz_codec;
	opts.n_user_codecs = 1;
	if (shared != NULL)
	{
		SpinLockAcquire(&shared->mutex);
		device = shared->device;
		SpinLockRelease(&shared->mutex);
		started_shared = autoDeviceLearned(&device);
		/* files are sealed only when they ask (temp_file_encryption) */
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

	/* Registered once: the space lives until the process exits. */
	RegisterResourceReleaseCallback(CompressedBufFileResourceRelease, NULL);
	before_shmem_exit(CompressedBufFileBeforeShmemExit, 0);
	on_proc_exit(CompressedBufFileProcExit, 0);

	return space;
}

/* The file options temp_file_compression asks for. */
static void
CompressedBufFileOptions(bf_file_options *opts)
{
	Assert(CompressedBufFileWanted());
	bf_file_options_init(opts);
	/* temp_file_encryption alone: sealed, not compressed */
	opts->codec = compression_spec.enabled ?
		(bf_codec) compression_spec.codec : BF_CODEC_NONE;
	opts->level = compression_spec.enabled ?
		compression_spec.level : BF_LEVEL_DEFAULT;
	opts->seal = temp_file_encryption ? BF_SEAL_ON : BF_SEAL_OFF;
	opts->block_size = BLCKSZ;
	if (opts->codec == BF_CODEC_AUTO)
		used_auto = auto_unshared = true;
}

/*
 * Make the struct of a new library handle and put it on the list.  It is
 * allocated without raising an error, so that running out of memory
 * cannot strand the handle.
 */
static CompressedBufFile *
rememberCompressedBufFile(bf_file *bf, bool interXact, bool named)
{
	CompressedBufFile *file;
	bf_codec	codec = bf_file_codec(bf);

	StaticAssertStmt(sizeof(CompressedBufFile) <= 64,
					 "CompressedBufFile grew out of its size class");
	file = MemoryContextAllocExtended(CompressedBufFileContext,
									  sizeof(CompressedBufFile),
									  MCXT_ALLOC_NO_OOM | MCXT_ALLOC_ZERO);
	if (file == NULL)
	{
		(void) bf_file_abort(bf);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	}
	file->bf = bf;
	file->usage_slot = codec == PGLZ_CODEC_ID ? PGLZ_USAGE_SLOT : codec;
	file->resowner = interXact ? NULL : CurrentResourceOwner;
	file->named = named;
	dlist_push_head(&open_files, &file->node);
	return file;
}

/* The path a file's segment files start with, into buf (MAXPGPATH bytes). */
static char *
filePath(CompressedBufFile *file, char *buf)
{
	bf_file_path(file->bf, buf, MAXPGPATH);
	return buf;
}

/* Report a failure on "file" (see CompressedBufFileFailure). */
static void
fileFailure(CompressedBufFile *file, int status, const char *msg)
{
	char		path[MAXPGPATH];

	CompressedBufFileFailure(status, filePath(file, path), msg);
}

static void
freeCompressedBufFile(CompressedBufFile *file)
{
	list_free(file->appended);
	pfree(file);
}

/*
 * Report a written file's usage: pg_stat_database's temp_files and
 * temp_bytes and, under log_temp_files, the log line, in physical bytes.
 */
static void
CompressedBufFileReportUsage(CompressedBufFile *file)
{
	bf_stats	st;

	if (!file->wrote)
		return;
	file->wrote = false;
	bf_file_stats(file->bf, &st);
	pgstat_report_tempfile((size_t) st.physical_bytes);
	if (log_temp_files >= 0 &&
		st.physical_bytes / 1024 >= (uint64) log_temp_files)
	{
		char		path[MAXPGPATH];

		ereport(LOG,
				(errmsg("temporary file: path \"%s\", size " UINT64_FORMAT ", logical size " UINT64_FORMAT ", compression %s%s",
						filePath(file, path), st.physical_bytes,
						st.logical_bytes,
						bf_space_codec_name(space, bf_file_codec(file->bf)),
						file->sealed ? ", encrypted" : "")));
	}
}

/*
 * Drop a file without persisting anything, with the files appended onto
 * it: for aborts and exit, where a FileSet's directory may be gone
 * already.  Never raises an error.
 */
static void
CompressedBufFileDrop(CompressedBufFile *file)
{
	ListCell   *lc;

	CompressedBufFileReportUsage(file);
	dlist_delete(&file->node);
	(void) bf_file_abort(file->bf);
	foreach(lc, file->appended)
	{
		CompressedBufFile *source = (CompressedBufFile *) lfirst(lc);

		(void) bf_file_abort(source->bf);
		freeCompressedBufFile(source);
	}
	freeCompressedBufFile(file);
}

/*
 * Resource-owner callback: drop the files of the owner being released, as
 * fd.c closes its temporary files.  Files still open at commit are leaks,
 * and said so.  At the end of a transaction, share what auto learned.
 */
static void
CompressedBufFileResourceRelease(ResourceReleasePhase phase, bool isCommit,
								 bool isTopLevel, void *arg)
{
	dlist_mutable_iter iter;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS)
		return;

	dlist_foreach_modify(iter, &open_files)
	{
		CompressedBufFile *file = dlist_container(CompressedBufFile, node,
												  iter.cur);

		char		path[MAXPGPATH];

		if (file->resowner != CurrentResourceOwner)
			continue;
		if (isCommit)
			elog(WARNING, "temporary file leak: BufFile \"%s\" still referenced",
				 filePath(file, path));
		CompressedBufFileDrop(file);
	}
	if (isTopLevel)
		shareAutoDevice();
}

/*
 * Drop every file still open, and share what auto learned, before
 * statistics and shared memory go.
 */
static void
CompressedBufFileBeforeShmemExit(int code, Datum arg)
{
	while (!dlist_is_empty(&open_files))
		CompressedBufFileDrop(dlist_container(CompressedBufFile, node,
											  dlist_head_node(&open_files)));
	shareAutoDevice();
}

/* Remove the space and its parent directory at process exit. */
static void
CompressedBufFileProcExit(int code, Datum arg)
{
	/*
	 * Under log_temp_files, say what temp_file_compression = auto chose in
	 * this process: the blocks it wrote per codec, its last decision, and
	 * whether it started from what other processes had learned.
	 */
	if (space != NULL && used_auto && log_temp_files >= 0)
	{
		bf_stats	st;

		bf_space_stats(space, &st);
		ereport(LOG,
				(errmsg("temporary file compression auto: blocks written none " UINT64_FORMAT ", lz4 " UINT64_FORMAT ", zstd " UINT64_FORMAT ", zlib " UINT64_FORMAT ", probing %.1f ms",
						st.blocks_by_codec[0], st.blocks_by_codec[1],
						st.blocks_by_codec[2], st.blocks_by_codec[3],
						st.auto_probe_ns / 1e6),
				 errdetail_internal("Last decision: %s. Started from %s.",
									bf_space_auto_reason(space),
									started_shared ?
									"the device figures of earlier processes" :
									"nothing learned of the device")));
	}
	bf_space_destroy(space);
	space = NULL;
	if (rmdir(space_parent) < 0 && errno != ENOENT)
		elog(LOG, "could not remove directory \"%s\": %m", space_parent);
}

/* ---- creating, opening and deleting files ---- */

/*
 * Create the named file "name" in "dir", replacing an older file of that
 * name (an orphan of an earlier process), as stock's O_TRUNC does.
 */
static int
createNamed(bf_space *sp, const char *dir, const char *name,
			const bf_file_options *opts, bf_file **bf)
{
	int			status = bf_file_create_named(sp, dir, name, opts, bf);

	if (status == BF_EEXIST && bf_file_delete_named(sp, dir, name) == BF_OK)
		status = bf_file_create_named(sp, dir, name, opts, bf);
	return status;
}

/* Remember the file created in "dir", or report why it could not be. */
static CompressedBufFile *
finishCreate(int status, bf_file *bf, char *dir, const char *name,
			 bool interXact, bool named)
{
	CompressedBufFile *file;

	if (status != BF_OK)
	{
		snprintf(dir + strlen(dir), MAXPGPATH - strlen(dir), "/%s", name);
		CompressedBufFileFailure(status, dir,
								 gettext_noop("could not create temporary file \"%s\": %m"));
	}
	file = rememberCompressedBufFile(bf, interXact, named);
	file->wrote = true;
	file->sealed = temp_file_encryption;
	return file;
}

/*
 * Create a private temporary file, deleted at close.  Its tablespace is
 * chosen as OpenTemporaryFile chooses it; a missing temporary directory is
 * created, and a temp tablespace that does not work falls back to the
 * database's, as stock does.
 */
CompressedBufFile *
CompressedBufFileCreateTemp(bool interXact)
{
	bf_space   *sp = CompressedBufFileSpace();
	bf_file_options opts;
	Oid			tblspc = InvalidOid;
	Oid			deftblspc = MyDatabaseTableSpace ? MyDatabaseTableSpace :
		DEFAULTTABLESPACE_OID;
	char		dir[MAXPGPATH];
	char		name[64];
	bf_file    *bf = NULL;
	int			status;

	CompressedBufFileOptions(&opts);
	if (!interXact)
		tblspc = GetNextTempTableSpace();
	if (!OidIsValid(tblspc))
		tblspc = deftblspc;
	snprintf(name, sizeof(name), "%s%d.%u", PG_TEMP_FILE_PREFIX, MyProcPid,
			 private_file_counter++);

	for (;;)
	{
		TempTablespacePath(dir, tblspc);
		status = createNamed(sp, dir, name, &opts, &bf);
		if (status == BF_ENOENT)
		{
			/* the tablespace's temporary directory is missing */
			(void) MakePGDirectory(dir);
			status = createNamed(sp, dir, name, &opts, &bf);
		}
		if (status == BF_OK || tblspc == deftblspc)
			break;
		tblspc = deftblspc;
	}
	return finishCreate(status, bf, dir, name, interXact, false);
}

/*
 * The directory of our files in a FileSet, for "name"; with "create", it
 * and the FileSet's directory are created when missing.
 */
static void
CompressedBufFileSetDirectory(FileSet *fileset, const char *name, char *path,
							  bool create)
{
	char		setdir[MAXPGPATH];

	FileSetDirectory(fileset, name, setdir, create);
	snprintf(path, MAXPGPATH, "%s/%s", setdir, COMPRESSED_SUBDIR);
	if (create)
		PathNameCreateTemporaryDir(setdir, path);
}

/*
 * Create a file of a FileSet, which other backends open by name once it
 * is exported or closed.  An older file of the same name is replaced, as
 * stock truncates it.
 */
CompressedBufFile *
CompressedBufFileCreateFileSet(FileSet *fileset, const char *name)
{
	bf_space   *sp = CompressedBufFileSpace();
	char		dir[MAXPGPATH];
	bf_file_options opts;
	bf_file    *bf = NULL;
	int			status;

	/*
	 * The directories exist but for the first file of a set: only a create
	 * that finds them missing makes them, so that each file costs one
	 * creation in the file system, as stock's does.
	 */
	CompressedBufFileSetDirectory(fileset, name, dir, false);
	CompressedBufFileOptions(&opts);
	status = createNamed(sp, dir, name, &opts, &bf);
	if (status == BF_ENOENT)
	{
		CompressedBufFileSetDirectory(fileset, name, dir, true);
		status = createNamed(sp, dir, name, &opts, &bf);
	}
	return finishCreate(status, bf, dir, name, false, true);
}

/*
 * Whether the file "name" of a FileSet is ours: its first segment, which
 * holds its index once it was exported or closed, exists.
 */
bool
CompressedBufFileExists(FileSet *fileset, const char *name)
{
	char		dir[MAXPGPATH];
	char		path[MAXPGPATH];
	struct stat st;

	CompressedBufFileSetDirectory(fileset, name, dir, false);
	snprintf(path, sizeof(path), "%s/%s.0", dir, name);
	return stat(path, &st) == 0;
}

/*
 * Open a file of a FileSet, created by this backend or another and then
 * exported or closed.  mode is O_RDONLY or O_RDWR.
 */
CompressedBufFile *
CompressedBufFileOpenFileSet(FileSet *fileset, const char *name, int mode)
{
	bf_space   *sp = CompressedBufFileSpace();
	char		dir[MAXPGPATH];
	bool		readOnly = ((mode & O_ACCMODE) == O_RDONLY);
	CompressedBufFile *file;
	bf_file    *bf = NULL;
	int			status;

	CompressedBufFileSetDirectory(fileset, name, dir, false);
	status = bf_file_open_named(sp, dir, name,
								readOnly ? BF_OPEN_READONLY : BF_OPEN_READWRITE,
								&bf);
	if (status != BF_OK)
	{
		snprintf(dir + strlen(dir), MAXPGPATH - strlen(dir), "/%s", name);
		CompressedBufFileFailure(status, dir,
								 gettext_noop("could not open temporary file \"%s\": %m"));
	}
	file = rememberCompressedBufFile(bf, false, true);
	file->readOnly = readOnly;
	file->wrote = !readOnly;
	return file;
}

/* Delete a file of a FileSet (one that CompressedBufFileExists found). */
void
CompressedBufFileDeleteFileSet(FileSet *fileset, const char *name)
{
	bf_space   *sp = CompressedBufFileSpace();
	char		dir[MAXPGPATH];
	int			status;

	CompressedBufFileSetDirectory(fileset, name, dir, false);
	status = bf_file_delete_named(sp, dir, name);
	if (status != BF_OK && status != BF_ENOENT)
	{
		snprintf(dir + strlen(dir), MAXPGPATH - strlen(dir), "/%s", name);
		CompressedBufFileFailure(status, dir,
								 gettext_noop("could not delete temporary file \"%s\": %m"));
	}
}

/*
 * Remove our files of a FileSet directory before fd.c removes the rest:
 * their usage was reported by the handles that wrote them, and fd.c would
 * report each segment and index again.  Runs in cleanup paths, so it
 * raises no error; a directory without files of ours is not one.  Open
 * handles on them stay valid until they are dropped.
 */
void
CompressedBufFileDeleteFileSetDirectory(const char *dirpath)
{
	char		path[MAXPGPATH];
	int			status;

	snprintf(path, sizeof(path), "%s/%s", dirpath, COMPRESSED_SUBDIR);

	/*
	 * A process that never made a compressed file has no space (a parallel
	 * worker that detaches last, say): the library removes the directory
	 * without one.
	 */
	status = bf_fileset_destroy(space, path);
	if (status != BF_OK && status != BF_ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not remove temporary directory \"%s\"", path),
				 errdetail_internal("%s", space ? bf_space_errmsg(space) :
									bf_strerror(status))));
}

/* ---- using files ---- */

void
CompressedBufFileExportFileSet(CompressedBufFile *file)
{
	int			status;

	Assert(file->named);
	Assert(!file->readOnly);

	status = bf_file_flush(file->bf);
	if (status == BF_OK)
	{
		countWritten(file);
		CompressedBufFileReportUsage(file);
		status = bf_file_export(file->bf);
	}
	if (status != BF_OK)
		fileFailure(file, status,
					gettext_noop("could not write to temporary file \"%s\": %m"));
	file->readOnly = true;
}

/*
 * Close a file: a private one is removed, a FileSet one persists its index
 * if it was written through this handle, and stays.  The buffered block is
 * written first in both cases, as stock's BufFileClose flushes.
 */
void
CompressedBufFileClose(CompressedBufFile *file)
{
	int			status = BF_OK;
	char		path[MAXPGPATH];
	bool		named = file->named;
	ListCell   *lc;

	if (!file->readOnly)
		status = bf_file_flush(file->bf);
	if (status != BF_OK)
		fileFailure(file, status,
					gettext_noop("could not write to temporary file \"%s\": %m"));
	countWritten(file);
	CompressedBufFileReportUsage(file);
	dlist_delete(&file->node);
	filePath(file, path);		/* for a message after the handle is gone */
	if (named)
		status = bf_file_close(file->bf);
	else
		status = bf_file_abort(file->bf);
	foreach(lc, file->appended)
	{
		CompressedBufFile *source = (CompressedBufFile *) lfirst(lc);

		(void) bf_file_close(source->bf);	/* read-only: nothing to lose */
		freeCompressedBufFile(source);
	}
	freeCompressedBufFile(file);
	if (status != BF_OK)
	{
		/*
		 * A FileSet file that could not persist its index is rolled back by
		 * the library: its writer must hear of it.  A private file that could
		 * not be removed is only logged, as fd.c does; the space's directory
		 * goes at exit.
		 */
		if (named)
			CompressedBufFileFailure(status, path,
									 gettext_noop("could not write to temporary file \"%s\": %m"));
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not delete temporary file \"%s\"", path),
				 errdetail_internal("%s", bf_space_errmsg(space))));
	}
}

/*
 * Read up to "size" bytes.  With "exact", reading fewer is an error, but
 * for reading none at the end of the file when "eofOK" (as stock's
 * BufFileReadExact and BufFileReadMaybeEOF).
 */
size_t
CompressedBufFileRead(CompressedBufFile *file, void *ptr, size_t size,
					  bool exact, bool eofOK)
{
	int64		nread = bf_file_read(file->bf, ptr, size);

	if (nread < 0)
		fileFailure(file, (int) nread,
					gettext_noop("could not read from temporary file \"%s\": %m"));
	countWritten(file);
	if (exact && (size_t) nread != size && !(nread == 0 && eofOK))
	{
		char		path[MAXPGPATH];

		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from temporary file \"%s\": read only %zu of %zu bytes",
						filePath(file, path), (size_t) nread, size)));
	}
	return (size_t) nread;
}

void
CompressedBufFileWrite(CompressedBufFile *file, BUFFILE_WRITE_CONST void *ptr,
					   size_t size)
{
	int			status;

	Assert(!file->readOnly);
	status = bf_file_write(file->bf, ptr, size);
	if (status != BF_OK)
		fileFailure(file, status,
					gettext_noop("could not write to temporary file \"%s\": %m"));
	countWritten(file);
}

/*
 * Like stock's BufFileSeek: SEEK_SET to (fileno, offset), SEEK_CUR by
 * offset (fileno ignored), SEEK_END to the end.  Returns EOF, leaving the
 * position, for what stock refuses: before the start, or past the segment
 * that holds the end of the file.
 */
int
CompressedBufFileSeek(CompressedBufFile *file, int fileno, off_t offset,
					  int whence)
{
	int64		size = (int64) bf_file_size(file->bf);
	int64		pos = (int64) bf_file_tell(file->bf);
	int64		nsegs;
	int64		target;
	int			status;

	switch (whence)
	{
		case SEEK_SET:
			if (fileno < 0)
				return EOF;
			target = (int64) fileno * MAX_PHYSICAL_FILESIZE + offset;
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
	nsegs = Max((size + MAX_PHYSICAL_FILESIZE - 1) / MAX_PHYSICAL_FILESIZE, 1);
	if (target < 0 || target > nsegs * MAX_PHYSICAL_FILESIZE)
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
	if (status != BF_OK)
		fileFailure(file, status,
					gettext_noop("could not write to temporary file \"%s\": %m"));
	countWritten(file);
	return 0;
}

void
CompressedBufFileTell(CompressedBufFile *file, int *fileno, off_t *offset)
{
	uint64		pos = bf_file_tell(file->bf);

	*fileno = (int) (pos / MAX_PHYSICAL_FILESIZE);
	*offset = (off_t) (pos % MAX_PHYSICAL_FILESIZE);
}

int64
CompressedBufFileSize(CompressedBufFile *file)
{
	return (int64) bf_file_size(file->bf);
}

/*
 * Append "source", a read-only file of the target's FileSet, without
 * copying: its data start at the first block boundary at or after the
 * target's end, whose block number is returned.  The target takes the
 * source over and closes it.
 */
int64
CompressedBufFileAppend(CompressedBufFile *target, CompressedBufFile *source)
{
	uint64		start;
	int			status;
	MemoryContext oldcxt;

	Assert(target->named);
	Assert(source->named);
	Assert(source->readOnly);

	if (target->resowner != source->resowner)
		elog(ERROR, "could not append BufFile with non-matching resource owner");

	/*
	 * Parallel sort's leader appends the workers' files onto one it opened
	 * read-only: the library then gives this handle a view of the
	 * concatenation and persists nothing.  A writable target persists the
	 * splice and consumes the source, as stock does.
	 */
	status = bf_file_append(target->bf, source->bf, &start);
	if (status != BF_OK)
		fileFailure(target, status,
					gettext_noop("could not write to temporary file \"%s\": %m"));
	countWritten(target);

	oldcxt = MemoryContextSwitchTo(CompressedBufFileContext);
	target->appended = lappend(target->appended, source);
	MemoryContextSwitchTo(oldcxt);
	dlist_delete(&source->node);

	Assert(start % BLCKSZ == 0);
	return (int64) (start / BLCKSZ);
}

/*
 * Truncate a FileSet file to (fileno, offset).  A position past the new
 * end moves to the end; one before it stays.
 */
void
CompressedBufFileTruncateFileSet(CompressedBufFile *file, int fileno,
								 off_t offset)
{
	uint64		newsize = (uint64) fileno * MAX_PHYSICAL_FILESIZE + offset;
	int			status;

	Assert(file->named);

	status = bf_file_truncate(file->bf, newsize);
	if (status == BF_OK && bf_file_tell(file->bf) > newsize)
		status = bf_file_seek(file->bf, (int64) newsize, BF_SEEK_SET);
	if (status != BF_OK)
		fileFailure(file, status,
					gettext_noop("could not truncate file \"%s\": %m"));
	countWritten(file);
}

#endif							/* USE_BUFFILE */

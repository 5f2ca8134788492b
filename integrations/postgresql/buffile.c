/*-------------------------------------------------------------------------
 *
 * buffile.c
 *	  Buffered temporary files, stored through libbuffile as compressed
 *	  fixed-size blocks.
 *
 * This file replaces src/backend/storage/file/buffile.c of PostgreSQL 15.
 * It implements every function of storage/buffile.h over the public API of
 * libbuffile (<buffile.h>), which keeps each file as independently
 * compressed BLCKSZ blocks plus a block map, so that seek, tell, size,
 * truncate and rewrites stay exact on compressed data.  The codec is chosen
 * per file from the temp_file_compression and temp_file_compression_level
 * GUCs when the file is created; a file opened by name keeps its own.  With
 * "auto", the library picks per file, as it grows, among none, lz4 and
 * zstd from what it measures of the device and of each codec on the data.
 *
 * Invariants kept here:
 *
 * - One library space per process, created on first use, whose directory
 *   lives in "<temp tablespace dir>/pgsql_tmp<pid>.buffile", so that the
 *   postmaster's RemovePgTempFiles() removes whatever a crashed backend left.
 *   The space's temp limit is temp_file_limit, in physical (on-disk) bytes;
 *   its I/O rate limit (a model of a slower device, for benchmarks) is
 *   temp_file_io_limit, fixed at the process's first temporary file, which
 *   is why that GUC is PGC_BACKEND (parallel workers inherit the leader's).
 *
 * - Positions as callers see them are (fileno, offset) pairs over segments of
 *   MAX_PHYSICAL_FILESIZE bytes, as in stock PostgreSQL; they map one to one
 *   onto the library's logical offsets: fileno * MAX_PHYSICAL_FILESIZE +
 *   offset.  Blocks are BLCKSZ, the library's block size for every file we
 *   create, so BufFileSeekBlock and BufFileAppend's block numbers are the
 *   library's block numbers.
 *
 * - Every open BufFile is on one backend-local list.  A resource-owner
 *   callback closes, at the release of its owner, every file that is not
 *   interXact (with the usual leak warning at commit); the rest are closed
 *   before shared memory is detached at process exit.  So no descriptor,
 *   memory or file survives an ERROR or a cancel.  BufFile structs live in
 *   a memory context of their own, not the caller's, because portal and
 *   executor memory may be gone before the resource owner is released.
 *
 * - Files of a FileSet are the library's named files, kept in the FileSet's
 *   directory for that name (FileSetDirectory() in fileset.c).  Removing a
 *   FileSet's directories (FileSetDeleteAll) removes them too.
 *
 * - A file's usage is reported (pg_stat_database.temp_files/temp_bytes and
 *   the log_temp_files line) once per handle that wrote it, at its close or
 *   export, in physical bytes; the log line adds the logical size and the
 *   codec.
 *
 * - The library never prints or aborts: every negative status becomes an
 *   ereport() naming the path and carrying the library's message;
 *   BF_ELIMIT becomes PostgreSQL's own temp_file_limit error.
 *
 * Portions Copyright (c) 1996-2022, PostgreSQL Global Development Group
 * (the interface and its documented semantics)
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "storage/buffile.h"
#include <buffile.h>

#include "commands/tablespace.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/fileset.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

/*
 * Positions are (fileno, offset) over segments of this many bytes, as in
 * stock PostgreSQL (where each segment is one physical file).
 */
#define MAX_PHYSICAL_FILESIZE	0x40000000
#define BUFFILE_SEG_SIZE		(MAX_PHYSICAL_FILESIZE / BLCKSZ)

/* Descriptors the library may keep open, taken from fd.c's external pool. */
#define BUFFILE_MAX_FDS		16
#define BUFFILE_MIN_FDS		4

/* GUC variables */
int			temp_file_compression = TEMP_FILE_COMPRESSION_NONE;
int			temp_file_compression_level = 0;
int			temp_file_io_limit = 0;	/* kB per second; 0 = unthrottled */

struct BufFile
{
	dlist_node	node;			/* in open_buffiles, unless appended */
	bf_file    *bf;				/* the library's handle */
	bool		isInterXact;	/* keep open over transactions? */
	bool		readOnly;		/* opened read-only, or exported */
	bool		wrote;			/* created or opened for writing: report
								 * usage at close or export */
	ResourceOwner resowner;		/* closes us at its release */
	FileSet    *fileset;		/* NULL for a private temp file */
	char	   *name;			/* name within the fileset */
	char	   *path;			/* for messages: set dir/name, or space dir */
	List	   *appended;		/* BufFiles appended onto this one */
};

static bf_space *buffile_space = NULL;
static MemoryContext BufFileContext = NULL;
static dlist_head open_buffiles = DLIST_STATIC_INIT(open_buffiles);
static int	buffile_nfds = 0;	/* external FDs held for the library */
static char buffile_parent[MAXPGPATH];	/* pgsql_tmp<pid>.buffile */
static bool buffile_used_auto = false;	/* a file was created with "auto" */

static bf_space *BufFileSpace(void);
static BufFile *makeBufFile(bool interXact, FileSet *fileset,
							const char *name, const char *dir);
static void BufFileFree(BufFile *file);
static void BufFileCloseInternal(BufFile *file, int elevel);
static void BufFileReportUsage(BufFile *file);
static void BufFileFileOptions(bf_file_options *opts);
static void BufFileResourceRelease(ResourceReleasePhase phase, bool isCommit,
								   bool isTopLevel, void *arg);
static void BufFileBeforeShmemExit(int code, Datum arg);
static void BufFileProcExit(int code, Datum arg);
static void BufFileFailure(int status, const char *what, const char *path)
			pg_attribute_noreturn();
static void BufFileCreateFailure(int status, const char *path)
			pg_attribute_noreturn();

/*
 * Report a negative library status as an ERROR.  "what" completes
 * "could not %s temporary file"; the library's message names the operation,
 * the path and the errno text of the failure.
 */
static void
BufFileFailure(int status, const char *what, const char *path)
{
	const char *detail = buffile_space ? bf_space_errmsg(buffile_space) : "";
	int			code;

	switch (status)
	{
		case BF_ELIMIT:
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("temporary file size exceeds temp_file_limit (%dkB)",
							temp_file_limit)));
			break;
		case BF_ENOSPC:
			code = ERRCODE_DISK_FULL;
			break;
		case BF_ENOMEM:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case BF_ECORRUPT:
			code = ERRCODE_DATA_CORRUPTED;
			break;
		case BF_ENOENT:
			code = ERRCODE_UNDEFINED_FILE;
			break;
		case BF_EIO:
			code = ERRCODE_IO_ERROR;
			break;
		default:
			code = ERRCODE_INTERNAL_ERROR;
			break;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("could not %s temporary file \"%s\": %s",
					what, path, bf_strerror(status)),
			 detail[0] ? errdetail_internal("%s", detail) : 0));
	pg_unreachable();
}

/*
 * The process's library space, created on first use.
 */
static bf_space *
BufFileSpace(void)
{
	bf_space_options opts;
	char		tempdir[MAXPGPATH];
	char		errbuf[256];
	int			status;

	if (buffile_space != NULL)
	{
		/* temp_file_limit may have changed since (it is PGC_SUSET) */
		bf_space_set_temp_limit(buffile_space, temp_file_limit < 0 ? 0 :
								(uint64) temp_file_limit * 1024);
		return buffile_space;
	}

	if (BufFileContext == NULL)
		BufFileContext = AllocSetContextCreate(TopMemoryContext,
											   "BufFile",
											   ALLOCSET_SMALL_SIZES);

	/*
	 * The space's parent directory is named like the other temp files of
	 * this process, so that startup after a crash removes it whole.
	 */
	TempTablespacePath(tempdir, MyDatabaseTableSpace);
	snprintf(buffile_parent, sizeof(buffile_parent), "%s/%s%d.buffile",
			 tempdir, PG_TEMP_FILE_PREFIX, MyProcPid);
	PathNameCreateTemporaryDir(tempdir, buffile_parent);

	/* Account for the descriptors the library keeps cached, as fd.c asks. */
	while (buffile_nfds < BUFFILE_MAX_FDS && AcquireExternalFD())
		buffile_nfds++;
	while (buffile_nfds < BUFFILE_MIN_FDS)
	{
		ReserveExternalFD();
		buffile_nfds++;
	}

	bf_space_options_init(&opts);
	opts.temp_dir = buffile_parent;
	opts.block_size = BLCKSZ;
	opts.codec = BF_CODEC_NONE;
	opts.temp_limit = temp_file_limit < 0 ? 0 : (uint64) temp_file_limit * 1024;
	opts.max_open_fds = buffile_nfds;
	opts.io_limit = (uint64) temp_file_io_limit * 1024;

	status = bf_space_create(&opts, &buffile_space, errbuf, sizeof(errbuf));
	if (status != BF_OK)
	{
		while (buffile_nfds > 0)
		{
			ReleaseExternalFD();
			buffile_nfds--;
		}
		ereport(ERROR,
				(errcode(status == BF_ENOMEM ? ERRCODE_OUT_OF_MEMORY :
						 ERRCODE_IO_ERROR),
				 errmsg("could not create temporary file space in \"%s\": %s",
						buffile_parent, errbuf)));
	}

	/* Registered once: the space lives until the process exits. */
	RegisterResourceReleaseCallback(BufFileResourceRelease, NULL);
	before_shmem_exit(BufFileBeforeShmemExit, 0);
	on_proc_exit(BufFileProcExit, 0);

	return buffile_space;
}

/*
 * Options of a new file: the codec and level the GUCs ask for.
 */
static void
BufFileFileOptions(bf_file_options *opts)
{
	bf_file_options_init(opts);
	switch (temp_file_compression)
	{
		case TEMP_FILE_COMPRESSION_LZ4:
			opts->codec = BF_CODEC_LZ4;
			break;
		case TEMP_FILE_COMPRESSION_ZSTD:
			opts->codec = BF_CODEC_ZSTD;
			break;
		case TEMP_FILE_COMPRESSION_ZLIB:
			opts->codec = BF_CODEC_ZLIB;
			break;
		case TEMP_FILE_COMPRESSION_AUTO:
			opts->codec = BF_CODEC_AUTO;
			buffile_used_auto = true;
			break;
		default:
			opts->codec = BF_CODEC_NONE;
			break;
	}
	opts->level = (temp_file_compression_level == 0) ? BF_LEVEL_DEFAULT :
		temp_file_compression_level;
	opts->block_size = BLCKSZ;
}

/*
 * Report a failed creation.  The options are the GUCs' and nothing else, so
 * BF_EINVAL means a level the codec refuses: say so in the GUCs' terms.
 */
static void
BufFileCreateFailure(int status, const char *path)
{
	if (status == BF_EINVAL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("temp_file_compression_level %d is not valid for temp_file_compression \"%s\"",
						temp_file_compression_level,
						GetConfigOption("temp_file_compression", false, false)),
				 errdetail_internal("%s", bf_space_errmsg(buffile_space))));
	BufFileFailure(status, "create", path);
}

/*
 * Allocate a BufFile struct, not yet attached to a library handle nor on the
 * list of open files.  Allocated before the library call that fills it, so
 * that an out-of-memory error cannot strand a library handle.
 */
static BufFile *
makeBufFile(bool interXact, FileSet *fileset, const char *name,
			const char *dir)
{
	BufFile    *file;

	file = MemoryContextAllocZero(BufFileContext, sizeof(BufFile));
	file->isInterXact = interXact;
	file->resowner = interXact ? NULL : CurrentResourceOwner;
	file->fileset = fileset;
	if (fileset != NULL)
	{
		file->name = MemoryContextStrdup(BufFileContext, name);
		file->path = MemoryContextAlloc(BufFileContext, MAXPGPATH);
		snprintf(file->path, MAXPGPATH, "%s/%s", dir, name);
	}
	else
	{
		file->path = MemoryContextAlloc(BufFileContext, MAXPGPATH);
		strlcpy(file->path, bf_space_dir(buffile_space), MAXPGPATH);
	}
	return file;
}

/* Free a BufFile struct whose library handle is closed or was never made. */
static void
BufFileFree(BufFile *file)
{
	if (file->name)
		pfree(file->name);
	pfree(file->path);
	list_free(file->appended);
	pfree(file);
}

/* Attach a new library handle to "file" and put it on the list. */
static BufFile *
BufFileRemember(BufFile *file, bf_file *bf)
{
	file->bf = bf;
	dlist_push_head(&open_buffiles, &file->node);
	return file;
}

/*
 * Report a written file's usage: pg_stat_database's temp_files/temp_bytes
 * and, under log_temp_files, the log line, both in physical bytes.
 */
static void
BufFileReportUsage(BufFile *file)
{
	bf_stats	st;

	if (!file->wrote)
		return;
	file->wrote = false;
	bf_file_stats(file->bf, &st);
	pgstat_report_tempfile((size_t) st.physical_bytes);
	if (log_temp_files >= 0 &&
		st.physical_bytes / 1024 >= (uint64) log_temp_files)
		ereport(LOG,
				(errmsg("temporary file: path \"%s\", size " UINT64_FORMAT ", logical size " UINT64_FORMAT ", compression %s",
						file->path, st.physical_bytes, st.logical_bytes,
						bf_codec_name(bf_file_codec(file->bf)))));
}

/*
 * Close the library handles of a file and of the files appended onto it,
 * and free it.  Failures are reported at "elevel"; below ERROR (abort and
 * exit paths) the close goes on regardless.
 */
static void
BufFileCloseInternal(BufFile *file, int elevel)
{
	int			status;
	ListCell   *lc;

	if (elevel < ERROR)
		BufFileReportUsage(file);
	else if (file->wrote)
	{
		/* the file's final contents: make the pending block count */
		status = bf_file_flush(file->bf);
		if (status != BF_OK)
			BufFileFailure(status, "write", file->path);
		BufFileReportUsage(file);
	}

	dlist_delete(&file->node);

	/* Closing a writable named file persists its index: that may fail. */
	status = bf_file_close(file->bf);
	foreach(lc, file->appended)
	{
		BufFile    *source = (BufFile *) lfirst(lc);

		(void) bf_file_close(source->bf);	/* read-only: nothing to lose */
		BufFileFree(source);
	}
	if (status != BF_OK)
	{
		char	   *path = pstrdup(file->path);
		bool		named = (file->fileset != NULL);

		BufFileFree(file);

		/*
		 * A named file that could not persist its index is rolled back by
		 * the library: its writer must hear of it.  A private file whose
		 * segment could not be removed is only LOGged, as fd.c does; the
		 * space directory goes at exit anyway.
		 */
		if (elevel >= ERROR && named)
			BufFileFailure(status, "close", path);
		ereport(Min(elevel, LOG),
				(errmsg("could not close temporary file \"%s\": %s",
						path, bf_space_errmsg(buffile_space))));
		pfree(path);
		return;
	}
	BufFileFree(file);
}

/*
 * Resource-owner callback: close the files of the owner being released
 * (CurrentResourceOwner during the release), as fd.c does for its temporary
 * files.  Files still open at commit are leaks, and said so.
 */
static void
BufFileResourceRelease(ResourceReleasePhase phase, bool isCommit,
					   bool isTopLevel, void *arg)
{
	dlist_mutable_iter iter;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS)
		return;

	dlist_foreach_modify(iter, &open_buffiles)
	{
		BufFile    *file = dlist_container(BufFile, node, iter.cur);

		if (file->isInterXact || file->resowner != CurrentResourceOwner)
			continue;
		if (isCommit)
			elog(WARNING, "temporary file leak: BufFile \"%s\" still referenced",
				 file->path);
		BufFileCloseInternal(file, WARNING);
	}
}

/*
 * Close every file still open (interXact files, files of no resource owner)
 * before statistics and shared memory go away.
 */
static void
BufFileBeforeShmemExit(int code, Datum arg)
{
	while (!dlist_is_empty(&open_buffiles))
		BufFileCloseInternal(dlist_container(BufFile, node,
											 dlist_head_node(&open_buffiles)),
							 LOG);
}

/*
 * Remove the space and its parent directory at process exit.  Runs after
 * shared memory detach, where FileSetDeleteAll may still use the space.
 */
static void
BufFileProcExit(int code, Datum arg)
{
	bf_stats	st;

	/*
	 * Under log_temp_files, say what temp_file_compression = auto chose in
	 * this process: the blocks it wrote per codec and its last decision.
	 */
	if (buffile_space != NULL && buffile_used_auto && log_temp_files >= 0)
	{
		bf_space_stats(buffile_space, &st);
		ereport(LOG,
				(errmsg("temporary file compression auto: blocks written none " UINT64_FORMAT ", lz4 " UINT64_FORMAT ", zstd " UINT64_FORMAT ", zlib " UINT64_FORMAT ", probing %.1f ms",
						st.blocks_by_codec[0], st.blocks_by_codec[1],
						st.blocks_by_codec[2], st.blocks_by_codec[3],
						st.auto_probe_ns / 1e6),
				 errdetail_internal("Last decision: %s",
									bf_space_auto_reason(buffile_space))));
	}
	bf_space_destroy(buffile_space);
	buffile_space = NULL;
	if (rmdir(buffile_parent) < 0 && errno != ENOENT)
		elog(LOG, "could not remove directory \"%s\": %m", buffile_parent);
	while (buffile_nfds > 0)
	{
		ReleaseExternalFD();
		buffile_nfds--;
	}
}

/*
 * Create a BufFile for a new temporary file, which is deleted at close.
 *
 * If interXact is true, the file survives the transaction and is closed at
 * process exit at the latest; otherwise it belongs to the current resource
 * owner and is closed at its release.
 */
BufFile *
BufFileCreateTemp(bool interXact)
{
	bf_space   *space = BufFileSpace();
	bf_file_options opts;
	bf_file    *bf;
	BufFile    *file;
	int			status;

	BufFileFileOptions(&opts);
	file = makeBufFile(interXact, NULL, NULL, NULL);
	status = bf_file_create(space, &opts, &bf);
	if (status != BF_OK)
	{
		BufFileFree(file);
		BufFileCreateFailure(status, bf_space_dir(space));
	}
	/* Log lines name the file: the path its segment files start with. */
	bf_file_path(bf, file->path, MAXPGPATH);
	file->wrote = true;
	return BufFileRemember(file, bf);
}

/*
 * Create a BufFile in a FileSet, to be opened by name by other backends
 * once it is exported or closed.  An older file of the same name is
 * replaced, as stock PostgreSQL truncates it.
 */
BufFile *
BufFileCreateFileSet(FileSet *fileset, const char *name)
{
	bf_space   *space = BufFileSpace();
	char		dir[MAXPGPATH];
	bf_file_options opts;
	bf_file    *bf;
	BufFile    *file;
	int			status;

	FileSetDirectory(fileset, name, dir, true);
	BufFileFileOptions(&opts);
	file = makeBufFile(false, fileset, name, dir);
	status = bf_file_create_named(space, dir, name, &opts, &bf);
	if (status == BF_EEXIST &&
		bf_file_delete_named(space, dir, name) == BF_OK)
		status = bf_file_create_named(space, dir, name, &opts, &bf);
	if (status != BF_OK)
	{
		char	   *path = pstrdup(file->path);

		BufFileFree(file);
		BufFileCreateFailure(status, path);
	}
	file->wrote = true;
	return BufFileRemember(file, bf);
}

/*
 * Open a file created with BufFileCreateFileSet in this FileSet, by this
 * backend or another, after it was exported or closed.  mode is O_RDONLY
 * or O_RDWR.  A missing file is an error unless missing_ok, which returns
 * NULL.
 */
BufFile *
BufFileOpenFileSet(FileSet *fileset, const char *name, int mode,
				   bool missing_ok)
{
	bf_space   *space = BufFileSpace();
	char		dir[MAXPGPATH];
	bool		readOnly = ((mode & O_ACCMODE) == O_RDONLY);
	bf_file    *bf;
	BufFile    *file;
	int			status;

	FileSetDirectory(fileset, name, dir, false);
	file = makeBufFile(false, fileset, name, dir);
	status = bf_file_open_named(space, dir, name,
								readOnly ? BF_OPEN_READONLY : BF_OPEN_READWRITE,
								&bf);
	if (status != BF_OK)
	{
		char	   *path = pstrdup(file->path);

		BufFileFree(file);
		if (status == BF_ENOENT && missing_ok)
		{
			pfree(path);
			return NULL;
		}
		if (status == BF_ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open temporary file \"%s\" from BufFile \"%s\": %s",
							path, name, bf_space_errmsg(space))));
		BufFileFailure(status, "open", path);
	}
	file->readOnly = readOnly;
	file->wrote = !readOnly;
	return BufFileRemember(file, bf);
}

/*
 * Delete a file created with BufFileCreateFileSet in this FileSet.  Deleting
 * is optional: removing the FileSet removes every file in it.  A missing
 * file is an error unless missing_ok.
 */
void
BufFileDeleteFileSet(FileSet *fileset, const char *name, bool missing_ok)
{
	bf_space   *space = BufFileSpace();
	char		dir[MAXPGPATH];
	int			status;

	FileSetDirectory(fileset, name, dir, false);
	status = bf_file_delete_named(space, dir, name);
	if (status == BF_ENOENT)
	{
		if (!missing_ok)
			elog(ERROR, "could not delete unknown BufFile \"%s\"", name);
		return;
	}
	if (status != BF_OK)
	{
		char		path[MAXPGPATH];

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		BufFileFailure(status, "delete", path);
	}
}

/*
 * Remove the directory of a FileSet with every file of ours in it, without
 * raising an error (FileSetDeleteAll runs in cleanup paths).  The usage of
 * the files was reported by the handles that wrote them, so nothing is
 * reported here (fd.c's walk, which runs next and finds nothing, would
 * report every segment and index file again).
 */
void
BufFileDeleteFileSetDirectory(const char *dirpath)
{
	/*
	 * A process that never opened a BufFile has no space (a parallel worker
	 * that detaches last, for one), and creating one in an exit path is no
	 * good: the library removes a set without one, it only cannot keep the
	 * message then.
	 */
	int			status = bf_fileset_destroy(buffile_space, dirpath);

	if (status != BF_OK && status != BF_ENOENT)
		ereport(LOG,
				(errmsg("could not remove temporary directory \"%s\": %s",
						dirpath, buffile_space != NULL ?
						bf_space_errmsg(buffile_space) : bf_strerror(status))));
}

/*
 * Flush a FileSet file and make it read-only, so that other backends may
 * open it.
 */
void
BufFileExportFileSet(BufFile *file)
{
	int			status;

	Assert(file->fileset != NULL);
	Assert(!file->readOnly);

	status = bf_file_flush(file->bf);
	if (status != BF_OK)
		BufFileFailure(status, "write", file->path);
	BufFileReportUsage(file);
	status = bf_file_export(file->bf);
	if (status != BF_OK)
		BufFileFailure(status, "export", file->path);
	file->readOnly = true;
}

/*
 * Close a BufFile.  A private temporary file is deleted; a FileSet file
 * stays until it is deleted by name or its FileSet goes.
 */
void
BufFileClose(BufFile *file)
{
	BufFileCloseInternal(file, ERROR);
}

/*
 * Like fread() with an element size of 1; errors are ereport()ed.  Returns
 * fewer bytes than asked for only at the end of the file.
 */
size_t
BufFileRead(BufFile *file, void *ptr, size_t size)
{
	int64		nread;

	nread = bf_file_read(file->bf, ptr, size);
	if (nread < 0)
		BufFileFailure((int) nread, "read from", file->path);
	return (size_t) nread;
}

/*
 * Like fwrite() with an element size of 1; errors are ereport()ed.
 */
void
BufFileWrite(BufFile *file, void *ptr, size_t size)
{
	int			status;

	Assert(!file->readOnly);

	status = bf_file_write(file->bf, ptr, size);
	if (status != BF_OK)
		BufFileFailure(status, "write to", file->path);
}

/*
 * Like fseek(), with the position given as (fileno, offset) as stock
 * PostgreSQL's segmented files have it: SEEK_SET to (fileno, offset),
 * SEEK_CUR by offset (fileno ignored), SEEK_END to the end plus offset.
 *
 * Returns 0, or EOF for an impossible seek (before the start, or past the
 * segment that holds the end of the file), which leaves the position as it
 * was.
 */
int
BufFileSeek(BufFile *file, int fileno, off_t offset, int whence)
{
	int64		size = (int64) bf_file_size(file->bf);
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
			target = (int64) bf_file_tell(file->bf) + offset;
			break;
		case SEEK_END:
			target = size + offset;
			break;
		default:
			elog(ERROR, "invalid whence: %d", whence);
			return EOF;
	}

	/* The segments stock PostgreSQL would have for this size: at least one. */
	nsegs = Max((size + MAX_PHYSICAL_FILESIZE - 1) / MAX_PHYSICAL_FILESIZE, 1);
	if (target < 0 || target > nsegs * MAX_PHYSICAL_FILESIZE)
		return EOF;

	status = bf_file_seek(file->bf, target, BF_SEEK_SET);
	if (status != BF_OK)
		BufFileFailure(status, "seek in", file->path);
	return 0;
}

void
BufFileTell(BufFile *file, int *fileno, off_t *offset)
{
	uint64		pos = bf_file_tell(file->bf);

	*fileno = (int) (pos / MAX_PHYSICAL_FILESIZE);
	*offset = (off_t) (pos % MAX_PHYSICAL_FILESIZE);
}

/*
 * Seek to the start of the blknum'th BLCKSZ block.  Returns 0 or EOF, as
 * BufFileSeek.
 */
int
BufFileSeekBlock(BufFile *file, long blknum)
{
	return BufFileSeek(file,
					   (int) (blknum / BUFFILE_SEG_SIZE),
					   (off_t) (blknum % BUFFILE_SEG_SIZE) * BLCKSZ,
					   SEEK_SET);
}

/*
 * The file's logical size in bytes, counting any holes left by
 * BufFileAppend.
 */
int64
BufFileSize(BufFile *file)
{
	return (int64) bf_file_size(file->bf);
}

/*
 * Append the contents of source, a read-only FileSet file, to target, a
 * file of the same FileSet, without copying: the source's data start at the
 * first block boundary at or after the target's end, and that block number
 * is returned, for callers to add to block numbers they kept in terms of the
 * source.  The target takes the source over: callers must not close the
 * source.
 */
long
BufFileAppend(BufFile *target, BufFile *source)
{
	uint64		start;
	int			status;
	MemoryContext oldcxt;

	Assert(target->fileset != NULL);
	Assert(source->fileset != NULL);
	Assert(source->readOnly);

	if (target->resowner != source->resowner)
		elog(ERROR, "could not append BufFile with non-matching resource owner");

	/*
	 * Parallel sort's leader appends the workers' files onto one it opened
	 * read-only: the library then gives this handle a view of the
	 * concatenation and persists nothing.  A writable target persists the
	 * splice and consumes the source, as stock PostgreSQL does.
	 */
	status = bf_file_append(target->bf, source->bf, &start);
	if (status != BF_OK)
		BufFileFailure(status, "append to", target->path);

	/* The source now belongs to the target, which closes it. */
	oldcxt = MemoryContextSwitchTo(BufFileContext);
	target->appended = lappend(target->appended, source);
	MemoryContextSwitchTo(oldcxt);
	dlist_delete(&source->node);

	Assert(start % BLCKSZ == 0);
	return (long) (start / BLCKSZ);
}

/*
 * Truncate a FileSet file to (fileno, offset).  A position past the new end
 * moves to the end; one before it stays.
 */
void
BufFileTruncateFileSet(BufFile *file, int fileno, off_t offset)
{
	uint64		newsize = (uint64) fileno * MAX_PHYSICAL_FILESIZE + offset;
	int			status;

	Assert(file->fileset != NULL);

	status = bf_file_truncate(file->bf, newsize);
	if (status == BF_OK && bf_file_tell(file->bf) > newsize)
		status = bf_file_seek(file->bf, (int64) newsize, BF_SEEK_SET);
	if (status != BF_OK)
		BufFileFailure(status, "truncate", file->path);
}

/*
 * GUC check hook for temp_file_compression: the method must be built into
 * libbuffile.
 */
bool
check_temp_file_compression(int *newval, void **extra, GucSource source)
{
	bf_codec	codec;

	switch (*newval)
	{
		case TEMP_FILE_COMPRESSION_LZ4:
			codec = BF_CODEC_LZ4;
			break;
		case TEMP_FILE_COMPRESSION_ZSTD:
			codec = BF_CODEC_ZSTD;
			break;
		case TEMP_FILE_COMPRESSION_ZLIB:
			codec = BF_CODEC_ZLIB;
			break;
		case TEMP_FILE_COMPRESSION_AUTO:
			codec = BF_CODEC_AUTO;
			break;
		default:
			return true;
	}
	if (!bf_codec_available(codec))
	{
		GUC_check_errdetail("This build's temporary file library does not support %s.",
							bf_codec_name(codec));
		return false;
	}
	return true;
}

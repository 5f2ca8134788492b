/*-------------------------------------------------------------------------
 *
 * buffile_compress.h
 *	  BufFiles stored through libbuffile: compressed temporary files.
 *
 * For buffile.c, which hands a file to these functions when it was created
 * while temp_file_compression was not "off" or temp_file_encryption was on
 * (or, for a FileSet file, when it was created so by any backend), and for
 * the GUC machinery.  Nothing outside storage/file should need it.
 *
 * Portions Copyright (c) 1996-2022, PostgreSQL Global Development Group
 *
 * src/include/storage/buffile_compress.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef BUFFILE_COMPRESS_H
#define BUFFILE_COMPRESS_H

#include "storage/buffile.h"
#include "storage/fileset.h"
#include "utils/guc.h"

/* GUC variable: "off", or a method with an optional level ("zstd:level=3") */
extern PGDLLIMPORT char *temp_file_compression;

/* GUC variable: seal new files with the server's key */
extern PGDLLIMPORT bool temp_file_encryption;

/* Its hooks; from 16 on, GUC hooks are declared in utils/guc_hooks.h. */
#if PG_VERSION_NUM < 160000
extern bool check_temp_file_compression(char **newval, void **extra,
										GucSource source);
extern void assign_temp_file_compression(const char *newval, void *extra);
extern bool check_temp_file_encryption(bool *newval, void **extra,
									   GucSource source);
#endif

/* The shared memory of codec=auto and of the key; for ipci.c */
extern Size CompressedBufFileShmemSize(void);
extern void CompressedBufFileShmemInit(void);

/* true when files created now go through the library */
extern bool CompressedBufFileWanted(void);

/* removes the library's files of a FileSet directory; for fileset.c */
extern void CompressedBufFileDeleteFileSetDirectory(const char *dirpath);

typedef struct CompressedBufFile CompressedBufFile;

#if PG_VERSION_NUM >= 160000
#define BUFFILE_WRITE_CONST const
#else
#define BUFFILE_WRITE_CONST
#endif

extern CompressedBufFile *CompressedBufFileCreateTemp(bool interXact);
extern CompressedBufFile *CompressedBufFileCreateFileSet(FileSet *fileset,
														 const char *name);
extern bool CompressedBufFileExists(FileSet *fileset, const char *name);
extern CompressedBufFile *CompressedBufFileOpenFileSet(FileSet *fileset,
													   const char *name,
													   int mode);
extern void CompressedBufFileDeleteFileSet(FileSet *fileset, const char *name);
extern void CompressedBufFileExportFileSet(CompressedBufFile *file);
extern void CompressedBufFileClose(CompressedBufFile *file);
extern size_t CompressedBufFileRead(CompressedBufFile *file, void *ptr,
									size_t size, bool exact, bool eofOK);
extern void CompressedBufFileWrite(CompressedBufFile *file,
								   BUFFILE_WRITE_CONST void *ptr, size_t size);
extern int	CompressedBufFileSeek(CompressedBufFile *file, int fileno,
								  off_t offset, int whence);
extern void CompressedBufFileTell(CompressedBufFile *file, int *fileno,
								  off_t *offset);
extern int64 CompressedBufFileSize(CompressedBufFile *file);
extern int64 CompressedBufFileAppend(CompressedBufFile *target,
									 CompressedBufFile *source);
extern void CompressedBufFileTruncateFileSet(CompressedBufFile *file,
											 int fileno, off_t offset);

#endif							/* BUFFILE_COMPRESS_H */

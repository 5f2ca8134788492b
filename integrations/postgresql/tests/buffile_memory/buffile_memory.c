/*-------------------------------------------------------------------------
 *
 * buffile_memory.c
 *	  The memory many open BufFiles take, stock's against pg_buffile's: a
 *	  helper of integrations/postgresql/scripts/pg-hook.sh (part memory).
 *
 * buffile_memory_open(n, bytes [, piece]) creates n temporary BufFiles, as a
 * hash join creates its batch files, and writes "bytes" bytes into each:
 * each file at once, or with "piece" > 0 in turns, "piece" bytes into every
 * file before the next piece of any, as a hash join spreads its tuples
 * over its batches (the files' memory then grows in step, as a join's
 * does).  They stay open, across statements, until buffile_memory_close().
 * Their BufFile structs (with stock's BLCKSZ buffer) live in the memory
 * context "BufFile memory test", and what pg_buffile and libbuffile hold for
 * the compressed ones in its child "pg_buffile files" (the space's shared
 * part in "pg_buffile"): pg_backend_memory_contexts shows them while the
 * files are open.
 *
 * Builds with PGXS against PostgreSQL 18 and master.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(buffile_memory_open);
PG_FUNCTION_INFO_V1(buffile_memory_close);

static MemoryContext test_context = NULL;
static BufFile **files = NULL;
static int	nfiles = 0;

/*
 * Create the files.  They are interXact files, which no resource owner
 * closes at the end of the statement.  The array of pointers lives outside
 * the test context: a hash join's would be in its own.
 */
Datum
buffile_memory_open(PG_FUNCTION_ARGS)
{
	int32		n = PG_GETARG_INT32(0);
	int32		bytes = PG_GETARG_INT32(1);
	int32		piece = PG_GETARG_INT32(2);
	char	   *data;
	MemoryContext oldcxt;

	if (test_context != NULL)
		elog(ERROR, "the files of buffile_memory_open() are open already");
	if (n < 1 || bytes < 0 || piece < 0)
		elog(ERROR, "buffile_memory_open() needs n >= 1, bytes >= 0 and piece >= 0");

	/* text of tuples of a kind: compressible, not trivially so */
	data = palloc(bytes + 1);
	for (int32 i = 0; i < bytes; i += 16)
		snprintf(data + i, bytes + 1 - i, "%015d|", i * 7919 % 1000003);

	files = MemoryContextAlloc(TopMemoryContext, sizeof(BufFile *) * n);
	test_context = AllocSetContextCreate(TopMemoryContext,
										 "BufFile memory test",
										 ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(test_context);
	for (nfiles = 0; nfiles < n; nfiles++)
	{
		CHECK_FOR_INTERRUPTS();
		files[nfiles] = BufFileCreateTemp(true);
		if (piece == 0)
			BufFileWrite(files[nfiles], data, bytes);
	}
	for (int64 off = 0; piece > 0 && off < bytes; off += piece)
	{
		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < n; i++)
			BufFileWrite(files[i], data + off, Min(piece, bytes - off));
	}
	MemoryContextSwitchTo(oldcxt);
	pfree(data);
	PG_RETURN_VOID();
}

/* Close the files and drop their context. */
Datum
buffile_memory_close(PG_FUNCTION_ARGS)
{
	for (int i = 0; i < nfiles; i++)
		BufFileClose(files[i]);
	nfiles = 0;
	if (files != NULL)
		pfree(files);
	files = NULL;
	if (test_context != NULL)
		MemoryContextDelete(test_context);
	test_context = NULL;
	PG_RETURN_VOID();
}

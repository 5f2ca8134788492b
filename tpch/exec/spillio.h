/*
 * spillio.h - tuple streams in buffile files, for hash-join batches and
 * hash-aggregate partitions.
 *
 * Record: u64 hash, then the tuple (whose first 4 bytes are its length).
 * Every open spill file is charged one block buffer to its operator's
 * memacct, as PostgreSQL charges a BufFile buffer per batch.
 */
#ifndef TPCH_SPILLIO_H
#define TPCH_SPILLIO_H

#include "qctx.h"

typedef struct spillfile {
    bf_file *f;
    uint64_t ntuples;
    uint8_t *rbuf;  /* read buffer for one tuple */
    size_t rcap;
} spillfile;

/* Create an empty spill file (returns a heap object owned by the caller). */
spillfile *spill_create(qctx *q, memacct *m);
void spill_write(qctx *q, spillfile *s, uint64_t hash, const tup *t);
/* Switch from writing to reading from the start. */
void spill_rewind(qctx *q, spillfile *s);
/* Next record, or NULL at the end. The tuple is valid until the next call. */
const tup *spill_read(qctx *q, spillfile *s, uint64_t *hash);
/* Close (deleting the file) and uncharge; NULL is a no-op. */
void spill_close(memacct *m, spillfile *s);

#endif

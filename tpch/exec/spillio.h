/*
 * spillio.h - tuple streams in buffile files, for hash-join batches and
 * hash-aggregate partitions.
 *
 * Record: u64 hash, then the tuple (whose first 4 bytes are its length).
 *
 * Memory: a spill file charges its operator's memacct exactly what the
 * library holds for it (bf_stats.memory_bytes): the block buffer as working
 * memory, the struct, block map and free list as library memory
 * (memacct.lib). The charge is re-read whenever the file's position enters
 * a new block, which is when the library allocates a buffer or grows the
 * map. A file that only waits to be read back is parked: its block buffer
 * is written out and freed (bf_file_release_buffer), so it costs its struct
 * and block map alone until it is read.
 */
#ifndef TPCH_SPILLIO_H
#define TPCH_SPILLIO_H

#include "qctx.h"

typedef struct spillfile {
    memacct *m;
    bf_file *f;
    uint64_t ntuples;
    uint64_t sync_at;  /* position at which to re-read the library's memory */
    bool buffered;     /* the library holds a block buffer for the file */
    int64_t work, lib; /* what is charged to m: block buffer + read buffer, the rest */
    uint8_t *rbuf;     /* read buffer for one tuple */
    size_t rcap;
} spillfile;

/*
 * What one more file being written costs an operator: a block buffer and the library's
 * struct (buffile.h: under 256 bytes). Its block map is extra, 16 bytes per block written.
 */
int64_t spill_writer_cost(const qctx *q);

/* Create an empty spill file charged to m (returns a heap object owned by the caller). */
spillfile *spill_create(qctx *q, memacct *m);
void spill_write(qctx *q, spillfile *s, uint64_t hash, const tup *t);
/* Write out and free the block buffer: the file waits to be read (or written again). */
void spill_park(qctx *q, spillfile *s);
/* Switch from writing to reading from the start. */
void spill_rewind(qctx *q, spillfile *s);
/* Next record, or NULL at the end. The tuple is valid until the next call. */
const tup *spill_read(qctx *q, spillfile *s, uint64_t *hash);
/* Close (deleting the file) and uncharge; NULL is a no-op. */
void spill_close(spillfile *s);

#endif

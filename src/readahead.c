/*
 * readahead.c - a block read ahead, unpacked on a worker (readahead.h).
 * Implements: bf_readahead_unpack.
 *
 * Why only this is here: everything that knows the file (its map, its
 * segments, its identity, the space's counters) stays on the caller's
 * thread, in file.c. The slot arrives holding a copy of the extent's bytes,
 * or a descriptor and offset to read them from (file.c pinned it, and
 * chose this only where the space's I/O is plain POSIX: no hook, throttle
 * or fault injector is called from here), and everything the check needs;
 * the task does what costs time (the pread, the CRC, opening a seal,
 * decompressing) and writes its results into the slot, and nothing else.
 * So a worker never touches the space, the file or the I/O hooks, as for
 * packing (workers.h).
 *
 * Invariants: the check is the one block_load makes (bf_extent_check,
 * bf_extent_expect), so a block taken from a slot is one the ordinary read
 * would have accepted; the caller codecs are not the worker's to call (the
 * caller never submits their extents, and a header naming one fails here).
 */
#include "readahead.h"

#include <string.h>

#include "io.h"

/* Read the extent's bytes (r->ext_len at r->at of r->fd) into `into`: BF_OK, or BF_EIO /
   BF_ECORRUPT (short: the segment ends first) with *why. */
static int read_extent(struct bf_job_read *r, unsigned char *into, const char **why)
{
    while (r->got < r->ext_len) {
        ssize_t n = bf_posix_io.pread(NULL, r->fd, into + r->got, r->ext_len - r->got,
                                      (off_t)(r->at + r->got));
        if (n <= 0) {
            *why = n == 0 ? "extent past the segment's end" : "read failed";
            return n == 0 ? BF_ECORRUPT : BF_EIO;
        }
        r->got += (uint32_t)n;
    }
    return BF_OK;
}

int bf_readahead_unpack(bf_job *j)
{
    struct bf_job_read *r = &j->rd;
    const unsigned char *ext = j->out;
    const char *why = NULL;
    bf_extent_info info = {0};
    r->codec_ns = 0;
    r->got = 0;
    if (r->fd >= 0) {
        int rc = read_extent(r, j->out, &why);
        if (rc != BF_OK) {
            j->info = info;
            r->why = why;
            return rc;
        }
    }
    int rc = bf_extent_check(ext, r->ext_len, r->expect_blkno, j->gen, r->block_size, &info, &why);
    if (rc == BF_OK)
        rc = bf_extent_expect(&info, r->map_raw, j->sealed, &why);
    /* The caller made the slot's context for the codec the header names; a CRC-checked
       header says the same, but a context of another codec must never be handed over. */
    if (rc == BF_OK && !info.raw && (j->ops == NULL || j->ops->id != info.codec)) {
        rc = BF_ECORRUPT;
        why = "extent of another codec than the one it was read ahead for";
    }
    if (rc == BF_OK) {
        bf_extent_seal seal = {j->seal, j->id};
        rc = bf_extent_unpack(ext, &info, j->ops, j->ctx, &seal, j->out + r->ext_len, j->data,
                              &r->codec_ns, &why);
    }
    if (rc == BF_OK) {
        memset(j->data + info.raw_len, 0, r->block_size - info.raw_len);
        if (j->fault != 0) { /* tests: a worker failing mid-block, its bytes unpacked then lost */
            rc = j->fault;
            why = "injected fault";
        }
    }
    j->info = info;
    r->why = why;
    return rc;
}

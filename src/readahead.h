/*
 * readahead.h - the worker's half of sequential reads decompressing ahead:
 * the task that checks and unpacks one extent in a slot (readahead.c).
 * The caller's half (which block, the slot's filling, taking or discarding
 * the result) is file.c's section "blocks unpacked ahead by the space's
 * workers".
 */
#ifndef BF_READAHEAD_H
#define BF_READAHEAD_H

#include "workers.h"

/*
 * A read job's task (bf_job.task), run on a worker: if rd.fd >= 0, read
 * the extent first (rd.ext_len bytes at rd.at of rd.fd, into j->out;
 * rd.got says how many it read); then verify the rd.ext_len extent bytes
 * at j->out as the block `rd.expect_blkno` of generation at most j->gen,
 * stored raw as `rd.map_raw` says and sealed as j->sealed (with j->seal
 * and j->id), then unpack it with j->ops and j->ctx into j->data
 * (rd.block_size bytes, zeros past the block's length). j->info says what
 * the extent is, rd.codec_ns the decompressor's time; on failure rd.why
 * says why. Touches nothing but the slot and that descriptor. Returns
 * BF_OK, BF_EIO or BF_ECORRUPT for a read that failed or came short, or
 * what bf_extent_check, bf_extent_expect or bf_extent_unpack returned (or
 * the slot's injected fault, tests).
 */
int bf_readahead_unpack(bf_job *j);

#endif

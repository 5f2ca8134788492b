/*
 * fileset.h - what the library's top file (api.c) asks of file sets
 * (fileset.c): closing a named file, which persists it (or rolls it back)
 * before the stream's memory goes, and aborting one. The public calls of
 * file sets are buffile.h's.
 */
#ifndef BF_FILESET_H
#define BF_FILESET_H

struct bf_file;

/* Close a named file: persist a writable one (or roll it back), then release it. */
int bf_named_close(struct bf_file *f);

/* Release a named file without persisting: a writable one is rolled back (bf_file_abort). */
int bf_named_abort(struct bf_file *f);

#endif

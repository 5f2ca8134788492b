/*
 * api.c - the public calls that span the library's layers, so that no layer
 * calls the one above it:
 *   bf_file_close, bf_file_abort   a named file through the file set, an
 *                                  anonymous one through the stream
 *   bf_space_destroy               the space's open files first, then its segment
 *                                  cache, then the space
 *   bf_space_stats_sized           the space's figures, its segment cache's and its
 *                                  open files' memory
 *
 * Invariants: none of its own; it only orders calls into fileset.c,
 * file.c and space.c.
 */
#include "abi.h"
#include "buffile.h"
#include "file.h"
#include "fileset.h"
#include "segment.h"
#include "space.h"

int bf_file_close(bf_file *f)
{
    if (f == NULL)
        return BF_OK;
    return f->named != NULL ? bf_named_close(f) : bf_file_discard(f);
}

int bf_file_abort(bf_file *f)
{
    if (f == NULL)
        return BF_OK;
    return f->named != NULL ? bf_named_abort(f) : bf_file_discard(f);
}

void bf_space_destroy(bf_space *sp)
{
    if (sp == NULL)
        return;
    while (sp->files != NULL)
        bf_file_close(sp->files);
    bf_segcache_free(&sp->alloc, &sp->segs);
    bf_space_free(sp);
}

void bf_space_stats_sized(const bf_space *sp, bf_stats *out, size_t size)
{
    bf_stats st;
    bf_space_stats_own(sp, &st);
    st.memory_bytes += bf_segcache_memory(&sp->segs);
    for (const bf_file *f = sp->files; f != NULL; f = f->next)
        st.memory_bytes += bf_file_memory(f);
    bf_abi_write(out, size, &st, sizeof(st));
}

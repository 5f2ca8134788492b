/* Writer of one .bin table file. Fixed-width arrays go straight to their
 * final place (the row count is known up front); string bytes go to one
 * unlinked temporary file per column and are copied behind the arrays at
 * the end, so memory stays bounded at any scale factor. The file is built as
 * <name>.bin.part and renamed when complete. */
#ifndef TPCH_GEN_BINW_H
#define TPCH_GEN_BINW_H

#include <stddef.h>
#include <stdint.h>

#include "gen_sink.h"

typedef struct tpch_binw tpch_binw;

int tpch_binw_open(tpch_binw **out, const char *dir, tpch_table_id t, uint64_t nrows,
                   char *err, size_t errlen);
/* Appends a chunk (chunks must come in row order). Rebases the sink's string
 * offsets in place. */
int tpch_binw_append(tpch_binw *w, tpch_sink *s, char *err, size_t errlen);
/* Completes the file and frees w (also on failure). */
int tpch_binw_finish(tpch_binw *w, char *err, size_t errlen);
/* Drops a half-written file and frees w. */
void tpch_binw_abort(tpch_binw *w);

#endif

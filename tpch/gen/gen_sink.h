/* A chunk's output in memory, in the format being written: .tbl text, or
 * per-column arrays for .bin (values, or chunk-relative string end offsets
 * plus string bytes). Filled by one worker, drained in order by the writer. */
#ifndef TPCH_GEN_SINK_H
#define TPCH_GEN_SINK_H

#include <stdint.h>

#include "gen_buf.h"
#include "gen_rows.h"

typedef struct {
    tpch_buf fixed; /* int64 values, int32 dates, or uint64 string end offsets */
    tpch_buf data;  /* string bytes */
} tpch_colbuf;

typedef struct {
    tpch_format fmt;
    const tpch_schema *schema;
    uint64_t nrows;
    tpch_buf text;
    tpch_colbuf col[TPCH_MAXCOLS];
} tpch_sink;

void tpch_sink_init(tpch_sink *s, tpch_format fmt, tpch_table_id t);
void tpch_sink_reset(tpch_sink *s); /* empties it, keeping the memory */
void tpch_sink_free(tpch_sink *s);
int tpch_sink_failed(const tpch_sink *s);
void tpch_sink_add(tpch_sink *s, const tpch_ctx *c, const tpch_row *row);

/* Appends row as one .tbl line ("v1|v2|...|vn|\n"). */
void tpch_tbl_add(tpch_buf *b, const tpch_schema *schema, const tpch_ctx *c, const tpch_row *row);

/* Generates units [first, first + n) of table t into out. For orders and
 * lineitem the unit is an order and both tables come out together: `out`
 * receives orders and `lines` lineitem (either may be NULL). */
void tpch_chunk_gen(const tpch_ctx *c, tpch_table_id t, uint64_t first, uint64_t n,
                    tpch_sink *out, tpch_sink *lines);

#endif

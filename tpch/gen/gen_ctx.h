/* Everything generation needs that is shared read-only by all threads: row
 * counts, lists, the text pool, date constants and per-column stream seeds.
 * Built once by tpch_ctx_init; never modified afterwards. */
#ifndef TPCH_GEN_CTX_H
#define TPCH_GEN_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "gen_dates.h"
#include "gen_lists.h"
#include "gen_schema.h"

/* Streams beyond the per-column ones. */
enum { TPCH_STREAM_LINECOUNT = TPCH_MAXCOLS, /* orders: lines per order */
       TPCH_STREAM_BBB,                      /* supplier: Complaints/Recommends rows */
       TPCH_NSTREAMS };

typedef struct {
    tpch_counts n;
    tpch_lists lists;
    char *pool;                   /* TPCH_POOL_BYTES of comment text */
    int32_t start_date;           /* 1992-01-01 */
    int32_t end_date;             /* 1998-12-31 */
    int32_t current_date;         /* 1995-06-17 */
    char (*datestr)[10];          /* "YYYY-MM-DD" for start_date..end_date */
    uint64_t seed[TPCH_NTABLES][TPCH_NSTREAMS];
} tpch_ctx;

int tpch_ctx_init(tpch_ctx *c, double sf, char *err, size_t errlen);
void tpch_ctx_free(tpch_ctx *c);

/* Draw k (< TPCH_DRAWS_PER_ROW) of table t's stream s for row r. */
static inline uint64_t tpch_ctx_draw(const tpch_ctx *c, tpch_table_id t, int s, uint64_t r,
                                     unsigned k)
{
    return tpch_draw(c->seed[t][s], r * TPCH_DRAWS_PER_ROW + k);
}

static inline void tpch_ctx_date(const tpch_ctx *c, int32_t days, char out[10])
{
    if (days >= c->start_date && days <= c->end_date) {
        const char *s = c->datestr[days - c->start_date];
        for (int i = 0; i < 10; i++)
            out[i] = s[i];
    } else {
        tpch_format_date(days, out);
    }
}

#endif

/* Builds the shared generation context. Stream seeds are derived from the
 * (table, stream) numbers only, so output never depends on thread count or
 * on which tables are requested. */
#include "gen_ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_dates.h"
#include "gen_text.h"

int tpch_ctx_init(tpch_ctx *c, double sf, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    tpch_counts_init(&c->n, sf);
    if (tpch_lists_load(&c->lists, err, errlen) != 0)
        return -1;
    c->start_date = tpch_days_from_civil(1992, 1, 1);
    c->end_date = tpch_days_from_civil(1998, 12, 31);
    c->current_date = tpch_days_from_civil(1995, 6, 17);
    c->pool = tpch_text_pool_build(&c->lists);
    c->datestr = malloc(sizeof *c->datestr * (size_t)(c->end_date - c->start_date + 1));
    if (!c->pool || !c->datestr) {
        snprintf(err, errlen, "out of memory");
        tpch_ctx_free(c);
        return -1;
    }
    for (int32_t d = c->start_date; d <= c->end_date; d++)
        tpch_format_date(d, c->datestr[d - c->start_date]);
    for (int t = 0; t < TPCH_NTABLES; t++)
        for (int s = 0; s < TPCH_NSTREAMS; s++)
            c->seed[t][s] = tpch_mix64(0x7470636867656e00ull ^ ((uint64_t)t << 8 | (uint64_t)s));
    return 0;
}

void tpch_ctx_free(tpch_ctx *c)
{
    tpch_lists_free(&c->lists);
    free(c->pool);
    free(c->datestr);
    memset(c, 0, sizeof *c);
}

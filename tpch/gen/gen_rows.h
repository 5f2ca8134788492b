/* Column rules: turn a row number into the row's values. Pure functions of
 * (ctx, row), which is what makes chunked and threaded generation produce
 * the same bytes as one sequential run. */
#ifndef TPCH_GEN_ROWS_H
#define TPCH_GEN_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "gen_ctx.h"

/* One generated row. Integers, money (hundredths) and dates (days) live in
 * v[]; strings in s[]/len[], pointing into the lists, the text pool, static
 * strings or scratch[] (so a row must outlive its use of s[]). */
typedef struct {
    int64_t v[TPCH_MAXCOLS];
    const char *s[TPCH_MAXCOLS];
    uint32_t len[TPCH_MAXCOLS];
    size_t used;
    char scratch[512];
} tpch_row;

#define TPCH_MAX_LINES 7

/* An order with its lines; lines are numbered by order index, so an order
 * range is independent of the others. */
typedef struct {
    tpch_row order;
    int nlines;
    tpch_row line[TPCH_MAX_LINES];
} tpch_order_rows;

/* Row r (0-based) of part, supplier, partsupp, customer, nation or region. */
void tpch_row_gen(const tpch_ctx *c, tpch_table_id t, uint64_t r, tpch_row *row);
/* Order k (0-based) and its lines. */
void tpch_order_gen(const tpch_ctx *c, uint64_t k, tpch_order_rows *o);
/* Number of lines of order k, without generating it. */
int tpch_order_nlines(const tpch_ctx *c, uint64_t k);

#endif

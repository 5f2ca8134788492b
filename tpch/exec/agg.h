/*
 * agg.h - aggregate functions: transition state and output, shared by the
 * hash and the sorted (group) aggregate.
 *
 * All aggregates work on int64 columns (money in hundredths or finer fixed
 * point, counts, keys), exactly: a sum that would overflow int64 fails the
 * query instead of wrapping. SUM/MIN/MAX of no non-NULL input are NULL.
 */
#ifndef TPCH_AGG_H
#define TPCH_AGG_H

#include <stdint.h>

#include "qctx.h"

typedef enum {
    AGG_SUM,
    AGG_COUNT_STAR,
    AGG_COUNT,          /* non-NULL values of col */
    AGG_MIN,
    AGG_MAX,
    AGG_COUNT_DISTINCT, /* distinct values of col; input sorted on it within the group */
} agg_kind;

typedef struct aggspec {
    agg_kind kind;
    int col;
} aggspec;

#define AGG_MAX_AGGS 16

typedef struct aggstate {
    int64_t val;
    int64_t cnt; /* non-NULL inputs seen */
    int64_t aux; /* COUNT_DISTINCT: last value */
} aggstate;

void agg_init(aggstate *st, int naggs);
void agg_advance(qctx *q, aggstate *st, const aggspec *aggs, int naggs, const tup *row);
/* Append one field per aggregate to the row being built. */
void agg_emit(tbuild *tb, const aggstate *st, const aggspec *aggs, int naggs);

#endif

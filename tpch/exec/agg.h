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
    AGG_COUNT, /* non-NULL values of col */
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

#define AGG_MAX_KEYS 12

/*
 * What an aggregate operator computes: group key columns of its input,
 * where each key sits in a stored key row (keyid[i] = i), and aggregates.
 */
typedef struct aggdesc {
    int nkeys, naggs;
    int keys[AGG_MAX_KEYS];
    int keyid[AGG_MAX_KEYS];
    aggspec aggs[AGG_MAX_AGGS];
} aggdesc;

/* Fill `d` from a plan's keys and aggregates; q_fail()s naming `what` when there are too many. */
void aggdesc_init(qctx *q, aggdesc *d, const char *what, int nkeys, const int *keys, int naggs,
                  const aggspec *aggs);

void agg_init(aggstate *st, int naggs);
void agg_advance(qctx *q, aggstate *st, const aggspec *aggs, int naggs, const tup *row);
/* Append one field per aggregate to the row being built. */
void agg_emit(tbuild *tb, const aggstate *st, const aggspec *aggs, int naggs);

#endif

/*
 * qhelp.h - small helpers that keep the hand-built plans short: string
 * predicates (SQL =, LIKE 'x%', '%x', '%x%', '%x%y%', IN), join/select/
 * aggregate shorthands and scalar-subquery evaluation.
 *
 * Plans name columns by position; each query file documents the row
 * layout after every join in a comment, which is the contract the
 * positions rely on.
 */
#ifndef TPCH_QHELP_H
#define TPCH_QHELP_H

#include <stdbool.h>

#include "dates.h"
#include "db.h"
#include "queries.h"

bool s_eq(const tup *t, int col, const char *lit);
bool s_prefix(const tup *t, int col, const char *lit);
bool s_suffix(const tup *t, int col, const char *lit);
bool s_contains(const tup *t, int col, const char *lit);
/* LIKE '%a%b%': a, then b after it. */
bool s_contains2(const tup *t, int col, const char *a, const char *b);
/* col equals one of the NULL-terminated list. */
bool s_in(const tup *t, int col, const char *const *list);

#define COLS(...) (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (int[]){__VA_ARGS__}
#define SELECT(q, child, ...) op_select((q), (child), COLS(__VA_ARGS__))
#define AGGS(...) (int)(sizeof((aggspec[]){__VA_ARGS__}) / sizeof(aggspec)), (aggspec[]){__VA_ARGS__}
#define SKEYS(...) (int)(sizeof((sortkey[]){__VA_ARGS__}) / sizeof(sortkey)), (sortkey[]){__VA_ARGS__}

/* Single-key hash join, no extra condition. */
op *hj1(qctx *q, op *outer, op *inner, jointype jt, int okey, int ikey);
/* Two-key hash join. */
op *hj2(qctx *q, op *outer, op *inner, jointype jt, int ok1, int ok2, int ik1, int ik2);

/* Run `o` to completion and return the listed fields of its first row
 * (NULL reads as 0, and *isnull, when given, tells). */
int64_t q_scalar(qctx *q, op *o, int col, bool *isnull);
void q_scalars(qctx *q, op *o, int n, const int *cols, int64_t *out);

/* ep * (100 - disc): revenue in 1/10000 currency units. */
static inline int64_t disc_price(int64_t ep, int64_t disc)
{
    return ep * (100 - disc);
}

/* Projection of (col 0, col 1 = extendedprice, col 2 = discount) to (col 0, disc_price). */
const tup *key_revenue(const tup *r, tbuild *tb, void *arg);

#endif

/*
 * ops.h - the executor's operators (pull iterators, see op in qctx.h).
 *
 * Every operator returns rows through op->next; a returned tuple stays valid
 * until the next call on the same operator. Operators that hold data
 * (hash join, hash aggregate, sort) respect q->work_mem through their own
 * memacct and spill through the query's buffile space.
 */
#ifndef TPCH_OPS_H
#define TPCH_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "agg.h"
#include "keys.h"
#include "qctx.h"

/* --- scan over a generated binary table -------------------------------- */
typedef bool (*scan_pred_fn)(const tup *row, void *arg);
/* Columns by name, comma separated ("l_orderkey,l_quantity"); rows where
 * pred (if any) is true. Dates come out as int64 days, decimals as int64
 * hundredths, strings as bytes. */
op *op_scan(qctx *q, int table, const char *columns, scan_pred_fn pred, void *arg);

/* --- rows from memory (tests, small constant inputs) ------------------- */
typedef const tup *(*gen_fn)(void *arg, uint64_t i, tbuild *tb); /* NULL ends */
op *op_generate(qctx *q, int natts, gen_fn gen, void *arg);

/* --- filter and project ------------------------------------------------- */
typedef bool (*pred_fn)(const tup *row, void *arg);
op *op_filter(qctx *q, op *child, pred_fn pred, void *arg);
/* The callback builds the output row of `natts` fields into tb and returns tb_end(tb). */
typedef const tup *(*project_fn)(const tup *row, tbuild *tb, void *arg);
op *op_project(qctx *q, op *child, int natts, project_fn fn, void *arg);
/* Keep the listed columns, in that order. */
op *op_select(qctx *q, op *child, int ncols, const int *cols);

/* --- hash join ------------------------------------------------------------ */
typedef enum { JOIN_INNER, JOIN_LEFT, JOIN_SEMI, JOIN_ANTI } jointype;
/* Extra condition on a key match (e.g. l2.l_suppkey <> l1.l_suppkey); NULL = none. */
typedef bool (*join_qual_fn)(const tup *outer, const tup *inner, void *arg);
/* INNER/LEFT return outer fields then inner fields (inner NULLs when LEFT finds no
 * match); SEMI/ANTI return the outer row. The inner input is the one hashed. */
op *op_hashjoin(qctx *q, op *outer, op *inner, jointype jt, int nkeys, const int *okeys,
                const int *ikeys, join_qual_fn qual, void *qual_arg);

/* --- aggregation ---------------------------------------------------------- */
/* Output: the key fields, then one field per aggregate (agg.h). With no keys
 * there is exactly one output row, even for empty input. */
op *op_hashagg(qctx *q, op *child, int nkeys, const int *keys, int naggs, const aggspec *aggs);
/* Same output for input sorted on the keys (streaming; COUNT_DISTINCT needs
 * the input also sorted on the counted column within each group). */
op *op_groupagg(qctx *q, op *child, int nkeys, const int *keys, int naggs, const aggspec *aggs);

/* --- sort -------------------------------------------------------------------- */
/* External merge sort; limit >= 0 makes it a top-N (bounded heap, no spill). */
op *op_sort(qctx *q, op *child, int nkeys, const sortkey *keys, int64_t limit);

#endif

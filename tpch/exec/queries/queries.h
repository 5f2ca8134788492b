/*
 * queries.h - the 22 TPC-H queries as hand-built plans, with the
 * specification's validation parameters (the substitution values of each
 * query's Query Validation clause, as in the standard texts that
 * tpch/oracle/sql/qN.sql translate: Q1's DELTA = 90, Q3's BUILDING, ...).
 *
 * A query's plan function builds its operator tree (running scalar
 * subqueries to completion first where the query needs a constant, as in
 * Q11, Q15, Q22) and returns the root; its rows are the query's result in
 * order, fields in select-list order, formatted per `cols`.
 */
#ifndef TPCH_QUERIES_H
#define TPCH_QUERIES_H

#include "ops.h"
#include "result.h"

typedef struct qdef {
    int num;
    op *(*plan)(qctx *q);
    int ncols;
    const outcol *cols;
} qdef;

#define TPCH_NQUERIES 22

/* Query 1..22, or NULL. */
const qdef *query_get(int num);

extern const qdef tpch_q1, tpch_q2, tpch_q3, tpch_q4, tpch_q5, tpch_q6, tpch_q7, tpch_q8, tpch_q9,
    tpch_q10, tpch_q11, tpch_q12, tpch_q13, tpch_q14, tpch_q15, tpch_q16, tpch_q17, tpch_q18,
    tpch_q19, tpch_q20, tpch_q21, tpch_q22;

#endif

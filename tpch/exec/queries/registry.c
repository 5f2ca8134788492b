/*
 * registry.c - query number -> plan definition.
 */
#include "queries.h"

#include <stddef.h>

static const qdef *const all[TPCH_NQUERIES] = {
    &tpch_q1,  &tpch_q2,  &tpch_q3,  &tpch_q4,  &tpch_q5,  &tpch_q6,  &tpch_q7,  &tpch_q8,
    &tpch_q9,  &tpch_q10, &tpch_q11, &tpch_q12, &tpch_q13, &tpch_q14, &tpch_q15, &tpch_q16,
    &tpch_q17, &tpch_q18, &tpch_q19, &tpch_q20, &tpch_q21, &tpch_q22,
};

const qdef *query_get(int num)
{
    return num >= 1 && num <= TPCH_NQUERIES ? all[num - 1] : NULL;
}

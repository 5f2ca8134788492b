/*
 * keys.h - hashing, equality and ordering of tuple fields named by column
 * positions: the only place that interprets key bytes.
 *
 * Hashes are computed from field bytes, so the same values hash alike at
 * any column position (a join's two sides agree). NULLs hash to a fixed
 * value; keys_equal treats NULL as equal to NULL (grouping semantics) and
 * joins check for NULL keys themselves.
 */
#ifndef TPCH_KEYS_H
#define TPCH_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "tuple.h"

uint64_t keys_hash(const tup *t, int nkeys, const int *cols);
bool keys_equal(const tup *a, const int *acols, const tup *b, const int *bcols, int nkeys);
bool keys_any_null(const tup *t, int nkeys, const int *cols);

typedef enum { SK_I64, SK_F64, SK_STR } sk_type;

typedef struct sortkey {
    int col;
    sk_type type;
    bool desc;
} sortkey;

/* Compare two tuples on the sort keys; NULLs sort last ascending, first descending. */
int keys_compare(const tup *a, const tup *b, int nkeys, const sortkey *keys);

#endif

/*
 * result.h - formatting result rows in the results format that the SQLite
 * oracle writes too (docs/oracle.md), so agreeing answers compare field by
 * field: one row a line, fields joined by '|', a NULL empty, strings with
 * trailing spaces trimmed, dates YYYY-MM-DD, hundredths with 2 decimals,
 * computed values with 4 decimals.
 */
#ifndef TPCH_RESULT_H
#define TPCH_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "tuple.h"

typedef enum {
    OC_STR,  /* string, trailing spaces trimmed */
    OC_DATE, /* int64 days since 1970-01-01 */
    OC_INT,  /* int64 printed as digits */
    OC_DEC2, /* int64 hundredths, printed with 2 decimals */
    OC_FIX,  /* int64 fixed point with `scale` decimal digits, printed with 4 */
    OC_F64,  /* double, printed with 4 decimals */
} oc_kind;

typedef struct outcol {
    oc_kind kind;
    int scale; /* OC_FIX only */
} outcol;

typedef struct strbuf {
    char *p;
    size_t len, cap;
} strbuf;

void sb_free(strbuf *b);
void sb_append(strbuf *b, const char *s, size_t n);
/* Append one row (fields 0..ncols-1 of t) and a newline. */
void result_format_row(strbuf *b, const tup *t, int ncols, const outcol *cols);
/* Days since 1970-01-01 to "YYYY-MM-DD" (buf >= 11 bytes). */
void result_date(int64_t days, char *buf);

#endif

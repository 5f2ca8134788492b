/* Calendar dates as days since 1970-01-01 (proleptic Gregorian), and the
 * TPC-H date constants. */
#ifndef TPCH_GEN_DATES_H
#define TPCH_GEN_DATES_H

#include <stdint.h>

int32_t tpch_days_from_civil(int y, int m, int d);
/* Writes "YYYY-MM-DD" (10 bytes, no NUL) for days in year 1..9999. */
void tpch_format_date(int32_t days, char out[10]);

#endif

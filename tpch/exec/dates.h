/*
 * dates.h - proleptic Gregorian calendar <-> days since 1970-01-01, the
 * generator's date representation.
 */
#ifndef TPCH_DATES_H
#define TPCH_DATES_H

#include <stdint.h>

int64_t date_days(int y, int m, int d);
void date_civil(int64_t days, int *y, int *m, int *d);
int date_year(int64_t days);

#endif

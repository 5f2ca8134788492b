/* Date arithmetic for the generator's small range of years; clarity over
 * speed because hot paths use the pre-formatted table in tpch_ctx. */
#include "gen_dates.h"

static int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(int y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return days[m - 1] + (m == 2 && is_leap(y));
}

int32_t tpch_days_from_civil(int y, int m, int d)
{
    int32_t days = 0;
    for (int yy = 1970; yy < y; yy++)
        days += 365 + is_leap(yy);
    for (int yy = y; yy < 1970; yy++)
        days -= 365 + is_leap(yy);
    for (int mm = 1; mm < m; mm++)
        days += month_days(y, mm);
    return days + d - 1;
}

static void put_digits(char *out, int v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        out[i] = (char)('0' + v % 10);
}

void tpch_format_date(int32_t days, char out[10])
{
    int y = 1970;
    while (days < 0)
        days += 365 + is_leap(--y);
    while (days >= 365 + is_leap(y))
        days -= 365 + is_leap(y++);
    int m = 1;
    while (days >= month_days(y, m))
        days -= month_days(y, m++);
    put_digits(out, y, 4);
    out[4] = '-';
    put_digits(out + 5, m, 2);
    out[7] = '-';
    put_digits(out + 8, days + 1, 2);
}

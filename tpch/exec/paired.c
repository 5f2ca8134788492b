/*
 * paired.c - paired ratios, their t intervals, and the per-round shuffle
 * (the method is in paired.h).
 */
#include "paired.h"

#include <math.h>
#include <stddef.h>

double pd_t975(int df)
{
    /* Student's t, 97.5th percentile, df 1..30; beyond that the normal value
       with the usual first-order correction. */
    static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1)
        return NAN;
    if (df <= 30)
        return t[df - 1];
    return 1.959964 * (1 + 1.0 / (4.0 * df));
}

/* Interval from n log ratios. */
static pd_interval from_logs(const double *lr, int n)
{
    pd_interval iv = {NAN, NAN, NAN, n};
    if (n < 1)
        return iv;
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += lr[i];
    mean /= n;
    iv.est = iv.lo = iv.hi = exp(mean);
    if (n < 2)
        return iv;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (lr[i] - mean) * (lr[i] - mean);
    double half = pd_t975(n - 1) * sqrt(ss / (n - 1) / n);
    iv.lo = exp(mean - half);
    iv.hi = exp(mean + half);
    return iv;
}

#define PD_MAX 4096

pd_interval pd_ratio(const double *num, const double *den, int n)
{
    double lr[PD_MAX];
    if (n > PD_MAX)
        n = PD_MAX;
    for (int i = 0; i < n; i++)
        lr[i] = log(num[i] / den[i]);
    return from_logs(lr, n);
}

pd_interval pd_suite(const double *t, int rounds, int nq, int nc, int c, const unsigned char *use)
{
    double lr[PD_MAX];
    int used = 0;
    for (int q = 0; q < nq; q++)
        used += use[q] != 0;
    if (used == 0 || rounds > PD_MAX)
        return from_logs(NULL, 0);
    for (int r = 0; r < rounds; r++) {
        double sum = 0;
        for (int q = 0; q < nq; q++) {
            if (!use[q])
                continue;
            const double *row = t + ((size_t)r * nq + q) * nc;
            sum += log(row[c] / row[0]);
        }
        lr[r] = sum / used;
    }
    return from_logs(lr, rounds);
}

double pd_halfwidth(const pd_interval *iv)
{
    return exp((log(iv->hi) - log(iv->lo)) / 2) - 1;
}

int pd_holds_one(const pd_interval *iv)
{
    return iv->lo <= 1.0 && iv->hi >= 1.0;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void pd_shuffle(uint64_t seed, int round, int n, int *order)
{
    uint64_t s = seed ^ (0x5851f42d4c957f2dull * (uint64_t)(round + 1));
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(splitmix(&s) % (uint64_t)(i + 1));
        int tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
}

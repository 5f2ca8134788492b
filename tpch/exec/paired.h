/*
 * paired.h - statistics of paired, interleaved timing runs (spillbench
 * --rounds with several configurations).
 *
 * Each round runs every configuration once, in an order shuffled per round,
 * so slow spells of the machine hit all configurations alike; a
 * configuration is then compared with the first one through the ratios of
 * the two within each round (paired). The estimate is the geometric mean of
 * those ratios and the interval a Student t interval on their logarithms:
 * times are positive and their noise multiplicative, so logs make it
 * additive and symmetric. A suite figure takes, per round, the geometric
 * mean over the chosen queries of their ratios, and then the same interval
 * over the rounds.
 */
#ifndef TPCH_PAIRED_H
#define TPCH_PAIRED_H

#include <stdint.h>

typedef struct pd_interval {
    double est;    /* geometric mean of the paired ratios */
    double lo, hi; /* 95% confidence interval; lo = hi = est when n < 2 */
    int n;         /* pairs it is made of */
} pd_interval;

/* Two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1). */
double pd_t975(int df);

/* Ratios num[i] / den[i], i < n (all positive): their geometric mean and 95% interval. */
pd_interval pd_ratio(const double *num, const double *den, int n);

/*
 * Suite ratio of configuration c against configuration 0: t[(r * nq + q) * nc + c]
 * is the time of query q in round r under configuration c; queries with use[q] != 0
 * count. Per round the geometric mean over those queries of t[c] / t[0], then
 * pd_ratio's interval over the rounds. n = 0 when no query counts.
 */
pd_interval pd_suite(const double *t, int rounds, int nq, int nc, int c, const unsigned char *use);

/* Half-width of the interval in the log domain, as a share: exp((log hi - log lo) / 2) - 1. */
double pd_halfwidth(const pd_interval *iv);

/* 1 when the interval holds 1.0: no measurable difference. */
int pd_holds_one(const pd_interval *iv);

/* order[0..n) = a permutation of 0..n-1 for round `round`, from `seed` (Fisher-Yates). */
void pd_shuffle(uint64_t seed, int round, int n, int *order);

#endif

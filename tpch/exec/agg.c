/*
 * agg.c - aggregate transition and output (see agg.h).
 */
#include "agg.h"

#include <string.h>

void aggdesc_init(qctx *q, aggdesc *d, const char *what, int nkeys, const int *keys, int naggs,
                  const aggspec *aggs)
{
    if (nkeys < 0 || nkeys > AGG_MAX_KEYS || naggs < 0 || naggs > AGG_MAX_AGGS)
        q_fail(q, "%s: %d keys, %d aggregates: too many", what, nkeys, naggs);
    d->nkeys = nkeys;
    d->naggs = naggs;
    for (int i = 0; i < nkeys; i++) {
        d->keys[i] = keys[i];
        d->keyid[i] = i;
    }
    memcpy(d->aggs, aggs, sizeof *aggs * (size_t)naggs);
}

void agg_init(aggstate *st, int naggs)
{
    for (int i = 0; i < naggs; i++) {
        st[i].val = 0;
        st[i].cnt = 0;
        st[i].aux = 0;
    }
}

void agg_advance(qctx *q, aggstate *st, const aggspec *aggs, int naggs, const tup *row)
{
    for (int i = 0; i < naggs; i++) {
        aggstate *s = &st[i];
        if (aggs[i].kind == AGG_COUNT_STAR) {
            s->val++;
            continue;
        }
        if (tup_isnull(row, aggs[i].col))
            continue;
        int64_t x = tup_i64(row, aggs[i].col);
        switch (aggs[i].kind) {
        case AGG_SUM:
            if (__builtin_add_overflow(s->val, x, &s->val))
                q_fail(q, "sum overflows int64");
            break;
        case AGG_COUNT: s->val++; break;
        case AGG_MIN:
            if (s->cnt == 0 || x < s->val)
                s->val = x;
            break;
        case AGG_MAX:
            if (s->cnt == 0 || x > s->val)
                s->val = x;
            break;
        case AGG_COUNT_DISTINCT:
            if (s->cnt == 0 || x != s->aux)
                s->val++;
            s->aux = x;
            break;
        case AGG_COUNT_STAR: break;
        }
        s->cnt++;
    }
}

void agg_emit(tbuild *tb, const aggstate *st, const aggspec *aggs, int naggs)
{
    for (int i = 0; i < naggs; i++) {
        agg_kind k = aggs[i].kind;
        if ((k == AGG_SUM || k == AGG_MIN || k == AGG_MAX) && st[i].cnt == 0)
            tb_null(tb);
        else
            tb_i64(tb, st[i].val);
    }
}

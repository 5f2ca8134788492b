/*
 * qhelp.c - plan helpers (see qhelp.h).
 */
#include "qhelp.h"

#include <string.h>

static bool find(const char *s, uint32_t len, const char *lit, uint32_t *at)
{
    size_t n = strlen(lit);
    for (uint32_t i = 0; i + n <= len; i++) {
        if (memcmp(s + i, lit, n) == 0) {
            *at = i;
            return true;
        }
    }
    return false;
}

bool s_eq(const tup *t, int col, const char *lit)
{
    uint32_t len;
    const char *s = tup_str(t, col, &len);
    return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

bool s_prefix(const tup *t, int col, const char *lit)
{
    uint32_t len;
    const char *s = tup_str(t, col, &len);
    size_t n = strlen(lit);
    return n <= len && memcmp(s, lit, n) == 0;
}

bool s_suffix(const tup *t, int col, const char *lit)
{
    uint32_t len;
    const char *s = tup_str(t, col, &len);
    size_t n = strlen(lit);
    return n <= len && memcmp(s + len - n, lit, n) == 0;
}

bool s_contains(const tup *t, int col, const char *lit)
{
    uint32_t len, at;
    const char *s = tup_str(t, col, &len);
    return find(s, len, lit, &at);
}

bool s_contains2(const tup *t, int col, const char *a, const char *b)
{
    uint32_t len, at, at2;
    const char *s = tup_str(t, col, &len);
    if (!find(s, len, a, &at))
        return false;
    uint32_t skip = at + (uint32_t)strlen(a);
    return find(s + skip, len - skip, b, &at2);
}

bool s_in(const tup *t, int col, const char *const *list)
{
    for (; *list; list++)
        if (s_eq(t, col, *list))
            return true;
    return false;
}

op *hj1(qctx *q, op *outer, op *inner, jointype jt, int okey, int ikey)
{
    return op_hashjoin(q, outer, inner, jt, 1, &okey, &ikey, NULL, NULL);
}

op *hj2(qctx *q, op *outer, op *inner, jointype jt, int ok1, int ok2, int ik1, int ik2)
{
    int ok[2] = {ok1, ok2}, ik[2] = {ik1, ik2};
    return op_hashjoin(q, outer, inner, jt, 2, ok, ik, NULL, NULL);
}

void q_scalars(qctx *q, op *o, int n, const int *cols, int64_t *out)
{
    const tup *t = o->next(o);
    if (!t)
        q_fail(q, "scalar subquery returned no row");
    for (int i = 0; i < n; i++)
        out[i] = tup_isnull(t, cols[i]) ? 0 : tup_i64(t, cols[i]);
    while (o->next(o))
        ;
}

int64_t q_scalar(qctx *q, op *o, int col, bool *isnull)
{
    const tup *t = o->next(o);
    if (!t)
        q_fail(q, "scalar subquery returned no row");
    bool nul = tup_isnull(t, col);
    int64_t v = nul ? 0 : tup_i64(t, col);
    if (isnull)
        *isnull = nul;
    while (o->next(o))
        ;
    return v;
}

const tup *key_revenue(const tup *r, tbuild *tb, void *arg)
{
    (void)arg;
    tb_begin(tb, 2);
    tb_copy(tb, r, 0);
    tb_i64(tb, disc_price(tup_i64(r, 1), tup_i64(r, 2)));
    return tb_end(tb);
}

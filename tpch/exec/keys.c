/*
 * keys.c - key hashing, equality and comparison (see keys.h).
 */
#include "keys.h"

#include <string.h>

static uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static uint64_t hash_bytes(const uint8_t *p, uint32_t len)
{
    if (len == 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        return fmix64(v ^ 0x9e3779b97f4a7c15ULL);
    }
    uint64_t h = 0xcbf29ce484222325ULL ^ len;
    for (uint32_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return fmix64(h);
}

uint64_t keys_hash(const tup *t, int nkeys, const int *cols)
{
    uint64_t h = 0x84222325cbf29ce4ULL;
    for (int i = 0; i < nkeys; i++) {
        uint64_t fh;
        if (tup_isnull(t, cols[i])) {
            fh = 0x5bd1e995ULL;
        } else {
            uint32_t len;
            const uint8_t *p = tup_field(t, cols[i], &len);
            fh = hash_bytes(p, len);
        }
        h = fmix64(h ^ (fh + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
    }
    return h;
}

bool keys_equal(const tup *a, const int *acols, const tup *b, const int *bcols, int nkeys)
{
    for (int i = 0; i < nkeys; i++) {
        bool an = tup_isnull(a, acols[i]), bn = tup_isnull(b, bcols[i]);
        if (an || bn) {
            if (an != bn)
                return false;
            continue;
        }
        uint32_t al, bl;
        const uint8_t *ap = tup_field(a, acols[i], &al);
        const uint8_t *bp = tup_field(b, bcols[i], &bl);
        if (al != bl || memcmp(ap, bp, al) != 0)
            return false;
    }
    return true;
}

bool keys_any_null(const tup *t, int nkeys, const int *cols)
{
    for (int i = 0; i < nkeys; i++)
        if (tup_isnull(t, cols[i]))
            return true;
    return false;
}

static int cmp_field(const tup *a, const tup *b, const sortkey *k)
{
    switch (k->type) {
    case SK_I64: {
        int64_t x = tup_i64(a, k->col), y = tup_i64(b, k->col);
        return (x > y) - (x < y);
    }
    case SK_F64: {
        double x = tup_f64(a, k->col), y = tup_f64(b, k->col);
        return (x > y) - (x < y);
    }
    case SK_STR:
    default: {
        uint32_t al, bl;
        const char *ap = tup_str(a, k->col, &al);
        const char *bp = tup_str(b, k->col, &bl);
        int c = memcmp(ap, bp, al < bl ? al : bl);
        if (c)
            return c < 0 ? -1 : 1;
        return (al > bl) - (al < bl);
    }
    }
}

int keys_compare(const tup *a, const tup *b, int nkeys, const sortkey *keys)
{
    for (int i = 0; i < nkeys; i++) {
        const sortkey *k = &keys[i];
        bool an = tup_isnull(a, k->col), bn = tup_isnull(b, k->col);
        int c;
        if (an || bn)
            c = an == bn ? 0 : (an ? 1 : -1);
        else
            c = cmp_field(a, b, k);
        if (c)
            return k->desc ? -c : c;
    }
    return 0;
}

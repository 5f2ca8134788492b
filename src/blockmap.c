/*
 * blockmap.c - the two-level block map: leaves dense or compact, growth,
 * lookup, the changes between hole and data, shrinking.
 *
 * Invariants (outside a call, allocation failures aside):
 *  - a leaf holds at least one entry with data or reserved (`used` counts
 *    them), else it is freed (NULL);
 *  - a compact leaf stores no other entries; its capacity is
 *    compact_cap(used) and its keys ascend;
 *  - a dense leaf costs at most 1.5 times what a compact one holding the
 *    same entries would (worth_compact is false), and a compact one less
 *    than a dense one covering its largest key (worth_dense is false when
 *    it was last grown).
 * Every call that can fail allocates before it changes anything visible, so
 * a failed allocation leaves the map as it was; the calls that cannot fail
 * (clear, shrink) fall back to holding more memory.
 */
#include "blockmap.h"

#include <string.h>

#include "alloc.h"

#define LEAF_MASK (BF_MAP_LEAF - 1)

/* Entries (or directory slots) to allocate for k in use: k rounded up to an eighth step. */
static uint32_t round_cap(uint32_t k)
{
    if (k <= 16)
        return k == 0 ? 0 : 16;
    uint32_t q = 1u << (31 - __builtin_clz(k - 1) - 3);
    return (k + q - 1) / q * q;
}

/* A dense leaf holding index k - 1: k in eighth steps, at most a leaf. */
static uint32_t dense_cap(uint32_t k)
{
    uint32_t c = round_cap(k);
    return c < BF_MAP_LEAF ? c : BF_MAP_LEAF;
}

/* A compact leaf of k entries: exactly k while small, then eighth steps. */
static uint32_t compact_cap(uint32_t k)
{
    return k <= 16 ? k : round_cap(k);
}

static uint64_t dense_bytes(uint32_t cap)
{
    return sizeof(bf_map_leaf) + (uint64_t)cap * sizeof(bf_map_entry);
}

static uint64_t compact_bytes(uint32_t cap)
{
    return sizeof(bf_map_leaf) + (uint64_t)cap * (sizeof(bf_map_entry) + sizeof(uint16_t));
}

static uint32_t nleaves(uint32_t n)
{
    return n == 0 ? 0 : ((n - 1) >> BF_MAP_LEAF_SHIFT) + 1;
}

static int is_compact(const void *t)
{
    return ((uintptr_t)t & 1) != 0;
}

static bf_map_leaf *leaf_of(void *t)
{
    return (bf_map_leaf *)((uintptr_t)t & ~(uintptr_t)1);
}

static void *tag_compact(bf_map_leaf *l)
{
    return (void *)((uintptr_t)l | 1);
}

static uint16_t *keys_of(const bf_map_leaf *l)
{
    return (uint16_t *)(l->e + l->cap);
}

static uint64_t leaf_bytes(void *t)
{
    bf_map_leaf *l = leaf_of(t);
    return l == NULL ? 0 : is_compact(t) ? compact_bytes(l->cap) : dense_bytes(l->cap);
}

/* An entry holding data, or reserved by bf_map_slot. */
static int occupied(const bf_map_entry *e)
{
    return e->cap != 0 || (e->len & BF_MAP_RESERVED) != 0;
}

static void reserve(bf_map_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->len = BF_MAP_RESERVED;
}

/* A dense leaf of `cap` entries, `used` of them occupied, is worth making compact. */
static int worth_compact(uint32_t cap, uint32_t used)
{
    return dense_bytes(cap) * 2 > compact_bytes(compact_cap(used)) * 3;
}

/* The first position of a compact leaf whose key is >= i. */
static uint32_t lower_bound(const bf_map_leaf *l, uint32_t i)
{
    const uint16_t *k = keys_of(l);
    uint32_t lo = 0, hi = l->used;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (k[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bf_map_entry *bf_map_find(const bf_map_leaf *l, uint32_t i)
{
    uint32_t pos = lower_bound(l, i);
    return pos < l->used && keys_of(l)[pos] == i ? (bf_map_entry *)&l->e[pos] : NULL;
}

/* Where the leaf of `blkno` (< n) is kept: the map's pointer, or a directory slot. */
static void **leaf_ref(bf_blockmap *m, uint64_t blkno)
{
    return m->n <= BF_MAP_LEAF ? &m->p : &((void **)m->p)[blkno >> BF_MAP_LEAF_SHIFT];
}

/*
 * A compact leaf of the occupied entries of dense leaf `d`, plus room
 * reserved at index `hole` unless it is BF_MAP_LEAF; NULL when the
 * allocation failed.
 */
static bf_map_leaf *to_compact(const bf_allocator *a, const bf_map_leaf *d, uint32_t hole)
{
    uint32_t n = d->used + (hole < BF_MAP_LEAF);
    bf_map_leaf *c = bf_malloc(a, (size_t)compact_bytes(compact_cap(n)));
    if (c == NULL)
        return NULL;
    c->cap = compact_cap(n);
    c->used = 0;
    uint16_t *k = keys_of(c);
    for (uint32_t i = 0; i < d->cap || (hole < BF_MAP_LEAF && i <= hole); i++) {
        if (i == hole) {
            reserve(&c->e[c->used]);
            k[c->used++] = (uint16_t)i;
        } else if (i < d->cap && occupied(&d->e[i])) {
            c->e[c->used] = d->e[i];
            k[c->used++] = (uint16_t)i;
        }
    }
    return c;
}

/* Dense leaf `t` made compact if that pays, where allocation allows. */
static void maybe_compact(void **ref, const bf_allocator *a)
{
    bf_map_leaf *d = *ref;
    if (d == NULL || is_compact(d) || !worth_compact(d->cap, d->used))
        return;
    bf_map_leaf *c = to_compact(a, d, BF_MAP_LEAF);
    if (c == NULL)
        return;
    bf_free(a, d);
    *ref = tag_compact(c);
}

/* Set a compact leaf's capacity to compact_cap(used), moving its keys; 0 on failure. */
static int compact_resize(void **ref, const bf_allocator *a, uint32_t used)
{
    bf_map_leaf *l = leaf_of(*ref);
    uint32_t cap = compact_cap(used), old = l->cap;
    if (cap == old)
        return 1;
    if (cap < old) { /* keys move down first, then the block shrinks */
        memmove(l->e + cap, l->e + old, (size_t)l->used * sizeof(uint16_t));
        l->cap = cap;
        bf_map_leaf *g = bf_realloc(a, l, (size_t)compact_bytes(cap));
        if (g != NULL) {
            *ref = tag_compact(g);
            return 1;
        }
        l->cap = old; /* a failed shrink holds more, and says so */
        memmove(l->e + old, l->e + cap, (size_t)l->used * sizeof(uint16_t));
        return 0;
    }
    bf_map_leaf *g = bf_realloc(a, l, (size_t)compact_bytes(cap));
    if (g == NULL)
        return 0;
    memmove(g->e + cap, g->e + old, (size_t)g->used * sizeof(uint16_t));
    g->cap = cap;
    *ref = tag_compact(g);
    return 1;
}

/* The entry of index i in the leaf at *ref, reserved if it was a hole; NULL on failure. */
static bf_map_entry *leaf_slot(void **ref, const bf_allocator *a, uint32_t i)
{
    void *t = *ref;
    bf_map_leaf *l = leaf_of(t);
    if (l == NULL) {
        l = bf_malloc(a, (size_t)compact_bytes(1));
        if (l == NULL)
            return NULL;
        l->used = l->cap = 1;
        reserve(&l->e[0]);
        keys_of(l)[0] = (uint16_t)i;
        *ref = tag_compact(l);
        return &l->e[0];
    }
    if (!is_compact(t)) {
        if (i < l->cap) {
            if (!occupied(&l->e[i])) {
                reserve(&l->e[i]);
                l->used++;
            }
            return &l->e[i];
        }
        uint32_t cap = dense_cap(i + 1);
        if (worth_compact(cap, l->used + 1)) {
            bf_map_leaf *c = to_compact(a, l, i);
            if (c == NULL)
                return NULL;
            bf_free(a, l);
            *ref = tag_compact(c);
            return bf_map_find(c, i);
        }
        bf_map_leaf *g = bf_realloc(a, l, (size_t)dense_bytes(cap));
        if (g == NULL)
            return NULL;
        memset(&g->e[g->cap], 0, (size_t)(cap - g->cap) * sizeof(g->e[0]));
        g->cap = cap;
        reserve(&g->e[i]);
        g->used++;
        *ref = g;
        return &g->e[i];
    }
    uint32_t pos = lower_bound(l, i);
    uint16_t *k = keys_of(l);
    if (pos < l->used && k[pos] == i)
        return &l->e[pos];
    uint32_t top = l->used > 0 && k[l->used - 1] > i ? k[l->used - 1] : i;
    uint32_t dcap = dense_cap(top + 1);
    if (dense_bytes(dcap) <= compact_bytes(compact_cap(l->used + 1))) {
        bf_map_leaf *d = bf_calloc(a, 1, (size_t)dense_bytes(dcap));
        if (d == NULL)
            return NULL;
        d->cap = dcap;
        d->used = l->used + 1;
        for (uint32_t j = 0; j < l->used; j++)
            d->e[k[j]] = l->e[j];
        reserve(&d->e[i]);
        bf_free(a, l);
        *ref = d;
        return &d->e[i];
    }
    if (!compact_resize(ref, a, l->used + 1))
        return NULL;
    l = leaf_of(*ref);
    k = keys_of(l);
    memmove(&l->e[pos + 1], &l->e[pos], (size_t)(l->used - pos) * sizeof(l->e[0]));
    memmove(&k[pos + 1], &k[pos], (size_t)(l->used - pos) * sizeof(k[0]));
    reserve(&l->e[pos]);
    k[pos] = (uint16_t)i;
    l->used++;
    return &l->e[pos];
}

/* Cover n > m->n blocks: only the directory changes (leaves keep what they hold). */
static int grow(bf_blockmap *m, const bf_allocator *a, uint32_t n)
{
    uint32_t L = nleaves(n);
    if (n > BF_MAP_LEAF) {
        void **dir;
        uint32_t L0;
        if (m->n <= BF_MAP_LEAF) {
            dir = bf_malloc(a, (size_t)round_cap(L) * sizeof(*dir));
            if (dir == NULL)
                return 0;
            dir[0] = m->p;
            L0 = 1;
        } else {
            dir = m->p;
            L0 = nleaves(m->n);
            if (round_cap(L) > round_cap(L0)) {
                dir = bf_realloc(a, dir, (size_t)round_cap(L) * sizeof(*dir));
                if (dir == NULL)
                    return 0;
            }
        }
        memset(dir + L0, 0, (size_t)(L - L0) * sizeof(*dir));
        m->p = dir;
    }
    m->n = n;
    return 1;
}

bf_map_entry *bf_map_slot(bf_blockmap *m, const bf_allocator *a, uint32_t blkno)
{
    uint32_t old_n = m->n;
    if (blkno >= m->n && !grow(m, a, blkno + 1))
        return NULL;
    bf_map_entry *e = leaf_slot(leaf_ref(m, blkno), a, blkno & LEAF_MASK);
    if (e == NULL)
        bf_map_shrink(m, a, old_n); /* the directory as it was: nothing past old_n holds data */
    return e;
}

void bf_map_put(bf_blockmap *m, uint32_t blkno, const bf_map_entry *v)
{
    *bf_map_get(m, blkno) = *v; /* occupied already (reserved or data): no count changes */
}

/* Free the leaf at *ref when nothing in it holds data. */
static int drop_if_empty(void **ref, const bf_allocator *a)
{
    bf_map_leaf *l = leaf_of(*ref);
    if (l == NULL || l->used > 0)
        return l == NULL;
    bf_free(a, l);
    *ref = NULL;
    return 1;
}

void bf_map_clear(bf_blockmap *m, const bf_allocator *a, uint64_t blkno)
{
    if (blkno >= m->n || m->p == NULL)
        return;
    void **ref = leaf_ref(m, blkno);
    void *t = *ref;
    bf_map_leaf *l = leaf_of(t);
    uint32_t i = (uint32_t)(blkno & LEAF_MASK);
    if (l == NULL)
        return;
    if (is_compact(t)) {
        uint32_t pos = lower_bound(l, i);
        uint16_t *k = keys_of(l);
        if (pos == l->used || k[pos] != i)
            return;
        l->used--;
        memmove(&l->e[pos], &l->e[pos + 1], (size_t)(l->used - pos) * sizeof(l->e[0]));
        memmove(&k[pos], &k[pos + 1], (size_t)(l->used - pos) * sizeof(k[0]));
        if (!drop_if_empty(ref, a))
            compact_resize(ref, a, l->used);
        return;
    }
    if (i < l->cap && occupied(&l->e[i])) {
        memset(&l->e[i], 0, sizeof(l->e[i]));
        l->used--;
    }
    if (!drop_if_empty(ref, a))
        maybe_compact(ref, a);
}

bf_map_entry *bf_map_next(const bf_blockmap *m, uint64_t *blkno)
{
    uint64_t b = *blkno;
    uint32_t L = nleaves(m->n);
    while (b < m->n && m->p != NULL) {
        void *t = m->p;
        if (m->n > BF_MAP_LEAF) {
            /* A far block leaves a directory of holes to cross: cross it pointer by pointer. */
            void *const *dir = m->p;
            uint32_t li = (uint32_t)(b >> BF_MAP_LEAF_SHIFT);
            if (dir[li] == NULL) {
                while (++li < L && dir[li] == NULL)
                    ;
                if (li == L)
                    return NULL;
                b = (uint64_t)li << BF_MAP_LEAF_SHIFT;
            }
            t = dir[li];
        }
        uint64_t base = b & ~(uint64_t)LEAF_MASK, end = base + BF_MAP_LEAF;
        bf_map_leaf *l = leaf_of(t);
        if (l != NULL && is_compact(t)) {
            const uint16_t *k = keys_of(l);
            for (uint32_t pos = lower_bound(l, (uint32_t)(b - base)); pos < l->used; pos++) {
                if (l->e[pos].cap != 0) {
                    *blkno = base + k[pos];
                    return &l->e[pos];
                }
            }
        } else if (l != NULL) {
            for (uint32_t i = (uint32_t)(b - base); i < l->cap; i++) {
                if (l->e[i].cap != 0) {
                    *blkno = base + i;
                    return &l->e[i];
                }
            }
        }
        b = end;
    }
    return NULL;
}

/* Forget the entries of indexes >= fill of the leaf at *ref; give memory back where allowed. */
static void cut_leaf(void **ref, const bf_allocator *a, uint32_t fill)
{
    void *t = *ref;
    bf_map_leaf *l = leaf_of(t);
    if (l == NULL)
        return;
    if (is_compact(t)) {
        l->used = lower_bound(l, fill);
        if (!drop_if_empty(ref, a))
            compact_resize(ref, a, l->used);
        return;
    }
    for (uint32_t i = fill; i < l->cap; i++) {
        l->used -= occupied(&l->e[i]);
        memset(&l->e[i], 0, sizeof(l->e[i]));
    }
    if (drop_if_empty(ref, a))
        return;
    uint32_t cap = dense_cap(fill);
    if (cap < l->cap) {
        bf_map_leaf *g = bf_realloc(a, l, (size_t)dense_bytes(cap));
        if (g != NULL) {
            g->cap = cap;
            *ref = g;
        }
    }
    maybe_compact(ref, a);
}

void bf_map_shrink(bf_blockmap *m, const bf_allocator *a, uint32_t nblocks)
{
    if (nblocks >= m->n)
        return;
    uint32_t L = nleaves(nblocks);
    if (m->n > BF_MAP_LEAF) {
        void **dir = m->p;
        for (uint32_t i = L, end = nleaves(m->n); i < end; i++) {
            if (dir[i] != NULL) {
                bf_free(a, leaf_of(dir[i]));
                dir[i] = NULL;
            }
        }
        if (nblocks > BF_MAP_LEAF) {
            /* Failures to give memory back are harmless: larger arrays stay valid. */
            void **d = bf_realloc(a, dir, (size_t)round_cap(L) * sizeof(*dir));
            m->p = d != NULL ? d : dir;
            cut_leaf(&((void **)m->p)[L - 1], a, ((nblocks - 1) & LEAF_MASK) + 1);
            m->n = nblocks;
            return;
        }
        /* Back to a single leaf. */
        m->p = L > 0 ? dir[0] : NULL;
        bf_free(a, dir);
    }
    if (nblocks == 0) {
        bf_free(a, leaf_of(m->p));
        m->p = NULL;
    } else {
        cut_leaf(&m->p, a, nblocks);
    }
    m->n = nblocks;
}

uint64_t bf_map_memory(const bf_blockmap *m)
{
    if (m->n <= BF_MAP_LEAF)
        return leaf_bytes(m->p);
    uint32_t L = nleaves(m->n);
    void **dir = m->p;
    uint64_t bytes = (uint64_t)round_cap(L) * sizeof(*dir);
    for (uint32_t i = 0; i < L; i++)
        if (dir[i] != NULL)
            bytes += leaf_bytes(dir[i]);
    return bytes;
}

void bf_map_free(bf_blockmap *m, const bf_allocator *a)
{
    bf_map_shrink(m, a, 0);
    memset(m, 0, sizeof(*m));
}

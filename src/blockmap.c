/*
 * blockmap.c - the two-level block map: leaves dense or compact, growth,
 * lookup, the changes between hole and data, shrinking.
 * Implements: bf_map_find, bf_map_slot, bf_map_put, bf_map_clear,
 * bf_map_next, bf_map_shrink, bf_map_memory, bf_map_free (blockmap.h).
 *
 * Invariants (outside a call, allocation failures aside):
 *  - a leaf holds at least one entry with data or reserved (its `used`
 *    counts them), else it is freed (NULL); its counts are the map's `one`
 *    or, with a directory, the directory's after its pointers;
 *  - a compact leaf stores no other entries; its capacity is
 *    compact_cap(used) and its keys ascend;
 *  - a dense leaf costs at most 1.5 times what exactly its occupied entries
 *    would cost compact (worth_compact is false), and a compact one less
 *    than a dense one covering its largest key (worth_dense was false when
 *    it was last grown).
 * Every call that can fail allocates before it changes anything visible, so
 * a failed allocation leaves the map as it was; the calls that cannot fail
 * (clear, shrink) fall back to holding more memory.
 */
#include "blockmap.h"

#include <string.h>

#include "alloc.h"

#define LEAF_MASK (BF_MAP_LEAF - 1)

/* A dense leaf holding index k - 1: k in eighth steps, at most a leaf. */
static uint32_t dense_cap(uint32_t k)
{
    uint32_t c = bf_map_round_cap(k);
    return c < BF_MAP_LEAF ? c : BF_MAP_LEAF;
}

/*
 * A compact leaf of k entries: 1, 2, 3, 5, 8, 13 or 16 while small, then eighth steps.
 * Exactly k cost a realloc at every block of a file's first 14 (a sequential file's leaf
 * turns dense at the 15th): ~116 instructions a block of the spill's common case
 * (docs/results/none-path-profile.md); these steps make it 5 reallocs before the leaf
 * turns dense at the 14th block. At most 1.44 times k entries (13 for 9), 26 bytes a
 * block: within the 31 that buffile.h promises, which powers of two (16 for 9) were not.
 */
static uint32_t compact_cap(uint32_t k)
{
    static const uint8_t small[17] = {0, 1, 2, 3, 5, 5, 8, 8, 8, 13, 13, 13, 13, 13, 16, 16, 16};
    return k <= 16 ? small[k] : bf_map_round_cap(k);
}

static uint64_t dense_bytes(uint32_t cap)
{
    return (uint64_t)cap * sizeof(bf_map_entry);
}

static uint64_t compact_bytes(uint32_t cap)
{
    return (uint64_t)cap * (sizeof(bf_map_entry) + sizeof(uint16_t));
}

static uint32_t nleaves(uint32_t n)
{
    return n == 0 ? 0 : ((n - 1) >> BF_MAP_LEAF_SHIFT) + 1;
}

/*
 * A leaf: where its pointer is kept (bit 0 set: compact), its counts, and,
 * with a directory, its bit in the directory's map of leaves present (word
 * NULL: the single leaf).
 */
typedef struct leaf {
    void **p;
    bf_map_meta *m;
    uint64_t *word, bit;
} leaf;

static int is_compact(const void *t)
{
    return ((uintptr_t)t & 1) != 0;
}

static bf_map_entry *entries(const void *t)
{
    return (bf_map_entry *)((uintptr_t)t & ~(uintptr_t)1);
}

static void *tag_compact(bf_map_entry *e)
{
    return (void *)((uintptr_t)e | 1);
}

static uint16_t *keys_of(const bf_map_entry *e, bf_map_meta meta)
{
    return (uint16_t *)(e + meta.cap);
}

static uint64_t leaf_bytes(const void *t, bf_map_meta meta)
{
    return t == NULL ? 0 : is_compact(t) ? compact_bytes(meta.cap) : dense_bytes(meta.cap);
}

/*
 * The directory of dcap slots (an even number): dcap leaf pointers, their
 * counts, then a bit per slot that says a leaf is there. A slot is read
 * only once its bit is set (leaf_at initialises it when it is not), so a
 * directory grown to a far block touches its bits and the slots used, not
 * 12 MiB of zeros, and crossing it from a block near 0 to one near 2^32
 * takes 16 K words, not a million pointers.
 */
static bf_map_meta *dir_meta(void **dir, uint32_t dcap)
{
    return (bf_map_meta *)(dir + dcap);
}

static uint64_t *dir_present(void **dir, uint32_t dcap)
{
    return (uint64_t *)(dir_meta(dir, dcap) + dcap);
}

static uint32_t words(uint32_t dcap)
{
    return (dcap + 63) / 64;
}

static uint64_t dir_bytes(uint32_t dcap)
{
    return (uint64_t)dcap * (sizeof(void *) + sizeof(bf_map_meta)) +
           (uint64_t)words(dcap) * sizeof(uint64_t);
}

/* The first leaf present at or after slot `li` of a directory of L leaves, or L. */
static uint32_t next_present(void *const *dir, uint32_t dcap, uint32_t li, uint32_t L)
{
    const uint64_t *w = dir_present((void **)dir, dcap);
    if (li >= L)
        return L;
    uint32_t k = li / 64;
    uint64_t bits = w[k] & (~UINT64_C(0) << (li % 64));
    while (bits == 0) {
        if (++k >= words(dcap) || (uint64_t)k * 64 >= L)
            return L;
        bits = w[k];
    }
    uint32_t found = k * 64 + (uint32_t)__builtin_ctzll(bits);
    return found < L ? found : L;
}

/* The leaf of `blkno` (< n); a directory slot without one is made a NULL leaf. */
static leaf leaf_at(bf_blockmap *m, uint64_t blkno)
{
    if (m->n <= BF_MAP_LEAF)
        return (leaf){&m->p, &m->one, NULL, 0};
    void **dir = m->p;
    uint32_t li = (uint32_t)(blkno >> BF_MAP_LEAF_SHIFT), dcap = bf_map_dir_cap(m->n);
    leaf lf = {&dir[li], &dir_meta(dir, dcap)[li], &dir_present(dir, dcap)[li / 64],
               UINT64_C(1) << (li % 64)};
    if ((*lf.word & lf.bit) == 0) {
        *lf.p = NULL;
        *lf.m = (bf_map_meta){0, 0};
    }
    return lf;
}

/* An entry holding data, or reserved by bf_map_slot. */
static int occupied(const bf_map_entry *e)
{
    return e->cap != 0 || (e->len & (BF_MAP_RESERVED | BF_MAP_BARE)) != 0;
}

static void reserve(bf_map_entry *e)
{
    memset(e, 0, sizeof(*e));
    e->len = BF_MAP_RESERVED;
}

/*
 * A dense leaf of `cap` entries, `used` of them occupied, is worth making compact: it costs
 * more than 1.5 times `used` compact entries, 27 bytes a block holding data. Measured against
 * compact_cap(used) instead (up to 1.44 times used) a dense leaf could keep 39 bytes a block,
 * over the 31 buffile.h states.
 */
static int worth_compact(uint32_t cap, uint32_t used)
{
    return dense_bytes(cap) * 2 > compact_bytes(used) * 3;
}

/* The first position of a compact leaf whose key is >= i. */
static uint32_t lower_bound(const bf_map_entry *e, bf_map_meta meta, uint32_t i)
{
    const uint16_t *k = keys_of(e, meta);
    uint32_t lo = 0, hi = meta.used;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (k[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bf_map_entry *bf_map_find(const bf_map_entry *e, bf_map_meta meta, uint32_t i)
{
    uint32_t pos = lower_bound(e, meta, i);
    return pos < meta.used && keys_of(e, meta)[pos] == i ? (bf_map_entry *)&e[pos] : NULL;
}

/*
 * Dense leaf `lf` made compact, with room reserved at index `hole` unless it
 * is BF_MAP_LEAF; 0 when the allocation failed (the leaf is as it was).
 */
static int to_compact(leaf lf, const bf_allocator *a, uint32_t hole)
{
    const bf_map_entry *d = *lf.p;
    bf_map_meta dm = *lf.m, cm = {(uint16_t)(dm.used + (hole < BF_MAP_LEAF)), 0};
    cm.cap = (uint16_t)compact_cap(cm.used);
    bf_map_entry *c = bf_malloc(a, (size_t)compact_bytes(cm.cap));
    if (c == NULL)
        return 0;
    uint16_t *k = keys_of(c, cm);
    uint32_t n = 0;
    for (uint32_t i = 0; i < dm.cap || (hole < BF_MAP_LEAF && i <= hole); i++) {
        if (i == hole) {
            reserve(&c[n]);
            k[n++] = (uint16_t)i;
        } else if (i < dm.cap && occupied(&d[i])) {
            c[n] = d[i];
            k[n++] = (uint16_t)i;
        }
    }
    bf_free(a, *lf.p);
    *lf.p = tag_compact(c);
    *lf.m = cm;
    return 1;
}

/* Dense leaf `lf` made compact if that pays, where allocation allows. */
static void maybe_compact(leaf lf, const bf_allocator *a)
{
    if (*lf.p != NULL && !is_compact(*lf.p) && worth_compact(lf.m->cap, lf.m->used))
        to_compact(lf, a, BF_MAP_LEAF);
}

/* Set a compact leaf's capacity to compact_cap(used), moving its keys; 0 on failure. */
static int compact_resize(leaf lf, const bf_allocator *a, uint32_t used)
{
    bf_map_entry *e = entries(*lf.p);
    bf_map_meta old = *lf.m, now = {(uint16_t)used, (uint16_t)compact_cap(used)};
    if (now.cap == old.cap) {
        lf.m->used = now.used;
        return 1;
    }
    if (now.cap < old.cap) { /* keys move down first, then the block shrinks */
        memmove(keys_of(e, now), keys_of(e, old), (size_t)now.used * sizeof(uint16_t));
        bf_map_entry *g = bf_realloc(a, e, (size_t)compact_bytes(now.cap));
        if (g == NULL) { /* a failed shrink holds more, and counts it */
            memmove(keys_of(e, old), keys_of(e, now), (size_t)now.used * sizeof(uint16_t));
            lf.m->used = now.used;
            return 0;
        }
        *lf.p = tag_compact(g);
        *lf.m = now;
        return 1;
    }
    bf_map_entry *g = bf_realloc(a, e, (size_t)compact_bytes(now.cap));
    if (g == NULL)
        return 0;
    memmove(keys_of(g, now), keys_of(g, old), (size_t)old.used * sizeof(uint16_t));
    *lf.p = tag_compact(g);
    lf.m->cap = now.cap; /* the caller counts the entry it adds */
    return 1;
}

/*
 * The entry of index i of leaf `lf`, reserved if it was a hole; NULL on failure. `past`:
 * the block is at or past the map's old end, where no entry is occupied (a dense leaf's
 * are zero, a compact leaf's keys all below: bf_map_shrink, cut_leaf), so the entry is not
 * read first: an append to a file, the common case, has its new entry's line out of the
 * cache as a rule (zeroed when the leaf last grew).
 */
static bf_map_entry *leaf_slot(leaf lf, const bf_allocator *a, uint32_t i, int past)
{
    void *t = *lf.p;
    bf_map_entry *e = entries(t);
    if (e == NULL) {
        e = bf_malloc(a, (size_t)compact_bytes(1));
        if (e == NULL)
            return NULL;
        *lf.m = (bf_map_meta){1, 1};
        reserve(&e[0]);
        keys_of(e, *lf.m)[0] = (uint16_t)i;
        *lf.p = tag_compact(e);
        if (lf.word != NULL)
            *lf.word |= lf.bit;
        return &e[0];
    }
    if (!is_compact(t)) {
        if (i < lf.m->cap) {
            if (past || !occupied(&e[i])) {
                reserve(&e[i]);
                lf.m->used++;
            }
            return &e[i];
        }
        uint32_t cap = dense_cap(i + 1);
        if (worth_compact(cap, lf.m->used + 1u))
            return to_compact(lf, a, i) ? bf_map_find(entries(*lf.p), *lf.m, i) : NULL;
        bf_map_entry *g = bf_realloc(a, e, (size_t)dense_bytes(cap));
        if (g == NULL)
            return NULL;
        memset(&g[lf.m->cap], 0, (size_t)(cap - lf.m->cap) * sizeof(g[0]));
        reserve(&g[i]);
        *lf.p = g;
        *lf.m = (bf_map_meta){(uint16_t)(lf.m->used + 1), (uint16_t)cap};
        return &g[i];
    }
    bf_map_meta meta = *lf.m;
    uint32_t pos = past ? meta.used : lower_bound(e, meta, i);
    uint16_t *k = keys_of(e, meta);
    if (pos < meta.used && k[pos] == i)
        return &e[pos];
    uint32_t top = meta.used > 0 && k[meta.used - 1] > i ? k[meta.used - 1] : i;
    uint32_t dcap = dense_cap(top + 1);
    if (dense_bytes(dcap) <= compact_bytes(compact_cap(meta.used + 1u))) {
        bf_map_entry *d = bf_calloc(a, dcap, sizeof(*d));
        if (d == NULL)
            return NULL;
        for (uint32_t j = 0; j < meta.used; j++)
            d[k[j]] = e[j];
        reserve(&d[i]);
        bf_free(a, e);
        *lf.p = d;
        *lf.m = (bf_map_meta){(uint16_t)(meta.used + 1), (uint16_t)dcap};
        return &d[i];
    }
    if (!compact_resize(lf, a, meta.used + 1u))
        return NULL;
    e = entries(*lf.p);
    meta = (bf_map_meta){(uint16_t)(meta.used + 1), lf.m->cap};
    k = keys_of(e, meta);
    memmove(&e[pos + 1], &e[pos], (size_t)(meta.used - 1 - pos) * sizeof(e[0]));
    memmove(&k[pos + 1], &k[pos], (size_t)(meta.used - 1 - pos) * sizeof(k[0]));
    reserve(&e[pos]);
    k[pos] = (uint16_t)i;
    *lf.m = meta;
    return &e[pos];
}

/* Cover n > m->n blocks: only the directory changes (leaves keep what they hold). */
static int grow(bf_blockmap *m, const bf_allocator *a, uint32_t n)
{
    if (n > BF_MAP_LEAF) {
        uint32_t dcap = bf_map_dir_cap(n);
        void **dir = m->p;
        if (m->n <= BF_MAP_LEAF) {
            dir = bf_malloc(a, (size_t)dir_bytes(dcap));
            if (dir == NULL)
                return 0;
            dir[0] = m->p;
            dir_meta(dir, dcap)[0] = m->one;
            memset(dir_present(dir, dcap), 0, words(dcap) * sizeof(uint64_t));
            dir_present(dir, dcap)[0] = m->p != NULL;
        } else if (dcap > bf_map_dir_cap(m->n)) {
            uint32_t dcap0 = bf_map_dir_cap(m->n);
            dir = bf_realloc(a, dir, (size_t)dir_bytes(dcap));
            if (dir == NULL)
                return 0;
            /* The bits go furthest: they move first, the counts after them. */
            uint64_t *w = dir_present(dir, dcap);
            memmove(w, dir_present(dir, dcap0), words(dcap0) * sizeof(uint64_t));
            memset(w + words(dcap0), 0, (words(dcap) - words(dcap0)) * sizeof(uint64_t));
            memmove(dir_meta(dir, dcap), dir_meta(dir, dcap0), nleaves(m->n) * sizeof(bf_map_meta));
        }
        m->p = dir; /* the new slots stay unread until their bits are set (leaf_at) */
        m->one = (bf_map_meta){0, 0};
    }
    m->n = n;
    return 1;
}

bf_map_entry *bf_map_slot(bf_blockmap *m, const bf_allocator *a, uint32_t blkno)
{
    uint32_t old_n = m->n;
    if (blkno >= m->n && !grow(m, a, blkno + 1))
        return NULL;
    bf_map_entry *e = leaf_slot(leaf_at(m, blkno), a, blkno & LEAF_MASK, blkno >= old_n);
    if (e == NULL)
        bf_map_shrink(m, a, old_n); /* the directory as it was: nothing past old_n holds data */
    return e;
}

void bf_map_put(bf_blockmap *m, uint32_t blkno, const bf_map_entry *v)
{
    *bf_map_get(m, blkno) = *v; /* occupied already (reserved or data): no count changes */
}

/* Free leaf `lf` when nothing in it is occupied; 1 when it is gone (or was). */
static int drop_if_empty(leaf lf, const bf_allocator *a)
{
    if (*lf.p != NULL && lf.m->used > 0)
        return 0;
    bf_free(a, entries(*lf.p));
    *lf.p = NULL;
    *lf.m = (bf_map_meta){0, 0};
    if (lf.word != NULL)
        *lf.word &= ~lf.bit;
    return 1;
}

void bf_map_clear(bf_blockmap *m, const bf_allocator *a, uint64_t blkno)
{
    if (blkno >= m->n || m->p == NULL)
        return;
    leaf lf = leaf_at(m, blkno);
    bf_map_entry *e = entries(*lf.p);
    uint32_t i = (uint32_t)(blkno & LEAF_MASK);
    if (e == NULL)
        return;
    if (is_compact(*lf.p)) {
        bf_map_meta meta = *lf.m;
        uint32_t pos = lower_bound(e, meta, i);
        uint16_t *k = keys_of(e, meta);
        if (pos == meta.used || k[pos] != i)
            return;
        memmove(&e[pos], &e[pos + 1], (size_t)(meta.used - 1 - pos) * sizeof(e[0]));
        memmove(&k[pos], &k[pos + 1], (size_t)(meta.used - 1 - pos) * sizeof(k[0]));
        lf.m->used--;
        if (!drop_if_empty(lf, a))
            compact_resize(lf, a, lf.m->used);
        return;
    }
    if (i < lf.m->cap && occupied(&e[i])) {
        memset(&e[i], 0, sizeof(e[i]));
        lf.m->used--;
    }
    if (!drop_if_empty(lf, a))
        maybe_compact(lf, a);
}

bf_map_entry *bf_map_next(const bf_blockmap *m, uint64_t *blkno)
{
    uint64_t b = *blkno;
    uint32_t L = nleaves(m->n);
    while (b < m->n && m->p != NULL) {
        void *t = m->p;
        bf_map_meta meta = m->one;
        if (m->n > BF_MAP_LEAF) {
            void *const *dir = m->p;
            uint32_t dcap = bf_map_dir_cap(m->n), li = (uint32_t)(b >> BF_MAP_LEAF_SHIFT);
            uint32_t at = next_present(dir, dcap, li, L);
            if (at == L)
                return NULL;
            if (at != li)
                b = (uint64_t)(li = at) << BF_MAP_LEAF_SHIFT;
            t = dir[li];
            meta = dir_meta((void **)dir, dcap)[li];
        }
        uint64_t base = b & ~(uint64_t)LEAF_MASK;
        bf_map_entry *e = entries(t);
        if (e != NULL && is_compact(t)) {
            const uint16_t *k = keys_of(e, meta);
            for (uint32_t pos = lower_bound(e, meta, (uint32_t)(b - base)); pos < meta.used;
                 pos++) {
                if (bf_map_used(&e[pos])) {
                    *blkno = base + k[pos];
                    return &e[pos];
                }
            }
        } else if (e != NULL) {
            for (uint32_t i = (uint32_t)(b - base); i < meta.cap; i++) {
                if (bf_map_used(&e[i])) {
                    *blkno = base + i;
                    return &e[i];
                }
            }
        }
        b = base + BF_MAP_LEAF;
    }
    return NULL;
}

/* Forget the entries of indexes >= fill of leaf `lf`; give memory back where allowed. */
static void cut_leaf(leaf lf, const bf_allocator *a, uint32_t fill)
{
    bf_map_entry *e = entries(*lf.p);
    if (e == NULL)
        return;
    if (is_compact(*lf.p)) {
        lf.m->used = (uint16_t)lower_bound(e, *lf.m, fill);
        if (!drop_if_empty(lf, a))
            compact_resize(lf, a, lf.m->used);
        return;
    }
    for (uint32_t i = fill; i < lf.m->cap; i++) {
        lf.m->used -= (uint16_t)occupied(&e[i]);
        memset(&e[i], 0, sizeof(e[i]));
    }
    if (drop_if_empty(lf, a))
        return;
    uint32_t cap = dense_cap(fill);
    if (cap < lf.m->cap) {
        bf_map_entry *g = bf_realloc(a, e, (size_t)dense_bytes(cap));
        if (g != NULL) {
            *lf.p = g;
            lf.m->cap = (uint16_t)cap;
        }
    }
    maybe_compact(lf, a);
}

void bf_map_shrink(bf_blockmap *m, const bf_allocator *a, uint32_t nblocks)
{
    if (nblocks >= m->n)
        return;
    uint32_t L = nleaves(nblocks);
    if (m->n > BF_MAP_LEAF) {
        void **dir = m->p;
        uint32_t dcap0 = bf_map_dir_cap(m->n), end = nleaves(m->n);
        uint64_t *w0 = dir_present(dir, dcap0);
        for (uint32_t i = next_present(dir, dcap0, L, end); i < end;
             i = next_present(dir, dcap0, i + 1, end)) {
            bf_free(a, entries(dir[i]));
            dir[i] = NULL;
            w0[i / 64] &= ~(UINT64_C(1) << (i % 64));
        }
        if (nblocks > BF_MAP_LEAF) {
            /* The counts move down first, then the bits; a failure to give memory back
               leaves more. */
            uint32_t dcap = bf_map_dir_cap(nblocks);
            memmove(dir_meta(dir, dcap), dir_meta(dir, dcap0), L * sizeof(bf_map_meta));
            memmove(dir_present(dir, dcap), w0, words(dcap) * sizeof(uint64_t));
            void **d = bf_realloc(a, dir, (size_t)dir_bytes(dcap));
            m->p = d != NULL ? d : dir;
            m->n = nblocks;
            cut_leaf(leaf_at(m, nblocks - 1), a, ((nblocks - 1) & LEAF_MASK) + 1);
            return;
        }
        /* Back to a single leaf. */
        int leaf0 = L > 0 && (w0[0] & 1) != 0;
        m->p = leaf0 ? dir[0] : NULL;
        m->one = leaf0 ? dir_meta(dir, dcap0)[0] : (bf_map_meta){0, 0};
        bf_free(a, dir);
    }
    if (nblocks == 0) {
        bf_free(a, entries(m->p));
        m->p = NULL;
        m->one = (bf_map_meta){0, 0};
    } else {
        m->n = nblocks;
        cut_leaf(leaf_at(m, 0), a, nblocks);
    }
    m->n = nblocks;
}

uint64_t bf_map_memory(const bf_blockmap *m)
{
    if (m->n <= BF_MAP_LEAF)
        return leaf_bytes(m->p, m->one);
    uint32_t L = nleaves(m->n), dcap = bf_map_dir_cap(m->n);
    void **dir = m->p;
    const bf_map_meta *meta = dir_meta(dir, dcap);
    uint64_t bytes = dir_bytes(dcap);
    for (uint32_t i = next_present(dir, dcap, 0, L); i < L; i = next_present(dir, dcap, i + 1, L))
        bytes += leaf_bytes(dir[i], meta[i]);
    return bytes;
}

void bf_map_free(bf_blockmap *m, const bf_allocator *a)
{
    bf_map_shrink(m, a, 0);
    memset(m, 0, sizeof(*m));
}

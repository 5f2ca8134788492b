/*
 * blockmap.c - the two-level block map: leaves dense, compact or run,
 * growth, lookup, the changes between hole and data, shrinking.
 * Implements: bf_map_find, bf_map_run_get, bf_map_read, bf_map_slot, bf_map_put,
 * bf_map_clear, bf_map_clearable, bf_map_next, bf_map_shrink,
 * bf_map_memory, bf_map_free (blockmap.h).
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
 *    it was last grown);
 *  - a run leaf's blocks i0 .. i0 + used - 1 are bare, share one length
 *    word and follow each other on disk; it holds at least one of them or
 *    its own entry (pend1 != 0), which is the block's entry wherever it
 *    falls (it shadows the run's); its capacity is at least used and costs
 *    within buffile.h's bound (run_fit).
 * Every call that can fail allocates before it changes anything visible, so
 * a failed allocation leaves the map as it was; the calls that cannot fail
 * (shrink; clear but of a block inside a run) fall back to holding more
 * memory.
 */
#include "blockmap.h"

#include <stddef.h>
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
    return ((uintptr_t)t & 3) == 1;
}

static int is_run(const void *t)
{
    return ((uintptr_t)t & 3) == 2;
}

/* The leaf's memory (any kind): its pointer without the tag. */
static bf_map_entry *entries(const void *t)
{
    return (bf_map_entry *)((uintptr_t)t & ~(uintptr_t)3);
}

static void *tag_compact(bf_map_entry *e)
{
    return (void *)((uintptr_t)e | 1);
}

static uint16_t *keys_of(const bf_map_entry *e, bf_map_meta meta)
{
    return (uint16_t *)(e + meta.cap);
}

static uint64_t run_bytes(uint32_t cap);

static uint64_t leaf_bytes(const void *t, bf_map_meta meta)
{
    if (t == NULL)
        return 0;
    return is_compact(t) ? compact_bytes(meta.cap)
           : is_run(t)   ? run_bytes(meta.cap)
                         : dense_bytes(meta.cap);
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
    if (*lf.p != NULL && !is_compact(*lf.p) && !is_run(*lf.p) &&
        worth_compact(lf.m->cap, lf.m->used))
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

/* ---- run leaves ------------------------------------------------------- */

/* Blocks a dense or compact leaf must hold, all one run, before it turns run. */
#define RUN_MIN 16u

typedef struct run_leaf {
    uint64_t base;     /* the offset word (part included) of block i0 */
    uint32_t lenw;     /* every block's length word: length | BF_MAP_RAW | BF_MAP_BARE (| KEPT) */
    uint16_t i0;       /* the leaf's index of the run's first block */
    uint16_t pend1;    /* 1 + the index of the block bf_map_slot made room for last; 0: none */
    bf_map_entry pend; /* that block's entry: reserved, or what bf_map_put stored */
    bf_map_entry view; /* the copy of a run block that bf_map_get and bf_map_next return */
    uint32_t crc[];    /* crc[k]: the check of block i0 + k, for k < the leaf's used */
} run_leaf;

static uint64_t run_bytes(uint32_t cap)
{
    return offsetof(run_leaf, crc) + (uint64_t)cap * sizeof(uint32_t);
}

/* Room for k blocks: exactly k while small (a run shrunk by clears), then eighth steps. */
static uint32_t run_cap(uint32_t k)
{
    uint32_t c = k <= 16 ? k : bf_map_round_cap(k);
    return c < BF_MAP_LEAF ? c : BF_MAP_LEAF;
}

static run_leaf *run_of(const void *t)
{
    return (run_leaf *)entries(t);
}

static void *tag_run(run_leaf *r)
{
    return (void *)((uintptr_t)r | 2);
}

static bf_map_entry run_entry(const run_leaf *r, uint32_t k)
{
    return (bf_map_entry){r->base + (uint64_t)k * (r->lenw & ~BF_MAP_FLAGS), r->lenw, r->crc[k]};
}

/* `v` is what the run would hold as its block k: one length word, the offset after k blocks. */
static int run_fits(const run_leaf *r, uint32_t k, const bf_map_entry *v)
{
    return v->len == r->lenw && v->off == r->base + (uint64_t)k * (r->lenw & ~BF_MAP_FLAGS);
}

/* Block i of the leaf is inside the run, not its last: a hole there is not a run any more. */
static int run_inner(const run_leaf *r, uint32_t used, uint32_t i)
{
    return i >= r->i0 && i - r->i0 + 1 < used;
}

bf_map_entry *bf_map_run_get(const void *t, bf_map_meta meta, uint32_t i)
{
    run_leaf *r = run_of(t);
    if (r->pend1 == i + 1)
        return &r->pend;
    if (i < r->i0 || i - r->i0 >= meta.used)
        return NULL;
    r->view = run_entry(r, i - r->i0); /* the leaf's own memory: lookups stay const on the map */
    return &r->view;
}

int bf_map_read(const bf_blockmap *m, uint64_t blkno, bf_map_entry *out)
{
    bf_map_meta meta;
    uintptr_t t = bf_map_leaf(m, blkno, &meta);
    uint32_t i = (uint32_t)(blkno & LEAF_MASK);
    const bf_map_entry *e = NULL;
    if (t != 0 && is_run((const void *)t)) {
        const run_leaf *r = run_of((const void *)t);
        if (r->pend1 == i + 1)
            e = &r->pend;
        else if (i >= r->i0 && i - r->i0 < meta.used) {
            *out = run_entry(r, i - r->i0);
            return 1;
        }
    } else if (t != 0) {
        e = bf_map_in_leaf(t, meta, i); /* dense or compact: no copy to leave alone */
    }
    if (!bf_map_used(e)) {
        memset(out, 0, sizeof(*out));
        return 0;
    }
    *out = *e;
    return 1;
}

/*
 * Leaf `lf` (dense or compact), about to grow for index `i`, made a run when all it holds
 * is one of RUN_MIN blocks or more and `i` is the block after it; 1 if it was.
 */
static int to_run(leaf lf, const bf_allocator *a, uint32_t i)
{
    bf_map_meta lm = *lf.m;
    if (lm.used < RUN_MIN || i < lm.used)
        return 0;
    uint32_t i0 = i - lm.used; /* the run would start here: its blocks are all the leaf holds */
    const bf_map_entry *e = entries(*lf.p); /* the run's first block's entry, then the others */
    if (is_compact(*lf.p)) {
        const uint16_t *key = keys_of(e, lm);
        if (key[0] != i0 || key[lm.used - 1] != i - 1) /* ascending: so no gaps */
            return 0;
    } else {
        if (i > lm.cap)
            return 0;
        e += i0;
    }
    uint32_t len = e->len & ~BF_MAP_FLAGS;
    if ((e->len & BF_MAP_BARE) == 0 || len == 0)
        return 0;
    for (uint32_t k = 1; k < lm.used; k++)
        if (e[k].len != e->len || e[k].off != e->off + (uint64_t)k * len)
            return 0;
    uint32_t cap = run_cap(lm.used + 1u); /* and the next block's */
    run_leaf *r = bf_malloc(a, (size_t)run_bytes(cap));
    if (r == NULL)
        return 0; /* it stays as it was */
    r->base = e->off;
    r->lenw = e->len;
    r->i0 = (uint16_t)i0;
    r->pend1 = 0;
    for (uint32_t k = 0; k < lm.used; k++)
        r->crc[k] = e[k].cap;
    bf_free(a, entries(*lf.p));
    *lf.p = tag_run(r);
    lf.m->cap = (uint16_t)cap;
    return 1;
}

/*
 * Run leaf `lf` made dense or compact (whichever the rules above choose for what it
 * holds), its own entry in its place; 0 when the allocation failed (the leaf as it was).
 */
static int run_to_general(leaf lf, const bf_allocator *a)
{
    run_leaf *r = run_of(*lf.p);
    uint32_t n = lf.m->used, i0 = r->i0;
    uint32_t p = r->pend1 != 0 ? r->pend1 - 1u : BF_MAP_LEAF;
    int extra = p < BF_MAP_LEAF && (p < i0 || p - i0 >= n); /* its own entry is not a run block */
    uint32_t used = n + (uint32_t)extra;
    uint32_t top = n > 0 ? i0 + n - 1 : p;
    if (extra && p > top)
        top = p;
    uint32_t dcap = dense_cap(top + 1);
    if (!worth_compact(dcap, used)) {
        bf_map_entry *d = bf_calloc(a, dcap, sizeof(*d));
        if (d == NULL)
            return 0;
        for (uint32_t k = 0; k < n; k++)
            d[i0 + k] = run_entry(r, k);
        if (p < BF_MAP_LEAF)
            d[p] = r->pend;
        bf_free(a, r);
        *lf.p = d;
        *lf.m = (bf_map_meta){(uint16_t)used, (uint16_t)dcap};
        return 1;
    }
    bf_map_meta cm = {(uint16_t)used, (uint16_t)compact_cap(used)};
    bf_map_entry *c = bf_malloc(a, (size_t)compact_bytes(cm.cap));
    if (c == NULL)
        return 0;
    uint16_t *key = keys_of(c, cm);
    uint32_t j = 0, k = 0;
    while (k < n || extra) {
        if (extra && (k == n || p < i0 + k)) {
            c[j] = r->pend;
            key[j++] = (uint16_t)p;
            extra = 0;
        } else {
            c[j] = i0 + k == p ? r->pend : run_entry(r, k);
            key[j++] = (uint16_t)(i0 + k);
            k++;
        }
    }
    bf_free(a, r);
    *lf.p = tag_compact(c);
    *lf.m = cm;
    return 1;
}

/*
 * The leaf's own entry taken into its run where it fits (a block of the run rewritten in
 * place, or the block after it): 1 when done or there was none, 0 when it does not fit
 * (or is still reserved), -1 when the run could not grow (allocation failed; as it was).
 */
static int run_settle(leaf lf, const bf_allocator *a)
{
    run_leaf *r = run_of(*lf.p);
    if (r->pend1 == 0)
        return 1;
    uint32_t n = lf.m->used, p = r->pend1 - 1u;
    if (!bf_map_used(&r->pend) || p < r->i0 || p - r->i0 > n || !run_fits(r, p - r->i0, &r->pend))
        return 0;
    uint32_t k = p - r->i0;
    if (k == n) {
        if (n == lf.m->cap) {
            uint32_t cap = run_cap(n + 1u);
            run_leaf *g = bf_realloc(a, r, (size_t)run_bytes(cap));
            if (g == NULL)
                return -1;
            r = g;
            *lf.p = tag_run(g);
            lf.m->cap = (uint16_t)cap;
        }
        lf.m->used = (uint16_t)(n + 1);
    }
    r->crc[k] = r->pend.cap;
    r->pend1 = 0;
    return 1;
}

static int drop_if_empty(leaf lf, const bf_allocator *a);

/*
 * After a run leaf lost blocks: it goes when it holds nothing, turns dense or compact
 * when a run costs more than buffile.h's 31 bytes a block would allow (2 blocks or
 * fewer), gives back room past twice what it needs; where allocation fails it holds more.
 */
static void run_fit(leaf lf, const bf_allocator *a)
{
    run_leaf *r = run_of(*lf.p);
    uint32_t n = lf.m->used;
    if (n == 0 && r->pend1 == 0) {
        drop_if_empty(lf, a);
        return;
    }
    if (n <= 2) {
        if (run_to_general(lf, a))
            maybe_compact(lf, a);
        return;
    }
    uint32_t cap = run_cap(n);
    if (lf.m->cap > 2 * cap) {
        run_leaf *g = bf_realloc(a, r, (size_t)run_bytes(cap));
        if (g != NULL) {
            *lf.p = tag_run(g);
            lf.m->cap = (uint16_t)cap;
        }
    }
}

/*
 * bf_map_slot in a run leaf: the block's entry is the leaf's own (a copy of its run entry,
 * or reserved for the block after the run) once the last one is settled; any other block,
 * or an own entry that is not the run's, makes the leaf dense or compact first.
 */
static bf_map_entry *run_slot(leaf lf, const bf_allocator *a, uint32_t i, int past)
{
    run_leaf *r = run_of(*lf.p);
    if (r->pend1 == i + 1)
        return &r->pend;
    int settled = run_settle(lf, a);
    if (settled < 0)
        return NULL;
    r = run_of(*lf.p);
    uint32_t n = lf.m->used;
    if (settled == 0 || i < r->i0 || i - r->i0 > n) {
        if (!run_to_general(lf, a))
            return NULL;
        return leaf_slot(lf, a, i, past);
    }
    if (i - r->i0 < n)
        r->pend = run_entry(r, i - r->i0);
    else
        reserve(&r->pend);
    r->pend1 = (uint16_t)(i + 1);
    return &r->pend;
}

/*
 * bf_map_clear in a run leaf: 1 done, 0 allocation failed (as it was), 2 the leaf was made
 * dense or compact for a hole inside the run: the caller clears it there.
 */
static int run_clear(leaf lf, const bf_allocator *a, uint32_t i)
{
    run_leaf *r = run_of(*lf.p);
    uint32_t n = lf.m->used;
    int in_run = i >= r->i0 && i - r->i0 < n;
    if (!in_run) {
        if (r->pend1 == i + 1) {
            r->pend1 = 0;
            run_fit(lf, a);
        }
        return 1;
    }
    if (run_inner(r, n, i))
        return run_to_general(lf, a) ? 2 : 0;
    if (r->pend1 == i + 1)
        r->pend1 = 0;
    lf.m->used = (uint16_t)(n - 1);
    run_fit(lf, a);
    return 1;
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
    leaf lf = leaf_at(m, blkno);
    uint32_t i = blkno & LEAF_MASK;
    int past = blkno >= old_n;
    /* A leaf that must grow for the block after a run it is made of turns run. */
    if (*lf.p != NULL && !is_run(*lf.p) &&
        (is_compact(*lf.p) ? lf.m->used == lf.m->cap : i >= lf.m->cap))
        to_run(lf, a, i);
    bf_map_entry *e = is_run(*lf.p) ? run_slot(lf, a, i, past) : leaf_slot(lf, a, i, past);
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

int bf_map_clear(bf_blockmap *m, const bf_allocator *a, uint64_t blkno)
{
    if (blkno >= m->n || m->p == NULL)
        return 1;
    leaf lf = leaf_at(m, blkno);
    uint32_t i = (uint32_t)(blkno & LEAF_MASK);
    if (*lf.p == NULL)
        return 1;
    if (is_run(*lf.p)) {
        int rc = run_clear(lf, a, i);
        if (rc != 2)
            return rc;
    }
    bf_map_entry *e = entries(*lf.p);
    if (is_compact(*lf.p)) {
        bf_map_meta meta = *lf.m;
        uint32_t pos = lower_bound(e, meta, i);
        uint16_t *k = keys_of(e, meta);
        if (pos == meta.used || k[pos] != i)
            return 1;
        memmove(&e[pos], &e[pos + 1], (size_t)(meta.used - 1 - pos) * sizeof(e[0]));
        memmove(&k[pos], &k[pos + 1], (size_t)(meta.used - 1 - pos) * sizeof(k[0]));
        lf.m->used--;
        if (!drop_if_empty(lf, a))
            compact_resize(lf, a, lf.m->used);
        return 1;
    }
    if (i < lf.m->cap && occupied(&e[i])) {
        memset(&e[i], 0, sizeof(e[i]));
        lf.m->used--;
    }
    if (!drop_if_empty(lf, a))
        maybe_compact(lf, a);
    return 1;
}

int bf_map_clearable(bf_blockmap *m, const bf_allocator *a, uint64_t blkno)
{
    if (blkno >= m->n || m->p == NULL)
        return 1;
    leaf lf = leaf_at(m, blkno);
    uint32_t i = (uint32_t)(blkno & LEAF_MASK);
    if (*lf.p == NULL || !is_run(*lf.p))
        return 1;
    return run_inner(run_of(*lf.p), lf.m->used, i) ? run_to_general(lf, a) : 1;
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
        if (e != NULL && is_run(t)) {
            run_leaf *r = run_of(t);
            uint32_t s = (uint32_t)(b - base);
            uint32_t p = r->pend1 != 0 ? r->pend1 - 1u : BF_MAP_LEAF;
            for (;;) {
                uint32_t x = s > r->i0 ? s : r->i0; /* the run's first block at or after s */
                int in_run = x - r->i0 < meta.used, own = p < BF_MAP_LEAF && p >= s;
                if (!in_run && !own)
                    break;
                if (own && (!in_run || p <= x)) { /* the own entry shadows a run block */
                    if (bf_map_used(&r->pend)) {
                        *blkno = base + p;
                        return &r->pend;
                    }
                    s = p + 1;
                    continue;
                }
                *blkno = base + x;
                r->view = run_entry(r, x - r->i0);
                return &r->view;
            }
        } else if (e != NULL && is_compact(t)) {
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
    if (is_run(*lf.p)) {
        run_leaf *r = run_of(*lf.p);
        if (r->pend1 > fill) /* its own entry's block, pend1 - 1, is cut */
            r->pend1 = 0;
        uint32_t n = lf.m->used;
        lf.m->used = (uint16_t)(fill <= r->i0 ? 0 : fill - r->i0 < n ? fill - r->i0 : n);
        run_fit(lf, a);
        return;
    }
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

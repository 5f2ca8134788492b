/*
 * budget.c - a temp budget shared by spaces: one limit on the physical
 * bytes of several spaces, each typically in its own thread (as DuckDB's
 * max_temp_directory_size or PostgreSQL's temp_file_limit bound a whole
 * instance or process).
 * Implements: bf_budget_create, bf_budget_destroy, bf_budget_set_limit,
 * bf_budget_limit, bf_budget_used, bf_budget_peak, bf_budget_name,
 * bf_space_set_budget, bf_space_budget (buffile.h); budget.h.
 *
 * Why a reservation and not a check: a space checks its own limit before
 * a write and counts the bytes after it, which is exact for one thread.
 * Spaces in several threads checking one sum that way could all pass the
 * check and together pass the limit. So a write reserves its growth in the
 * budget first (compare-and-swap on `used`), and the space's physical
 * bytes, once they move, settle what it holds (bf_budget_sync): the sum is
 * never above the limit, whatever the threads do.
 *
 * Invariants: `used` is the sum of budget_held over the spaces that use
 * the budget, `spaces` their number; both are C11 atomics, the only state
 * threads share. A space's budget_held is its own thread's.
 */
#include "budget.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "error.h"

#define NAME_MAX_LEN 63

struct bf_budget {
    _Atomic uint64_t used;
    _Atomic uint64_t peak;
    _Atomic uint64_t limit; /* 0: none */
    _Atomic uint32_t spaces;
    bf_allocator alloc;
    char name[NAME_MAX_LEN + 1];
};

int bf_budget_create(const char *name, uint64_t limit, const bf_allocator *alloc, bf_budget **out)
{
    if (out == NULL)
        return BF_EINVAL;
    *out = NULL;
    if (name == NULL || name[0] == '\0' || strlen(name) > NAME_MAX_LEN)
        return BF_EINVAL;
    const bf_allocator *a = alloc != NULL ? alloc : &bf_default_allocator;
    if (a->malloc_fn == NULL || a->realloc_fn == NULL || a->free_fn == NULL)
        return BF_EINVAL;
    bf_budget *b = bf_malloc(a, sizeof(*b));
    if (b == NULL)
        return BF_ENOMEM;
    atomic_init(&b->used, 0);
    atomic_init(&b->peak, 0);
    atomic_init(&b->limit, limit);
    atomic_init(&b->spaces, 0);
    b->alloc = *a;
    snprintf(b->name, sizeof(b->name), "%s", name);
    *out = b;
    return BF_OK;
}

int bf_budget_destroy(bf_budget *b)
{
    if (b == NULL)
        return BF_OK;
    if (atomic_load(&b->spaces) != 0)
        return BF_EBUSY;
    bf_allocator a = b->alloc;
    bf_free(&a, b);
    return BF_OK;
}

void bf_budget_set_limit(bf_budget *b, uint64_t limit)
{
    atomic_store(&b->limit, limit);
}

uint64_t bf_budget_limit(const bf_budget *b)
{
    return atomic_load(&((bf_budget *)b)->limit);
}

uint64_t bf_budget_used(const bf_budget *b)
{
    return atomic_load(&((bf_budget *)b)->used);
}

uint64_t bf_budget_peak(const bf_budget *b)
{
    return atomic_load(&((bf_budget *)b)->peak);
}

const char *bf_budget_name(const bf_budget *b)
{
    return b->name;
}

/* Raise the peak to `v` unless it is higher already. */
static void peak_to(bf_budget *b, uint64_t v)
{
    uint64_t p = atomic_load(&b->peak);
    while (v > p && !atomic_compare_exchange_weak(&b->peak, &p, v))
        ;
}

/* Add `n` bytes to the budget if they fit under its limit (always, with `force`): 1 if added. */
static int take(bf_budget *b, uint64_t n, int force, uint64_t *seen)
{
    uint64_t used = atomic_load(&b->used);
    for (;;) {
        uint64_t limit = atomic_load(&b->limit);
        *seen = used;
        if (!force && limit != 0 && (used + n < used || used + n > limit))
            return 0;
        if (atomic_compare_exchange_weak(&b->used, &used, used + n)) {
            peak_to(b, used + n);
            return 1;
        }
    }
}

int bf_budget_reserve(bf_space *sp, uint64_t more, const char *op, const char *path)
{
    bf_budget *b = sp->budget;
    if (b == NULL)
        return BF_OK;
    bf_budget_sync(sp); /* what an earlier failed write reserved goes back first */
    uint64_t need = sp->physical_now + more;
    if (need <= sp->budget_held)
        return BF_OK;
    uint64_t add = need - sp->budget_held, seen;
    if (!take(b, add, 0, &seen))
        return bf_fail(sp, BF_ELIMIT, op, path, 0,
                       "temp budget \"%s\" of %llu bytes reached (%llu in use by its %u spaces, "
                       "%llu of them this space's; %llu more needed)",
                       b->name, (unsigned long long)atomic_load(&b->limit),
                       (unsigned long long)seen, (unsigned)atomic_load(&b->spaces),
                       (unsigned long long)sp->budget_held, (unsigned long long)more);
    sp->budget_held += add;
    return BF_OK;
}

void bf_budget_sync(bf_space *sp)
{
    bf_budget *b = sp->budget;
    if (b == NULL || sp->budget_held == sp->physical_now)
        return;
    uint64_t seen;
    if (sp->budget_held > sp->physical_now)
        atomic_fetch_sub(&b->used, sp->budget_held - sp->physical_now);
    else
        take(b, sp->physical_now - sp->budget_held, 1, &seen);
    sp->budget_held = sp->physical_now;
}

int bf_space_set_budget(bf_space *sp, bf_budget *b)
{
    if (b == sp->budget)
        return BF_OK;
    uint64_t seen = 0;
    if (b != NULL && sp->physical_now > 0 && !take(b, sp->physical_now, 0, &seen))
        return bf_fail(sp, BF_ELIMIT, "set budget", NULL, 0,
                       "temp budget \"%s\" of %llu bytes has no room for the %llu bytes this "
                       "space holds (%llu in use)",
                       b->name, (unsigned long long)atomic_load(&b->limit),
                       (unsigned long long)sp->physical_now, (unsigned long long)seen);
    if (b != NULL)
        atomic_fetch_add(&b->spaces, 1);
    if (sp->budget != NULL) {
        atomic_fetch_sub(&sp->budget->used, sp->budget_held);
        atomic_fetch_sub(&sp->budget->spaces, 1);
    }
    sp->budget = b;
    sp->budget_held = b != NULL ? sp->physical_now : 0;
    return BF_OK;
}

bf_budget *bf_space_budget(const bf_space *sp)
{
    return sp->budget;
}

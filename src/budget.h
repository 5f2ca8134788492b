/*
 * budget.h - a temp budget several spaces share (bf_budget, buffile.h),
 * and how a space charges its physical bytes to it.
 *
 * Invariants (each space with a budget): the space holds `budget_held`
 * bytes of its budget, at least its physical_now once a call has
 * returned, more only while a write it reserved for is under way; the
 * budget's `used` is the sum over its spaces of budget_held, never above
 * its limit through a reservation (a read-write open of a named file
 * charges that file's bytes as the space's own limit does: unchecked).
 */
#ifndef BF_BUDGET_H
#define BF_BUDGET_H

#include <stdint.h>

#include "space.h"

/*
 * Make room for `more` physical bytes on top of what the space holds: with
 * a budget, reserve them there (the space then holds physical_now + more).
 * BF_ELIMIT, recorded in the space's message for `op` on `path` (may be
 * NULL) and naming the budget, when the budget has not that room: nothing
 * is reserved then. BF_OK without a budget. The space's own temp limit is
 * its caller's to check (as before budgets).
 */
int bf_budget_reserve(struct bf_space *space, uint64_t more, const char *op, const char *path);

/*
 * Bring what the space holds of its budget to its physical_now: gives back
 * what a reservation did not use (a write that failed) or the bytes its
 * files gave up, charges bytes that grew without a reservation. A no-op
 * without a budget.
 */
void bf_budget_sync(struct bf_space *space);

#endif
